"""The week's ranking, computed once per change and read by its pages from the cache.

Ranking a week reads every request's score tallies and sorts them all (`cycle_ranking`); a page of 100 rows of the
ranking or the what-if read that way costs the whole week, so reading all ten pages of a 1,000-request week cost
ten rankings. Here the ranking is plain data (`WeekRanking`: each request's result in rank order, the fair shares,
the score sheets it was ranked from), computed once and kept in the cache (`CACHES`: Redis in production, shared by
every worker) under a key that holds everything it was computed from:

- the cycle and its `ranking_version`, which every change of a score, a recusal or a decision moves in its own
  transaction (committee/services/ranking.py); the cycle's row is read before the scores, so an entry never holds
  less than its version says;
- its status and when intake closed (the fair shares are frozen then; an open week is never kept: its requests and
  fair shares still change);
- the rubric's weights and the quorum in force for its week (a rubric or quorum change needs no invalidation), or
  the what-if's weights.

A page then reads only its own rows (`RankingRows`: the requests with their team, pool and decision, one query a
page). When the cache does not answer, the ranking is computed as before and the cache is skipped for a while
(core.breaker.CACHE).

Each process also keeps the last few rankings it read, by the same key (`_KEPT`): reading a 1,000-request ranking
out of the cache (unpickling 10,000 objects, and the collector's passes they set off) cost 0.15–0.3 s a page, more
than ranking it. A key names one ranking for ever, so what a process keeps is exact as long as the key is.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import overload

from django.core.cache import cache
from redis.exceptions import RedisError

from committee import scoring
from committee.models import CycleStatus, GpuRequest, ReviewCycle
from committee.selectors.cycles import rubric_for_week
from committee.selectors.governance import governance_for_week
from committee.selectors.review import ReviewRow, cycle_ranking, score_sheet
from core import breaker

logger = logging.getLogger(__name__)

# An entry outlives its week's review by little: a new version makes a new key, the old one expires.
RANKING_CACHE_SECONDS = 6 * 3600
# The rankings a process keeps itself, the last read first out: the current one and a few what-ifs.
KEPT_IN_PROCESS = 8
_KEPT: OrderedDict[str, WeekRanking] = OrderedDict()
_KEPT_LOCK = threading.Lock()


@dataclass(frozen=True)
class WeekRanking:
    """A week's ranking as plain data: each request's result in rank order (ranked, then below quorum), the teams'
    fair shares it was ranked with, and the score sheets, to rank again under other weights (the what-if)."""

    results: tuple[scoring.RequestResult, ...]
    shares: Mapping[int, scoring.FairShare]
    sheets: tuple[scoring.ScoreSheet, ...]

    def moves(self, *, before: WeekRanking) -> dict[int, int]:
        """Places each ranked request moved from `before` to this ranking (positive = up)."""
        return scoring.rank_moves(before=before.results, after=self.results)


def _key(cycle: ReviewCycle, weights: Mapping[str, int], quorum: int) -> str:
    closed = cycle.intake_closed_at.isoformat() if cycle.intake_closed_at else "-"
    weighed = ",".join(f"{c}={weights[c]}" for c in sorted(weights))
    return f"docket:ranking:{cycle.pk}:{cycle.ranking_version}:{cycle.status}:{closed}:{quorum}:{weighed}"


def _kept(key: str) -> WeekRanking | None:
    with _KEPT_LOCK:
        found = _KEPT.get(key)
        if found is not None:
            _KEPT.move_to_end(key)
        return found


def _keep_here(key: str, ranking: WeekRanking) -> None:
    with _KEPT_LOCK:
        _KEPT[key] = ranking
        _KEPT.move_to_end(key)
        while len(_KEPT) > KEPT_IN_PROCESS:
            _KEPT.popitem(last=False)


def rankings_kept_forget() -> None:
    """Forget the rankings this process keeps (the tests start each test so: their ids come again)."""
    with _KEPT_LOCK:
        _KEPT.clear()


def _cached(key: str) -> WeekRanking | None:
    if not breaker.CACHE.allows():
        return None
    try:
        found = cache.get(key)
    except (RedisError, OSError) as exc:
        logger.warning("The ranking was computed without the cache: it did not answer (%s)", exc)
        breaker.CACHE.failed(exc)
        return None
    breaker.CACHE.succeeded()
    return found if isinstance(found, WeekRanking) else None


def _keep(key: str, ranking: WeekRanking) -> None:
    if not breaker.CACHE.allows():
        return
    try:
        cache.set(key, ranking, timeout=RANKING_CACHE_SECONDS)
    except (RedisError, OSError) as exc:
        logger.warning("The ranking was not kept in the cache: it did not answer (%s)", exc)
        breaker.CACHE.failed(exc)


def _computed(*, cycle: ReviewCycle, weights: Mapping[str, int] | None) -> WeekRanking:
    rows = cycle_ranking(cycle=cycle, weights=dict(weights) if weights is not None else None)
    shares = {row.request.team_id: row.fair_share for row in rows if row.fair_share is not None}
    return WeekRanking(
        results=tuple(row.result for row in rows),
        shares=shares,
        sheets=tuple(score_sheet(gpu_request=row.request, fair_share=row.fair_share) for row in rows),
    )


def week_ranking(*, cycle: ReviewCycle, weights: Mapping[str, int] | None = None) -> WeekRanking:
    """The week's ranking under the rubric in force for its week, or under `weights` (the what-if): computed once
    per change of what ranks it, then read from the cache. `cycle` is read for this request (its version is the
    one the caller saw). An open week is computed every time."""
    current = rubric_for_week(week=cycle.week).weights
    weights = dict(current if weights is None else weights)
    if cycle.status == CycleStatus.OPEN:
        return _computed(cycle=cycle, weights=weights)
    key = _key(cycle, weights, governance_for_week(week=cycle.week).score_quorum)
    found = _kept(key)
    if found is not None:
        return found
    found = _cached(key)
    if found is not None:
        _keep_here(key, found)
        return found
    if weights == current:
        ranking = _computed(cycle=cycle, weights=None)
    else:  # another weighing of the same sheets: the week is not read again
        base = week_ranking(cycle=cycle)
        ranking = WeekRanking(
            results=tuple(scoring.rank_requests(
                sheets=base.sheets, weights=weights, quorum=governance_for_week(week=cycle.week).score_quorum
            )),
            shares=base.shares,
            sheets=base.sheets,
        )
    _keep(key, ranking)
    _keep_here(key, ranking)
    return ranking


class RankingRows(Sequence[ReviewRow]):
    """The rows of a `WeekRanking`, read from the database a slice at a time (a page of the API or of a page):
    each slice is one query for its requests with their team, pool and decision, as they are now."""

    def __init__(self, *, cycle: ReviewCycle, ranking: WeekRanking) -> None:
        self.cycle = cycle
        self.ranking = ranking

    def __len__(self) -> int:
        return len(self.ranking.results)

    @overload
    def __getitem__(self, index: int) -> ReviewRow: ...

    @overload
    def __getitem__(self, index: slice) -> list[ReviewRow]: ...

    def __getitem__(self, index: int | slice) -> ReviewRow | list[ReviewRow]:
        if isinstance(index, slice):
            return self._rows(self.ranking.results[index])
        return self._rows((self.ranking.results[index],))[0]

    def __iter__(self) -> Iterator[ReviewRow]:
        return iter(self._rows(self.ranking.results))

    def _rows(self, results: Sequence[scoring.RequestResult]) -> list[ReviewRow]:
        by_id = GpuRequest.objects.select_related("team", "pool", "pool__cluster", "decision").order_by().in_bulk(
            [result.request_id for result in results]
        )
        rows = []
        for result in results:
            gpu_request = by_id.get(result.request_id)
            if gpu_request is None:  # deleted since (the admin): the page shows the others
                continue
            gpu_request.cycle = self.cycle
            rows.append(ReviewRow(request=gpu_request, result=result,
                                  fair_share=self.ranking.shares.get(gpu_request.team_id)))
        return rows


def ranking_rows(*, cycle: ReviewCycle, weights: Mapping[str, int] | None = None) -> RankingRows:
    """The week's ranked rows (`week_ranking`), read a page at a time: what a paged reader of the ranking takes."""
    return RankingRows(cycle=cycle, ranking=week_ranking(cycle=cycle, weights=weights))
