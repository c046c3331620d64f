"""docs/maintaining.md, "Add a policy parameter": one declaration in governed.params, and the store, the selector,
the policy lab and its adoption take it up."""

from __future__ import annotations

import pytest

from governed import params
from governed.selectors import policy_value
from policy import parameters, services
from policy.models import ProposalStatus
from tests.conftest import World
from tests.policy.test_services import FIXED_NOW


@pytest.fixture
def grant_weeks(monkeypatch: pytest.MonkeyPatch) -> str:
    declared = params.Param("grants.max_weeks", "Grants", "Longest grant", "weeks", minimum=1, maximum=12,
                            default=lambda: 4)
    monkeypatch.setattr(params, "PARAMS", (*params.PARAMS, declared))
    return declared.key


def test_a_declared_parameter_is_read_proposed_adopted_and_in_force_from_its_week(world: World,
                                                                                  grant_weeks: str) -> None:
    assert policy_value(key=grant_weeks, week="2026-W50") == 4  # version 1: the declared default
    assert grant_weeks in {p.key for p in parameters.parameter_list()}
    proposal = services.proposal_submit(actor=world.member_a, title="Longer grants", reason="Multi-week training",
                                        expected_effect="Fewer refilings", changes={grant_weeks: "6"})
    assert proposal.changes.get().old_value == "4"
    _parsed, problems = parameters.changes_errors({grant_weeks: "13"})
    assert problems == ["Longest grant must be 1 to 12 weeks; got 13."]
    adopted = services.proposal_adopt(actor=world.chair, proposal=proposal, effective_week="2026-W51",
                                      reason="Agreed", now=FIXED_NOW)
    assert adopted.status == ProposalStatus.ADOPTED
    assert policy_value(key=grant_weeks, week="2026-W50") == 4
    assert policy_value(key=grant_weeks, week="2026-W51") == 6
