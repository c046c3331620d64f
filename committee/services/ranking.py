"""The week's ranking changed: move its version, so the ranking kept in the cache is computed again.

The ranking's pages (the API's ranking and what-if, the what-if page) read the week's ranking from the cache, kept by
`ReviewCycle.ranking_version` (committee/selectors/ranking.py). Every service that changes what ranks a week or
what a ranked row shows of its decision calls `cycle_ranking_changed` in its own transaction, with the cycle's row
locked: a score (`score_record`), a declared or withdrawn conflict of interest (its scores stop or start counting),
a decision, its correction and an appeal's amendment. A rubric or quorum change needs nothing here: the cache's key
holds the weights and the quorum in force for the week.
"""

from __future__ import annotations

from django.db.models import F

from committee.models import ReviewCycle


def cycle_ranking_changed(*, cycle: ReviewCycle) -> None:
    """Move the cycle's ranking version by one, in the caller's transaction (which holds the cycle's row)."""
    ReviewCycle.objects.filter(pk=cycle.pk).update(ranking_version=F("ranking_version") + 1)
