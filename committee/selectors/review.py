"""The weekly review: ranking, scores, demand against capacity, decisions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING

from django.db.models import Count, QuerySet, Sum, prefetch_related_objects
from django.http import Http404

from allocations import selectors as allocation_selectors
from allocations.models import GpuPool
from committee import scoring
from committee.models import (
    PLACING_OUTCOMES,
    CommitteeSeat,
    Decision,
    GpuRequest,
    RequestStatus,
    ReviewCycle,
    TeamMembership,
    criterion_label,
)
from committee.selectors.cycles import Rubric, rubric_for_week
from committee.selectors.deciding import scores_counted
from committee.selectors.discussion import RequestDiscussion, review_discussion_map
from committee.selectors.fairshare import fair_share_for_cycle
from committee.selectors.governance import governance_for_week
from committee.selectors.people import Viewer, viewer_roles
from committee.selectors.requests import pool_options_prefetch

if TYPE_CHECKING:
    from committee.selectors.budgets import RequestBudget
    from committee.selectors.placement import RequestPlacement
    from committee.selectors.realized import TrackRecord
    from committee.selectors.usage import UsageComparison

REVIEWED_STATUSES = (RequestStatus.SUBMITTED, RequestStatus.DECIDED)


@dataclass
class ReviewRow:
    """One request in review: its scores' results and where the rubric ranks it.

    The ranking reads each request with its team, pool and decision, and its scores as
    counts and sums per criterion (`cycle_ranking`); the members' single scores, the alternatives and what
    the page shows beside the inputs come with `review_rows_detail`, for the rows a page shows.
    """

    request: GpuRequest
    result: scoring.RequestResult
    fair_share: scoring.FairShare | None
    quadrant: str | None = None
    # Filled by cycle_review for the person looking:
    conflict: bool = False
    # The request's comments, questions, stale scores and recusals (committee.selectors.discussion).
    discussion: RequestDiscussion = field(default_factory=RequestDiscussion)
    inputs: list[ScoreInput] = field(default_factory=list)
    scored_by: list[MemberScores] = field(default_factory=list)
    # Filled by cycle_placement (the engine's dry run) for a grant or partial grant:
    placement: RequestPlacement | None = None
    # Filled by review_rows_measure for the review page: last week's usage, stated and measured.
    usage: UsageComparison | None = None
    # Filled by review_rows_budget: what granting it would charge its department, and the budget left.
    budget: RequestBudget | None = None
    # Filled by review_rows_track_record: the team's outcomes against forecasts (committee.selectors.realized).
    track_record: TrackRecord | None = None
    _suggestions: dict[str, scoring.Suggestion] | None = field(default=None, repr=False)

    @property
    def decision(self) -> Decision | None:
        return getattr(self.request, "decision", None)

    @property
    def scores(self) -> list[ScoreEntry]:
        return review_scores(self.request)

    @property
    def suggestions(self) -> dict[str, scoring.Suggestion]:
        """The suggestions beside the inputs, worked when first read (they read the request's alternatives:
        `review_rows_detail` loads them for a page of rows in one query)."""
        if self._suggestions is None:
            self._suggestions = _suggestions(gpu_request=self.request, cycle=self.request.cycle)
        return self._suggestions


@dataclass(frozen=True)
class ScoreEntry:
    """One member's score as the review reads it: plain values, so 1,000 requests × 4 members × 3
    criteria load as tuples, not 12,000 model instances (docs/benchmarks.md)."""

    member_id: int
    member_name: str
    criterion: str
    value: int
    note: str


def review_scores(gpu_request: GpuRequest) -> list[ScoreEntry]:
    """The request's scores, as `_review_requests` loaded them (else read now), by criterion then member name."""
    loaded = getattr(gpu_request, "_review_scores", None)
    if loaded is None:
        loaded = [
            ScoreEntry(member_id=m, member_name=n, criterion=c, value=v, note=t)
            for m, n, c, v, t in scores_counted().filter(request=gpu_request).order_by(
                "criterion", "member_name", "id"
            ).values_list(
                "member_id", "member_name", "criterion", "value", "note"
            )
        ]
        gpu_request._review_scores = loaded  # type: ignore[attr-defined]
    return loaded


