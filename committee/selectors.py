"""Reads, already scoped to who asks."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal

from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Prefetch, QuerySet
from django.http import Http404
from django.utils import timezone

from allocations import engine
from allocations import selectors as allocation_selectors
from allocations.models import GpuPool, Team
from committee import scoring
from committee.models import (
    CommitteeSeat,
    Criterion,
    CycleStatus,
    Decision,
    DecisionOutcome,
    GpuRequest,
    Notification,
    NotificationDigest,
    NotificationKind,
    NotificationOptOut,
    RequestStatus,
    ReviewCycle,
    RubricVersion,
    Score,
    SeatRole,
    TeamMembership,
    rubric_version_current_pk,
)
from core.isoweek import is_iso_week

Viewer = User | AnonymousUser


@dataclass(frozen=True)
class ViewerRoles:
    """Who a person is to Docket: a committee seat (and whether it is the chair's), and their teams."""

    committee: bool
    chair: bool
    team_ids: frozenset[int]


NO_ROLES = ViewerRoles(committee=False, chair=False, team_ids=frozenset())
_ROLES_ATTRIBUTE = "_docket_viewer_roles"


class _RequestSerial:
    """Counts requests (committee.apps connects `viewer_roles_new_request` to request_started).

    A kept answer is reused only within the request it was read in, even when one user instance
    is sent through many requests (DRF's force_authenticate in tests does this).
    """

    value = 0


def viewer_roles_new_request(**_kwargs: object) -> None:
    _RequestSerial.value += 1


def viewer_roles(*, user: Viewer) -> ViewerRoles:
    """The viewer's roles, read from the database once (two queries) and kept on the user instance.

    Every guard, selector, serializer and template of a request reads the same answer without
    asking again (as Django's ModelBackend keeps `_perm_cache` on the user). The answer is kept
    for one request; outside requests (commands, tasks) for the life of the instance, so code
    that changes a person's seats or teams and then asks again loads the user anew.
    """
    if not user.is_authenticated:
        return NO_ROLES
    cached = getattr(user, _ROLES_ATTRIBUTE, None)
    if isinstance(cached, tuple) and cached[0] == _RequestSerial.value:
        return cached[1]
    seats = set(CommitteeSeat.objects.active().filter(user=user).values_list("role", flat=True))
    roles = ViewerRoles(
        committee=bool(seats),
        chair=SeatRole.CHAIR in seats,
        team_ids=frozenset(TeamMembership.objects.filter(user=user).values_list("team_id", flat=True)),
    )
    setattr(user, _ROLES_ATTRIBUTE, (_RequestSerial.value, roles))
    return roles


def user_is_committee(*, user: Viewer) -> bool:
    return viewer_roles(user=user).committee


def user_is_chair(*, user: Viewer) -> bool:
    return viewer_roles(user=user).chair


def team_list_for_user(*, user: Viewer) -> QuerySet[Team]:
    team_ids = viewer_roles(user=user).team_ids
    if not team_ids:
        return Team.objects.none()
    return Team.objects.filter(pk__in=team_ids).order_by("name")


def user_is_team_member(*, user: Viewer, team: Team) -> bool:
    return team.pk in viewer_roles(user=user).team_ids


def cycle_open_for_intake() -> ReviewCycle | None:
    """The cycle teams file into now: the earliest cycle still open."""
    return ReviewCycle.objects.filter(status=CycleStatus.OPEN).order_by("starts_at").first()


def pool_list() -> QuerySet[GpuPool]:
    return GpuPool.objects.select_related("cluster").order_by("cluster__name", "slug")


def _request_queryset() -> QuerySet[GpuRequest]:
    return GpuRequest.objects.select_related(
        "team", "cycle", "pool", "pool__cluster", "usage_report", "impact_forecast", "submitted_by", "created_by"
    ).prefetch_related(Prefetch("alternatives"))


def request_list_for_viewer(*, viewer: Viewer) -> QuerySet[GpuRequest]:
    """Requests a person may read: their teams' requests, or all of them for the committee."""
    if not viewer.is_authenticated:
        return GpuRequest.objects.none()
    queryset = _request_queryset().order_by("-cycle__starts_at", "team__name", "id")
    roles = viewer_roles(user=viewer)
    if roles.committee:
        return queryset
    return queryset.filter(team_id__in=roles.team_ids)


def request_get_for_viewer(*, viewer: Viewer, pk: int) -> GpuRequest:
    """One request, or Http404 if it does not exist or is not the viewer's to read."""
    try:
        return request_list_for_viewer(viewer=viewer).prefetch_related("events").get(pk=pk)
    except GpuRequest.DoesNotExist:
        raise Http404("No such request") from None


def request_list_for_team_member(*, viewer: Viewer) -> QuerySet[GpuRequest]:
    """The team portal: only the viewer's own teams, even for committee members."""
    if not viewer.is_authenticated:
        return GpuRequest.objects.none()
    team_ids = viewer_roles(user=viewer).team_ids
    return _request_queryset().filter(team_id__in=team_ids).order_by("-cycle__starts_at", "team__name", "id")


# ---------------------------------------------------------------------------------------------
# Cycles and the rubric


def cycle_list() -> QuerySet[ReviewCycle]:
    return ReviewCycle.objects.select_related("rubric").order_by("-starts_at")


def cycle_get(*, week: str) -> ReviewCycle:
    """The cycle of an ISO week, with its pinned rubric; Http404 if there is none (or `week` is no week)."""
    if not is_iso_week(week):
        raise Http404("No such cycle")
    try:
        return cycle_list().get(week=week)
    except ReviewCycle.DoesNotExist:
        raise Http404("No such cycle") from None


def cycle_for_review() -> ReviewCycle | None:
    """The cycle the review page opens on: the one in review, else the latest decided one, else the open one."""
    cycles = cycle_list()
    return (
        cycles.filter(status=CycleStatus.IN_REVIEW).order_by("starts_at").first()
        or cycles.filter(status__in=[CycleStatus.FINALIZED, CycleStatus.PUBLISHED]).first()
        or cycles.filter(status=CycleStatus.OPEN).order_by("starts_at").first()
    )


def rubric_current() -> RubricVersion:
    """The version a cycle opened now would pin."""
    return RubricVersion.objects.get(pk=rubric_version_current_pk())


@dataclass(frozen=True)
class RubricChange:
    """One version of the rubric next to the one before it: who changed what, when and why."""

    version: RubricVersion
    previous: RubricVersion | None
    cycle_weeks: tuple[str, ...]

    @property
    def weight_changes(self) -> list[tuple[str, int | None, int, bool]]:
        """(criterion label, old weight, new weight, changed) for each criterion."""
        new = self.version.weights()
        old = self.previous.weights() if self.previous else {}
        return [
            (str(Criterion(c).label), old.get(c), new[c], old.get(c) != new[c]) for c in scoring.CRITERIA
        ]

    @property
    def guidance_changed(self) -> list[str]:
        if self.previous is None:
            return []
        old, new = self.previous.guidance(), self.version.guidance()
        return [str(Criterion(c).label) for c in scoring.CRITERIA if old[c] != new[c]]


def rubric_history() -> list[RubricChange]:
    """Every rubric version, newest first, each with its predecessor and the cycles that pinned it. Two queries."""
    versions = list(
        RubricVersion.objects.order_by("number").prefetch_related(
            Prefetch("cycles", queryset=ReviewCycle.objects.order_by("starts_at").only("id", "week", "rubric_id"))
        )
    )
    changes = [
        RubricChange(
            version=version,
            previous=versions[index - 1] if index else None,
            cycle_weeks=tuple(c.week for c in version.cycles.all()),
        )
        for index, version in enumerate(versions)
    ]
    return changes[::-1]


# ---------------------------------------------------------------------------------------------
# Fair share


def fair_share_live(*, as_of: datetime) -> dict[int, scoring.FairShare]:
    """Every team's fair-share factor from the usage reported in the trailing weeks before `as_of`. Two queries."""
    weights = dict(Team.objects.values_list("id", "fair_share_weight"))
    weekly = allocation_selectors.usage_gpu_hours_by_team_per_week(
        until=as_of, weeks=settings.DOCKET_FAIRSHARE_TRAILING_WEEKS
    )
    decayed = scoring.decayed_usage(weekly_usage=weekly, half_life_weeks=settings.DOCKET_FAIRSHARE_HALF_LIFE_WEEKS)
    return scoring.fair_shares(decayed=decayed, weights=weights)


def fair_share_for_cycle(*, cycle: ReviewCycle) -> dict[int, scoring.FairShare]:
    """The factors a cycle is ranked with: frozen when intake closed; live (as of now) while it is open."""
    snapshots = list(cycle.fair_shares.all())
    if snapshots:
        return {s.team_id: s.share() for s in snapshots}
    return fair_share_live(as_of=cycle.intake_closed_at or timezone.now())


# ---------------------------------------------------------------------------------------------
# The weekly review

REVIEWED_STATUSES = (RequestStatus.SUBMITTED, RequestStatus.DECIDED)


@dataclass
class ReviewRow:
    """One request in review: its evidence (prefetched), its scores and where the rubric ranks it."""

    request: GpuRequest
    result: scoring.RequestResult
    fair_share: scoring.FairShare | None
    suggestions: dict[str, scoring.Suggestion]
    quadrant: str | None = None
    # Filled by cycle_review for the person looking:
    conflict: bool = False
    inputs: list[ScoreInput] = field(default_factory=list)
    scored_by: list[MemberScores] = field(default_factory=list)

    @property
    def decision(self) -> Decision | None:
        return getattr(self.request, "decision", None)

    @property
    def scores(self) -> list[Score]:
        return list(self.request.scores.all())


@dataclass(frozen=True)
class ScoreInput:
    """What the page shows beside one score input: guidance, the viewer's score, the suggestion."""

    criterion: str
    label: str
    weight_pct: int
    guidance: str
    score: Score | None
    suggestion: scoring.Suggestion | None


@dataclass(frozen=True)
class MemberScores:
    """One committee member's scores of one request, in criterion order; `conflict` when it is their team's."""

    name: str
    values: tuple[int | None, ...]
    conflict: bool


@dataclass(frozen=True)
class PoolLoad:
    """Demand against capacity for one GPU pool over the cycle's week, in GPU-hours.

    Capacity is what the engine can place (allocations.selectors.pool_week_capacity).
    """

    pool: GpuPool
    requested_gpu_hours: int
    granted_gpu_hours: int
    standard_gpu_hours: int
    burst_gpu_hours: int

    @property
    def capacity_gpu_hours(self) -> int:
        return self.standard_gpu_hours + self.burst_gpu_hours

    @property
    def oversubscribed(self) -> bool:
        return self.requested_gpu_hours > self.capacity_gpu_hours

    @property
    def demand_pct(self) -> int:
        """Requested over capacity in whole percent, rounded up: 100.2% reads 101%, never an
        over-subscribed "100%"."""
        if not self.capacity_gpu_hours:
            return 0
        return -(-100 * self.requested_gpu_hours // self.capacity_gpu_hours)


@dataclass
class CycleReview:
    cycle: ReviewCycle
    rubric: RubricVersion
    weights: dict[str, int]
    quorum: int
    rows: list[ReviewRow]
    members: list[tuple[int, str]]
    pools: list[PoolLoad]
    intensity_threshold: Decimal

    @property
    def ranked(self) -> list[ReviewRow]:
        return [r for r in self.rows if r.result.rank is not None]

    @property
    def incomplete(self) -> list[ReviewRow]:
        return [r for r in self.rows if r.result.rank is None]

    @property
    def undecided_ranked(self) -> list[ReviewRow]:
        return [r for r in self.ranked if r.decision is None]


def _review_requests(*, cycle: ReviewCycle) -> list[GpuRequest]:
    """The cycle's requests in review with their evidence, decision and scores: four queries for any number."""
    return list(
        GpuRequest.objects.filter(cycle=cycle, status__in=REVIEWED_STATUSES)
        .select_related("team", "pool", "pool__cluster", "usage_report", "impact_forecast", "decision")
        .prefetch_related(
            "alternatives",
            Prefetch("scores", queryset=Score.objects.order_by("criterion", "member_name", "id")),
        )
        .order_by("submitted_at", "id")
    )


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
    """A request's scores as plain data for the arithmetic (uses the prefetched `scores`)."""
    member_scores: dict[str, list[int]] = {c: [] for c in scoring.MEMBER_SCORED}
    for score in gpu_request.scores.all():
        member_scores[score.criterion].append(score.value)
    computed = {scoring.FAIRNESS: fair_share.score} if fair_share is not None else {}
    return scoring.ScoreSheet(
        request_id=gpu_request.pk,
        submitted_at=gpu_request.submitted_at or gpu_request.created_at,
        member_scores=member_scores,
        computed_scores=computed,
    )


def cycle_ranking(*, cycle: ReviewCycle, weights: dict[str, int] | None = None) -> list[ReviewRow]:
    """Every submitted or decided request of the cycle, ranked by the rubric the cycle pinned.

    Ranked requests come first (rank 1, 2, …; ties to the earlier submission, then the lower id),
    then those below quorum (rank None). `weights` ranks under other weights instead (the what-if);
    nothing is written either way. A constant number of queries, whatever the number of requests.
    """
    weights = weights or cycle.rubric.weights()
    gpu_requests = _review_requests(cycle=cycle)
    shares = fair_share_for_cycle(cycle=cycle) if gpu_requests else {}
    by_id = {r.pk: r for r in gpu_requests}
    sheets = [score_sheet(gpu_request=r, fair_share=shares.get(r.team_id)) for r in gpu_requests]
    results = scoring.rank_requests(sheets=sheets, weights=weights, quorum=settings.DOCKET_SCORE_QUORUM)
    return [
        ReviewRow(
            request=by_id[result.request_id],
            result=result,
            fair_share=shares.get(by_id[result.request_id].team_id),
            suggestions=_suggestions(gpu_request=by_id[result.request_id], cycle=cycle),
        )
        for result in results
    ]


def _pool_loads(*, cycle: ReviewCycle, rows: list[ReviewRow]) -> list[PoolLoad]:
    requested: dict[int, int] = {}
    granted: dict[int, int] = {}
    for row in rows:
        r = row.request
        requested[r.pool_id] = requested.get(r.pool_id, 0) + r.requested_gpu_hours
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
            )
        )
    return loads


