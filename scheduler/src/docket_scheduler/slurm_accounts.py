"""The Slurm account tree as Docket's departments say: one parent account per department under root, each team's
account under its department's (or under root when the team has none), and every account's fairshare the weight
Docket gives it. Slurm's classic hierarchical fair share (PriorityFlags=NO_FAIR_TREE) over that tree is then the
factor Docket computes (committee.scoring.fair_shares, docs/rubric.md).

What it reads: each team's account, weight, department and department weight from `GET /api/v1/clusters/<slug>/`
(`client.fetch_cluster`), and the cluster's account associations from `sacctmgr show assoc`. What it writes, with
`sacctmgr -i`: `add account dept-<slug> parent=root fairshare=W` for a department account not there yet, `modify
account ... set parent=P` for an account under the wrong parent, `... set fairshare=W` for a wrong weight. Nothing
when the tree already matches, so a second run writes nothing. It never deletes an account nor creates a team's
account (that one needs its users, which the operator adds): a team account missing from the cluster is a problem.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from docket_scheduler.slurm_commands import SLURM_NAME, SlurmError, SlurmTools, tool_message

DEPARTMENT_PREFIX = "dept-"
ROOT = "root"


@dataclass(frozen=True)
class TeamPlace:
    """Where Docket puts one team's account: its weight, and its department's slug and weight (None: top level)."""

    team: str
    account: str
    weight: int
    department: str | None = None
    department_weight: int | None = None


@dataclass(frozen=True)
class Association:
    """An account association as sacctmgr shows it: its parent account and its raw shares (None: "parent")."""

    account: str
    parent: str
    shares: int | None


def department_account(slug: str) -> str:
    return f"{DEPARTMENT_PREFIX}{slug}"


def team_places(cluster: Mapping[str, Any]) -> list[TeamPlace]:
    """The `accounts` of the cluster reference (`GET /api/v1/clusters/<slug>/`) as places; an entry that names no
    Slurm account Docket can pass to sacctmgr is refused (SlurmError), nothing is changed."""
    places = []
    for entry in cluster.get("accounts", []):
        account = str(entry.get("account") or "").lower()
        department = entry.get("department")
        names = [account] + ([department_account(str(department))] if department else [])
        bad = [name for name in names if not SLURM_NAME.match(name)]
        if bad:
            raise SlurmError(f"{bad[0]!r} is not a Slurm account name; the account tree was not changed")
        places.append(TeamPlace(
            team=str(entry.get("team", "")), account=account, weight=int(entry.get("fair_share_weight") or 1),
            department=str(department) if department else None,
            department_weight=int(entry["department_weight"]) if department else None,
        ))
    return places


def desired_tree(places: Iterable[TeamPlace]) -> dict[str, tuple[str, int]]:
    """Account -> (parent, fairshare): the department accounts first (under root), then the team accounts."""
    departments: dict[str, tuple[str, int]] = {}
    teams: dict[str, tuple[str, int]] = {}
    for place in places:
        if place.department is not None and place.department_weight is not None:
            departments[department_account(place.department)] = (ROOT, place.department_weight)
            teams[place.account] = (department_account(place.department), place.weight)
        else:
            teams[place.account] = (ROOT, place.weight)
    return {**dict(sorted(departments.items())), **dict(sorted(teams.items()))}


def parse_tree(text: str) -> dict[str, Association]:
    """`sacctmgr -n -P show assoc where cluster=C format=account,parentname,user,share`: the account associations
    (rows without a user). Root's parent is ""; a share of "parent" is None."""
    out: dict[str, Association] = {}
    for line in text.splitlines():
        parts = line.split("|")
        if len(parts) < 4 or parts[2].strip():
            continue
        account, parent, _user, shares = (part.strip() for part in parts[:4])
        out[account.lower()] = Association(
            account=account.lower(), parent=parent.lower(), shares=int(shares) if shares.isdigit() else None
        )
    return out


@dataclass(frozen=True)
class TreeCommand:
    argv: tuple[str, ...]

    def line(self) -> str:
        return "sacctmgr -i " + " ".join(self.argv)


def reconcile_tree(
    desired: Mapping[str, tuple[str, int]], current: Mapping[str, Association], *, cluster: str
) -> tuple[list[TreeCommand], list[str]]:
    """The sacctmgr commands that make `current` hold `desired`, in order (a department account exists before a
    team moves under it), and the problems no command can fix (a team account the cluster lacks)."""
    commands: list[TreeCommand] = []
    problems: list[str] = []
    for account, (parent, shares) in desired.items():
        have = current.get(account)
        if have is None:
            if account.startswith(DEPARTMENT_PREFIX) and parent == ROOT:
                commands.append(TreeCommand((
                    "add", "account", account, f"cluster={cluster}", f"parent={parent}", f"fairshare={shares}",
                    f"description=Docket department {account.removeprefix(DEPARTMENT_PREFIX)}", "organization=docket",
                )))
            else:
                problems.append(f"account {account} is not on cluster {cluster}: create it (with its users) "
                                f"under {parent}")
            continue
        where = ("modify", "account", "where", f"name={account}", f"cluster={cluster}", "set")
        if have.parent != parent:
            commands.append(TreeCommand((*where, f"parent={parent}")))
        if have.shares != shares:
            commands.append(TreeCommand((*where, f"fairshare={shares}")))
    return commands, problems


@dataclass
class AccountTreeExecutor:
    """Runs reconcile_tree() with sacctmgr. `problems` lists what the last pass could not do."""

    tools: SlurmTools = field(default_factory=SlurmTools)
    out: TextIO = field(default_factory=lambda: sys.stdout)
    problems: list[str] = field(default_factory=list)

    def read_tree(self, cluster: str) -> dict[str, Association]:
        shown = self.tools.run_sacctmgr(
            ["-n", "-P", "show", "assoc", "where", f"cluster={cluster}", "format=account,parentname,user,share"]
        )
        if shown.returncode != 0:
            raise SlurmError(f"sacctmgr show assoc failed: {tool_message(shown)}")
        return parse_tree(shown.stdout)

    def sync(self, places: Sequence[TeamPlace], *, cluster: str, dry_run: bool) -> list[TreeCommand]:
        """Make the cluster's account tree hold `places`; the commands run (or, dry, that would run)."""
        self.problems = []
        commands, self.problems = reconcile_tree(desired_tree(places), self.read_tree(cluster), cluster=cluster)
        for command in commands:
            if dry_run:
                print(f"  would run {command.line()}", file=self.out)
                continue
            print(command.line(), file=self.out)
            result = self.tools.run_sacctmgr(["-i", *command.argv])
            if result.returncode != 0:
                self.problems.append(f"{command.line()}: {tool_message(result)}")
        for problem in self.problems:
            print(f"  account tree: {problem}", file=self.out)
        return commands
