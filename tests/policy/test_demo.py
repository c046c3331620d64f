"""The demo's policy lab: two open proposals for the same week, the first with figures, comments and votes."""

from __future__ import annotations

import pytest
from django.utils import timezone

from committee.demo import seed_demo
from policy import selectors
from policy.models import Proposal


@pytest.mark.django_db
def test_demo_seeds_the_burst_reserve_proposal_and_a_second_one() -> None:
    seed_demo(now=timezone.now())
    burst = Proposal.objects.get(title="A100 burst reserve 20% → 15%")
    assert [(c.key, c.old_value, c.new_value) for c in burst.changes.all()] == [
        ("pool.a100.burst_reserve_pct", "20", "15")]
    assert burst.figures.count() == 3 and burst.comments.count() == 2
    assert sorted(burst.votes.values_list("choice", flat=True)) == ["against", "support"]
    assert len({v.voter_id for v in burst.votes.all()}) == 2
    board = selectors.proposal_board(now=timezone.now())
    assert len(board.open) == 2 and board.adopted == []