def cycle_review(*, cycle: ReviewCycle, viewer: Viewer) -> CycleReview:
    """Everything the weekly review page shows, for one committee member. Constant number of queries.

    The caller checks that the viewer has a committee seat; rows of the viewer's own teams are
    marked `conflict` and carry no score inputs.
    """
    rows = cycle_ranking(cycle=cycle)
    seats = list(CommitteeSeat.objects.active().select_related("user").order_by("role", "user__username"))
    members: dict[int, str] = {}
    for seat in seats:
        members.setdefault(seat.user_id, seat.user.get_full_name() or seat.user.get_username())
    teams_of: dict[int, set[int]] = {}
    for user_id, team_id in TeamMembership.objects.filter(user_id__in=[*members, viewer.pk]).values_list(
        "user_id", "team_id"
    ):
        teams_of.setdefault(user_id, set()).add(team_id)
    weights = cycle.rubric.weights()
    guidance = cycle.rubric.guidance()
    threshold = scoring.intensity_threshold([row.request.requested_gpu_hours for row in rows])
    # An anonymous viewer (the archive's record of a week) is in no team: no row is a conflict.
    viewer_teams = teams_of.get(viewer.pk, set()) if viewer.is_authenticated else set()
    for row in rows:
        r = row.request
        row.conflict = r.team_id in viewer_teams
        mine = {s.criterion: s for s in r.scores.all() if s.member_id == viewer.pk}
        row.inputs = [
            ScoreInput(
                criterion=c,
                label=str(Criterion(c).label),
                weight_pct=weights[c],
                guidance=guidance[c],
                score=mine.get(c),
                suggestion=row.suggestions.get(c),
            )
            for c in scoring.MEMBER_SCORED
        ]
        values: dict[int, dict[str, int]] = {}
        for s in r.scores.all():
            values.setdefault(s.member_id, {})[s.criterion] = s.value
        row.scored_by = [
            MemberScores(
                name=name,
                values=tuple(values.get(user_id, {}).get(c) for c in scoring.MEMBER_SCORED),
                conflict=r.team_id in teams_of.get(user_id, set()),
            )
            for user_id, name in members.items()
        ]
        row.quadrant = scoring.matrix_quadrant(
            impact=row.result.criterion(scoring.BUSINESS_IMPACT).score,
            gpu_hours=r.requested_gpu_hours,
            threshold_gpu_hours=threshold,
        )
    return CycleReview(
        cycle=cycle,
        rubric=cycle.rubric,
        weights=weights,
        quorum=settings.DOCKET_SCORE_QUORUM,
        rows=rows,
        members=list(members.items()),
        pools=_pool_loads(cycle=cycle, rows=rows),
        intensity_threshold=threshold,
    )