@dataclass(frozen=True)
class ScoreInput:
    """What the page shows beside one score input: guidance, the viewer's score, the suggestion."""

    criterion: str
    label: str
    weight_pct: int
    guidance: str
    score: ScoreEntry | None
    suggestion: scoring.Suggestion | None


@dataclass(frozen=True)
class MemberScores:
    """One committee member's scores of one request, in criterion order; `conflict` when it is their team's,
    `recused` when they declared a conflict of interest on it (their scores then do not count), `stale` when
    the team changed the request after they scored it (their scores still count)."""

    name: str
    values: tuple[int | None, ...]
    conflict: bool
    recused: bool = False
    stale: bool = False


@dataclass(frozen=True)
class PoolLoad:
    """Demand against capacity for one GPU pool over the cycle's week, in GPU-hours.

    Capacity is what the engine can place (allocations.selectors.pool_week_capacity). Each demand is set against
    the capacity that can serve it: a request that may not run preemptible only against the standard capacity
    (the burst reserve goes to preemptible work only), every request against standard plus burst.
    """

    pool: GpuPool
    requested_gpu_hours: int
    granted_gpu_hours: int
    standard_gpu_hours: int
    burst_gpu_hours: int
    # Of `requested_gpu_hours`, what requests that may not run preemptible ask for: standard capacity only.
    standard_only_gpu_hours: int = 0
    # The later weeks of runs begun earlier (docs/multi-week-runs.md): already taken before any new request, and
    # counted in both demands above (never preemptible).
    committed_gpu_hours: int = 0

    @property
    def capacity_gpu_hours(self) -> int:
        return self.standard_gpu_hours + self.burst_gpu_hours

    @property
    def oversubscribed(self) -> bool:
        return (self.requested_gpu_hours > self.capacity_gpu_hours
                or self.standard_only_gpu_hours > self.standard_gpu_hours)

    @staticmethod
    def _pct(part: int, whole: int) -> int:
        """In whole percent, rounded up: 100.2% reads 101%, never an over-subscribed "100%"."""
        return -(-100 * part // whole) if whole else 0

    @property
    def demand_pct(self) -> int:
        """Every request against standard plus burst capacity."""
        return self._pct(self.requested_gpu_hours, self.capacity_gpu_hours)

    @property
    def standard_demand_pct(self) -> int:
        """The requests that may not run preemptible against the standard capacity alone."""
        return self._pct(self.standard_only_gpu_hours, self.standard_gpu_hours)


@dataclass
class CycleReview:
    cycle: ReviewCycle
    rubric: Rubric
    weights: dict[str, int]
    quorum: int
    rows: list[ReviewRow]
    members: list[tuple[int, str]]
    pools: list[PoolLoad]
    # Each pool's (by key) median requested GPU-hours: where the matrix splits low from high intensity. Per pool,
    # as an A100 hour and an H100 hour are not the same amount of compute.
    intensity_thresholds: dict[str, Decimal]
    # Each committee member's (and the viewer's) team ids: whose rows are their own team's.
    member_teams: dict[int, set[int]] = field(default_factory=dict)

    @property
    def ranked(self) -> list[ReviewRow]:
        return [r for r in self.rows if r.result.rank is not None]

    @property
    def incomplete(self) -> list[ReviewRow]:
        return [r for r in self.rows if r.result.rank is None]

    @property
    def undecided_ranked(self) -> list[ReviewRow]:
        return [r for r in self.ranked if r.decision is None]


def _review_requests(*, cycle: ReviewCycle, pk: int | None = None, with_scores: bool = False) -> list[GpuRequest]:
    """The cycle's requests in review with their team, pool and decision, and their scores as
    counts and sums per criterion: two queries for any number.

    The tallies are of the scores that count: a member recused from a request (a conflict of interest in
    force) has their scores of it withdrawn from its totals. The members' single scores are not read here
    (`review_scores_load`) unless `with_scores`: then they are read instead of the tallies (one query either
    way), and the tallies are counted from them. `pk` reads that one request only.
    """
    in_review = GpuRequest.objects.filter(cycle=cycle, status__in=REVIEWED_STATUSES, is_emergency=False)
    if pk is not None:
        in_review = in_review.filter(pk=pk)
    requests = list(
        in_review.select_related("team", "pool", "pool__cluster", "decision")
        .order_by("submitted_at", "id")
    )
    if with_scores:
        review_scores_load(requests=requests)
        for r in requests:
            tallies: dict[str, list[int]] = {}
            for entry in review_scores(r):
                tallies.setdefault(entry.criterion, []).append(entry.value)
            r.cycle = cycle
            r._review_tallies = {  # type: ignore[attr-defined]
                c: scoring.ScoreTally(count=len(v), total=sum(v)) for c, v in tallies.items()
            }
        return requests
    by_id: dict[int, dict[str, scoring.ScoreTally]] = {r.pk: {} for r in requests}
    if requests:
        scores = scores_counted().filter(request__cycle=cycle) if pk is None else scores_counted().filter(request_id=pk)
        for request_id, criterion, count, total in (
            scores.order_by().values("request_id", "criterion")
            .annotate(count=Count("id"), total=Sum("value")).values_list("request_id", "criterion", "count", "total")
        ):
            if request_id in by_id:  # not a withdrawn or emergency request's
                by_id[request_id][criterion] = scoring.ScoreTally(count=count, total=total)
    for r in requests:
        r.cycle = cycle  # one cycle for all: not read again per request
        r._review_tallies = by_id[r.pk]  # type: ignore[attr-defined]
    return requests


def review_scores_load(*, requests: list[GpuRequest]) -> None:
    """Load the members' single scores (those that count) of `requests` in one query, for `review_scores`."""
    by_id: dict[int, list[ScoreEntry]] = {r.pk: [] for r in requests}
    if requests:
        for request_id, m, n, c, v, t in (
            scores_counted().filter(request_id__in=by_id)
            .order_by("criterion", "member_name", "id")
            .values_list("request_id", "member_id", "member_name", "criterion", "value", "note")
        ):
            by_id[request_id].append(ScoreEntry(member_id=m, member_name=n, criterion=c, value=v, note=t))
    for r in requests:
        r._review_scores = by_id[r.pk]  # type: ignore[attr-defined]


def _suggestions(*, gpu_request: GpuRequest, cycle: ReviewCycle) -> dict[str, scoring.Suggestion]:
    return {
        scoring.URGENCY: scoring.urgency_suggestion(deadline=gpu_request.deadline, window_end=cycle.ends_at),
        scoring.FEASIBILITY: scoring.feasibility_suggestion(
            requested_gpu_hours=gpu_request.requested_gpu_hours,
            baseline_gpu_hours=gpu_request.baseline_gpu_hours,
            alternatives=[
                scoring.AlternativeOption(description=a.description, gpu_hours=a.gpu_hours, feasible=a.feasible)
                for a in gpu_request.alternatives.all()
            ],
        ),
    }


def score_sheet(*, gpu_request: GpuRequest, fair_share: scoring.FairShare | None) -> scoring.ScoreSheet:
    """A request's scores as plain data for the arithmetic: the tallies `cycle_ranking` read (else its scores)."""
    computed = {scoring.FAIRNESS: fair_share.score} if fair_share is not None else {}
    submitted_at = gpu_request.submitted_at or gpu_request.created_at
    tallies = getattr(gpu_request, "_review_tallies", None)
    if tallies is not None:
        return scoring.ScoreSheet(request_id=gpu_request.pk, submitted_at=submitted_at, member_scores={},
                                  computed_scores=computed, member_tallies=tallies)
    member_scores: dict[str, list[int]] = {c: [] for c in scoring.MEMBER_SCORED}
    for score in review_scores(gpu_request):
        member_scores[score.criterion].append(score.value)
    return scoring.ScoreSheet(
        request_id=gpu_request.pk,
        submitted_at=submitted_at,
        member_scores=member_scores,
        computed_scores=computed,
    )


def cycle_ranking(
    *, cycle: ReviewCycle, weights: dict[str, int] | None = None, with_scores: bool = False
) -> list[ReviewRow]:
    """Every submitted or decided request of the cycle, ranked by the rubric in force in its week.

    Ranked requests come first (rank 1, 2, …; ties to the earlier submission, then the lower id),
    then those below quorum (rank None). `weights` ranks under other weights instead (the what-if);
    nothing is written either way. A constant number of queries, whatever the number of requests:
    the scores are read as counts and sums per request and criterion, not row by row (`with_scores` reads
    the members' single scores instead, for a caller that shows every one of them: `review_scores`).
    """
    gpu_requests = _review_requests(cycle=cycle, with_scores=with_scores)
    shares = fair_share_for_cycle(cycle=cycle) if gpu_requests else {}
    return _ranked_rows(cycle=cycle, gpu_requests=gpu_requests, shares=shares, weights=weights)


def ranking_reweigh(*, cycle: ReviewCycle, rows: list[ReviewRow], weights: dict[str, int]) -> list[ReviewRow]:
    """The rows of `cycle_ranking` ranked again under other weights (the what-if), without reading them again."""
    gpu_requests = sorted((row.request for row in rows), key=lambda r: (r.submitted_at is None, r.submitted_at, r.pk))
    shares = {row.request.team_id: row.fair_share for row in rows if row.fair_share is not None}
    return _ranked_rows(cycle=cycle, gpu_requests=gpu_requests, shares=shares, weights=weights)


def _ranked_rows(
    *, cycle: ReviewCycle, gpu_requests: list[GpuRequest], shares: dict[int, scoring.FairShare],
    weights: dict[str, int] | None,
) -> list[ReviewRow]:
    weights = weights or rubric_for_week(week=cycle.week).weights
    by_id = {r.pk: r for r in gpu_requests}
    sheets = [score_sheet(gpu_request=r, fair_share=shares.get(r.team_id)) for r in gpu_requests]
    results = scoring.rank_requests(
        sheets=sheets, weights=weights, quorum=governance_for_week(week=cycle.week).score_quorum
    )
    return [
        ReviewRow(
            request=by_id[result.request_id],
            result=result,
            fair_share=shares.get(by_id[result.request_id].team_id),
        )
        for result in results
    ]


def _pool_loads(*, cycle: ReviewCycle, rows: list[ReviewRow]) -> list[PoolLoad]:
    committed = allocation_selectors.commitment_gpu_hours_by_pool(week=cycle.week)
    requested: dict[int, int] = dict(committed)
    standard_only: dict[int, int] = dict(committed)
    granted: dict[int, int] = {}
    for row in rows:
        r = row.request
        requested[r.pool_id] = requested.get(r.pool_id, 0) + r.requested_gpu_hours
        if not r.preemptible_ok:
            standard_only[r.pool_id] = standard_only.get(r.pool_id, 0) + r.requested_gpu_hours
        decision = row.decision
        if decision is not None and decision.granted_gpu_count:
            granted[r.pool_id] = granted.get(r.pool_id, 0) + decision.granted_gpu_count * r.duration_hours
    loads = []
    for pool, capacity in allocation_selectors.pool_week_capacity_list(hours=cycle.hours):
        loads.append(
            PoolLoad(
                pool=pool,
                requested_gpu_hours=requested.get(pool.pk, 0),
                granted_gpu_hours=granted.get(pool.pk, 0),
                standard_gpu_hours=capacity.standard_gpu_hours,
                burst_gpu_hours=capacity.burst_gpu_hours,
                standard_only_gpu_hours=standard_only.get(pool.pk, 0),
                committed_gpu_hours=committed.get(pool.pk, 0),
            )
        )
    return loads


def _members_and_teams(*, viewer: Viewer) -> tuple[dict[int, str], dict[int, set[int]]]:
    """The committee's members (id → name, in seat order) and their and the viewer's team ids: two queries."""
    seats = list(CommitteeSeat.objects.active().select_related("user").order_by("role", "user__username"))
    members: dict[int, str] = {}
    for seat in seats:
        members.setdefault(seat.user_id, seat.user.get_full_name() or seat.user.get_username())
    teams_of: dict[int, set[int]] = {}
    for user_id, team_id in TeamMembership.objects.filter(user_id__in=[*members, viewer.pk]).values_list(
        "user_id", "team_id"
    ):
        teams_of.setdefault(user_id, set()).add(team_id)
    return members, teams_of


def cycle_review(
    *, cycle: ReviewCycle, viewer: Viewer, detailed: bool = True, rows: Sequence[ReviewRow] | None = None
) -> CycleReview:
    """Everything the weekly review page shows, for one committee member. Constant number of queries.

    The caller checks that the viewer has a committee seat; rows of the viewer's own teams are
    marked `conflict`. `detailed` gives every row its members' scores, score inputs and discussion
    (`review_rows_detail`, as the archive's record needs); the review page asks for the rows it shows only.
    `rows` are the week's ranked rows when the caller has them (the review page reads the ranking kept once per
    change, `committee.selectors.ranking.ranking_rows`); else the week is ranked here.
    """
    rows = list(rows) if rows is not None else cycle_ranking(cycle=cycle, with_scores=detailed)
    members, teams_of = _members_and_teams(viewer=viewer)
    rubric = rubric_for_week(week=cycle.week)
    weights = rubric.weights
    by_pool: dict[str, list[int]] = {}
    for row in rows:
        by_pool.setdefault(row.request.pool.key, []).append(row.request.requested_gpu_hours)
    thresholds = {key: scoring.intensity_threshold(hours) for key, hours in sorted(by_pool.items())}
    # An anonymous viewer (the archive's record of a week) is in no team: no row is a conflict.
    viewer_teams = teams_of.get(viewer.pk, set()) if viewer.is_authenticated else set()
    for row in rows:
        r = row.request
        row.conflict = r.team_id in viewer_teams
        row.quadrant = scoring.matrix_quadrant(
            impact=row.result.criterion(scoring.BUSINESS_IMPACT).score,
            gpu_hours=r.requested_gpu_hours,
            threshold_gpu_hours=thresholds[r.pool.key],
        )
    review = CycleReview(
        cycle=cycle,
        rubric=rubric,
        weights=weights,
        quorum=governance_for_week(week=cycle.week).score_quorum,
        rows=rows,
        members=list(members.items()),
        pools=_pool_loads(cycle=cycle, rows=rows),
        intensity_thresholds=thresholds,
        member_teams=teams_of,
    )
    if detailed:
        review_rows_detail(review=review, rows=rows, viewer=viewer)
    return review


def review_rows_detail(*, review: CycleReview, rows: list[ReviewRow], viewer: Viewer) -> None:
    """Give `rows` of `review` what a request card shows: the members' single scores (who scored what, stale,
    recused), the viewer's score inputs with their suggestions, the alternatives and the discussion.

    Five queries for any number of rows (scores, alternatives, other pools, and the discussion's), so a page pays for
    the cards it shows, not for the week.
    """
    requests = [row.request for row in rows]
    review_scores_load(requests=[r for r in requests if getattr(r, "_review_scores", None) is None])
    prefetch_related_objects(requests, "alternatives", pool_options_prefetch("pool_options"))
    guidance = review.rubric.guidance
    teams_of = review.member_teams
    discussions = review_discussion_map(requests=requests, viewer=viewer)
    for row in rows:
        r = row.request
        row.discussion = discussions[r.pk]
        stale_ids = {note.member_id for note in row.discussion.stale}
        mine = {s.criterion: s for s in review_scores(r) if s.member_id == viewer.pk}
        row.inputs = [
            ScoreInput(
                criterion=c,
                label=criterion_label(c),
                weight_pct=review.weights[c],
                guidance=guidance[c],
                score=mine.get(c),
                suggestion=row.suggestions.get(c),
            )
            for c in scoring.MEMBER_SCORED
        ]
        values: dict[int, dict[str, int]] = {}
        for s in review_scores(r):
            values.setdefault(s.member_id, {})[s.criterion] = s.value
        row.scored_by = [
            MemberScores(
                name=name,
                values=tuple(values.get(user_id, {}).get(c) for c in scoring.MEMBER_SCORED),
                conflict=r.team_id in teams_of.get(user_id, set()),
                recused=user_id in row.discussion.recused_ids,
                stale=user_id in stale_ids,
            )
            for user_id, name in review.members
        ]


def review_rows_suggestions_load(*, rows: list[ReviewRow]) -> None:
    """Load the alternatives of `rows` (a page of the ranking) in one query: their suggestions read them."""
    prefetch_related_objects([row.request for row in rows], "alternatives")


def review_card(*, cycle: ReviewCycle, viewer: Viewer, pk: int) -> ReviewRow:
    """One request's card on the review page, as `cycle_review` and `review_rows_detail` give it, without
    ranking the week: what an inline save redraws. Its result has no rank (the ranking is its own request).

    A constant number of queries whatever the number of requests in the week; 404 for a request not in review.
    """
    gpu_request = _review_requests(cycle=cycle, pk=pk)
    if not gpu_request:
        raise Http404("No such request in review")
    shares = fair_share_for_cycle(cycle=cycle)
    r = gpu_request[0]
    members, teams_of = _members_and_teams(viewer=viewer)
    rubric = rubric_for_week(week=cycle.week)
    weights = rubric.weights
    quorum = governance_for_week(week=cycle.week).score_quorum
    fair_share = shares.get(r.team_id)
    row = ReviewRow(
        request=r,
        result=scoring.request_result(sheet=score_sheet(gpu_request=r, fair_share=fair_share), weights=weights,
                                      quorum=quorum),
        fair_share=fair_share,
        conflict=viewer.is_authenticated and r.team_id in teams_of.get(viewer.pk, set()),
    )
    review = CycleReview(cycle=cycle, rubric=rubric, weights=weights, quorum=quorum, rows=[row],
                         members=list(members.items()), pools=[], intensity_thresholds={},
                         member_teams=teams_of)
    review_rows_detail(review=review, rows=[row], viewer=viewer)
    return row


def decision_list_for_cycle(*, cycle: ReviewCycle) -> QuerySet[Decision]:
    """A cycle's decisions in priority order (frozen at finalize), then the unranked ones."""
    return (
        Decision.objects.filter(cycle=cycle)
        .select_related("request", "request__team", "request__pool", "request__pool__cluster")
        .order_by("priority_rank", "id")
    )


def decision_list_granted(*, cycle: ReviewCycle) -> QuerySet[Decision]:
    """What the allocation engine places: grants, partial grants and alternatives granted, highest priority first."""
    return decision_list_for_cycle(cycle=cycle).filter(outcome__in=PLACING_OUTCOMES)


def decision_visible_to(*, viewer: Viewer, gpu_request: GpuRequest) -> bool:
    """The committee sees decisions as they are entered; the team once the cycle is finalized."""
    roles = viewer_roles(user=viewer)
    if roles.committee:
        return True
    return gpu_request.status == RequestStatus.DECIDED and gpu_request.team_id in roles.team_ids
