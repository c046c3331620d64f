"""The quorum a decision needs is the governance version's in force for the cycle's week, not the latest one."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from committee import selectors
from committee.models import GpuRequest
from committee.services import governance_version_create
from governed.models import PolicyChange
from tests.committee.reviewing import close, decide, score
from tests.conftest import World
from tests.factories import file_request


def _scored_twice(world: World) -> GpuRequest:
    gpu_request = file_request(world, title="Ranker retrain")
    close(world)
    score(world.reviewer, gpu_request, 8, 7, 6)
    score(world.finance, gpu_request, 8, 7, 6)
    return gpu_request


def test_a_quorum_from_a_later_week_leaves_this_week_alone(world: World) -> None:
    gpu_request = _scored_twice(world)
    governance_version_create(actor=world.chair, effective_week="2026-W51", parameters={"score_quorum": 3},
                              reason="Three scores")
    assert world.cycle.week == "2026-W50"
    assert selectors.governance_for_week(week="2026-W50").score_quorum == 2
    assert selectors.governance_for_week(week="2026-W51").score_quorum == 3
    assert decide(world, gpu_request).outcome == "grant"


def test_a_quorum_from_this_week_applies_to_it(world: World) -> None:
    gpu_request = _scored_twice(world)
    governance_version_create(actor=world.chair, effective_week=world.cycle.week, parameters={"score_quorum": 3},
                              reason="Three scores")
    with pytest.raises(ValidationError, match="need 3 member scores each"):
        decide(world, gpu_request)
    rows = selectors.cycle_ranking(cycle=world.cycle)
    assert rows[0].result.rank is None  # below the week's quorum: not ranked


def test_refused_version_writes_nothing(world: World) -> None:
    before = PolicyChange.objects.count()
    with pytest.raises(ValidationError) as caught:
        governance_version_create(actor=world.chair, effective_week="2026-W60",
                                  parameters={"score_quorum": 0, "fairshare_half_life_weeks": -1}, reason="")
    assert set(caught.value.message_dict) == {"score_quorum", "fairshare_half_life_weeks", "effective_week", "reason"}
    assert PolicyChange.objects.count() == before