def decision_list_for_cycle(*, cycle: ReviewCycle) -> QuerySet[Decision]:
    """A cycle's decisions in priority order (frozen at finalize), then the unranked ones."""
    return (
        Decision.objects.filter(cycle=cycle)
        .select_related("request", "request__team", "request__pool", "request__pool__cluster")
        .order_by("priority_rank", "id")
    )


def decision_list_granted(*, cycle: ReviewCycle) -> QuerySet[Decision]:
    """What the allocation engine places: grants and partial grants, highest priority first."""
    return decision_list_for_cycle(cycle=cycle).filter(
        outcome__in=[DecisionOutcome.GRANT, DecisionOutcome.PARTIAL]
    )


def decision_visible_to(*, viewer: Viewer, gpu_request: GpuRequest) -> bool:
    """The committee sees decisions as they are entered; the team once the cycle is finalized."""
    roles = viewer_roles(user=viewer)
    if roles.committee:
        return True
    return gpu_request.status == RequestStatus.DECIDED and gpu_request.team_id in roles.team_ids


# ---------------------------------------------------------------------------------------------
# Publishing: what the engine is given for a finalized week


def cycle_demands(*, cycle: ReviewCycle) -> list[tuple[engine.Demand, Decision]]:
    """The engine's demands for a cycle, highest priority first, each with its decision.

    Grants ask for the GPUs requested, partial grants for the GPUs granted (their minimum
    capped at that count); deferrals and rejections ask for nothing. Order: the priority rank
    frozen at finalize, then unranked decisions by id (a decision taken on a request that
    missed quorum still gets placed, after every ranked one).
    """
    decisions = sorted(
        decision_list_granted(cycle=cycle),
        key=lambda d: (d.priority_rank is None, d.priority_rank or 0, d.pk),
    )
    demands = []
    for decision in decisions:
        request = decision.request
        if decision.outcome == DecisionOutcome.PARTIAL:
            count = decision.granted_gpu_count or 0
        else:
            count = decision.requested_gpu_count
        demands.append(
            (
                engine.Demand(
                    ref=request.pk,
                    pool=request.pool.key,
                    gpu_count=count,
                    min_gpu_count=min(request.min_gpu_count, count),
                    duration_hours=request.duration_hours,
                    earliest_start=request.earliest_start,
                    latest_end=request.latest_end,
                    preemptible_ok=request.preemptible_ok,
                ),
                decision,
            )
        )
    return demands


