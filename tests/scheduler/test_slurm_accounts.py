"""The Slurm sync's account tree (docket_scheduler.slurm_accounts) before sacctmgr runs: what Docket's cluster
reference becomes, and input sacctmgr would misread refused whole. The tree on a real cluster, and sshare's factor
over it: tests/allocations/test_slurm_usage_e2e.py and test_slurm_tiers.py (the Slurm accounting lab)."""

from __future__ import annotations

import pytest

from docket_scheduler.slurm_accounts import Association, desired_tree, reconcile_tree, team_places
from docket_scheduler.slurm_commands import SlurmError

REFERENCE = {"cluster": "atlas", "pools": [], "accounts": [
    {"team": "vision", "account": "Vision-Acct", "fair_share_weight": 2, "department": "research",
     "department_weight": 3},
    {"team": "ops", "account": "ops", "fair_share_weight": 1, "department": None, "department_weight": None},
]}


def test_departments_come_first_under_root_and_teams_under_their_department() -> None:
    tree = desired_tree(team_places(REFERENCE))
    assert list(tree.items()) == [("dept-research", ("root", 3)), ("ops", ("root", 1)),
                                  ("vision-acct", ("dept-research", 2))]


def test_a_missing_team_account_is_a_problem_and_nothing_is_created_for_it() -> None:
    current = {"root": Association("root", "", 1), "ops": Association("ops", "root", 1)}
    commands, problems = reconcile_tree(desired_tree(team_places(REFERENCE)), current, cluster="lab")
    assert [c.line() for c in commands] == [
        "sacctmgr -i add account dept-research cluster=lab parent=root fairshare=3 "
        "description=Docket department research organization=docket",
    ]
    assert problems == ["account vision-acct is not on cluster lab: create it (with its users) under dept-research"]


@pytest.mark.parametrize("entry", [
    {"team": "x", "account": "x acct;rm", "fair_share_weight": 1, "department": None, "department_weight": None},
    {"team": "x", "account": "x", "fair_share_weight": 1, "department": "r d", "department_weight": 1},
])
def test_a_name_sacctmgr_would_misread_refuses_the_whole_tree(entry: dict[str, object]) -> None:
    with pytest.raises(SlurmError, match="is not a Slurm account name; the account tree was not changed"):
        team_places({"accounts": [*REFERENCE["accounts"], entry]})