def started_windows(*, week: str, now: datetime) -> list[engine.EngineWindow]:
    """The current plan's windows of `week` that have started by `now`: a correction keeps them.

    A running job's reservation must not move under it, so these go to the engine as fixed
    windows and come out of the new version unchanged (same row, same id).
    """
    plan = allocation_selectors.plan_for_week(week=week)
    if plan is None:
        return []
    return [
        engine.EngineWindow(
            ref=window.request_ref,
            pool=window.pool.key,
            gpu_count=window.gpu_count,
            start=window.start,
            end=window.end,
            tier=window.tier,
        )
        for window in allocation_selectors.plan_window_list(plan=plan).select_related("pool__cluster")
        if window.start <= now and window.request_ref is not None
    ]


# ---------------------------------------------------------------------------------------------
# Notifications


def digest_list_for_user(*, user: Viewer, limit: int = 7) -> list[NotificationDigest]:
    """The person's latest digests, newest first."""
    if not user.is_authenticated:
        return []
    return list(NotificationDigest.objects.filter(recipient=user).order_by("-day")[:limit])


def notification_waiting_count(*, user: Viewer) -> int:
    """How many of the person's notifications wait for their next digest."""
    if not user.is_authenticated:
        return 0
    return Notification.objects.filter(recipient=user, digest__isnull=True, skipped=False).count()


# Who hears of what: the recipients notifications are recorded for, and a person's choices.

TEAM_KINDS = (NotificationKind.INTAKE_CLOSING, NotificationKind.REQUEST_SUBMITTED, NotificationKind.DECISION_PUBLISHED)
COMMITTEE_KINDS = (NotificationKind.INTAKE_CLOSED, NotificationKind.REVIEW_COMING)


def team_member_ids(*, team_ids: Iterable[int]) -> dict[int, list[int]]:
    """Active members' user ids per team id."""
    members: dict[int, list[int]] = {}
    rows = TeamMembership.objects.filter(team_id__in=list(team_ids), user__is_active=True).order_by("user_id")
    for team_id, user_id in rows.values_list("team_id", "user_id"):
        members.setdefault(team_id, []).append(user_id)
    return members


def committee_member_ids(*, on: date | None = None) -> list[int]:
    """User ids of everyone holding an active committee seat (a person with two seats counts once)."""
    seats = CommitteeSeat.objects.active(on).filter(user__is_active=True)
    return sorted(set(seats.values_list("user_id", flat=True)))


def notification_kinds_for(*, user: User) -> list[str]:
    """The kinds a person can receive: the team kinds if they are in a team, the committee's if they hold a seat."""
    roles = viewer_roles(user=user)
    kinds: list[str] = []
    if roles.team_ids:
        kinds += TEAM_KINDS
    if roles.committee:
        kinds += COMMITTEE_KINDS
    return kinds


def notification_opt_outs(*, user: User) -> set[str]:
    """The kinds the person opted out of on their profile page."""
    return set(NotificationOptOut.objects.filter(user=user).values_list("kind", flat=True))
