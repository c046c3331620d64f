"""Requests and pools as the viewer may see them."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import Prefetch, QuerySet
from django.http import Http404
from django.utils import timezone

from allocations import selectors as allocation_selectors
from allocations.models import Department, GpuPool, Team
from committee import weeks
from committee.models import (
    CycleStatus,
    Decision,
    DecisionOutcome,
    GpuRequest,
    RequestPoolOption,
    RequestStatus,
    ReviewCycle,
)
from committee.selectors.people import Viewer, viewer_roles
from governed.params import POOL_PREFIX, billing_weight
from governed.selectors import policy_values


def cycle_open_for_intake(*, now: datetime | None = None) -> ReviewCycle | None:
    """The cycle teams file into at `now` (default: now): the earliest open cycle whose intake has not closed.

    A cycle still marked open after its closing time (the clock has not run yet, its broker was down) is not
    it: teams are not sent to file into a week whose intake is over.
    """
    now = now or timezone.now()
    return (ReviewCycle.objects.filter(status=CycleStatus.OPEN, intake_closes_at__gt=now)
            .order_by("starts_at").first())


def pool_list() -> QuerySet[GpuPool]:
    return GpuPool.objects.select_related("cluster").order_by("cluster__name", "slug")


def _request_queryset() -> QuerySet[GpuRequest]:
    return GpuRequest.objects.select_related(
        "team", "cycle", "pool", "pool__cluster", "usage_report", "impact_forecast", "submitted_by", "created_by"
    ).prefetch_related(Prefetch("alternatives"), Prefetch("pool_options__pool__cluster"))


def pool_options_prefetch(lookup: str = "request__pool_options") -> Prefetch:
    """A request's other pools with their pools and clusters, in one query (`decision_demand` reads them)."""
    return Prefetch(lookup, queryset=RequestPoolOption.objects.select_related("pool__cluster"))


def pool_option_default(*, pool: GpuPool, other: GpuPool, gpu_count: int, duration_hours: int,
                        values: Mapping[str, Any]) -> tuple[int, int]:
    """The conversion offered for running a request of `pool` on `other`: the same GPUs, the hours scaled by the
    pools' relative performance (their billing weights in `values`, A100-equivalents), rounded up, at least 1."""
    own, theirs = billing_weight(values, pool.key), billing_weight(values, other.key)
    hours = math.ceil(Decimal(duration_hours) * own / theirs) if theirs > 0 else duration_hours
    return gpu_count, max(1, hours)


def pool_billing_weights(*, week: str) -> list[tuple[GpuPool, Decimal]]:
    """Every pool with its billing weight in `week` (A100-equivalents of one GPU-hour): the pools' relative
    performance the request form offers its conversions from. Two queries."""
    values = policy_values(week=week, prefix=POOL_PREFIX)
    return [(pool, billing_weight(values, pool.key).normalize()) for pool in pool_list()]


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


def request_list_for_team_member(
    *, viewer: Viewer, department: Department | None = None, team: Team | None = None
) -> QuerySet[GpuRequest]:
    """The team portal: only the viewer's own teams, even for committee members; of those, a department's, one
    team's, when given."""
    if not viewer.is_authenticated:
        return GpuRequest.objects.none()
    requests = _request_queryset().filter(team_id__in=viewer_roles(user=viewer).team_ids)
    if department is not None:
        requests = requests.filter(team__department=department)
    if team is not None:
        requests = requests.filter(team=team)
    return requests.order_by("-cycle__starts_at", "team__name", "id")


def request_active_on_pool(*, team: Team, pool: GpuPool, cycle: ReviewCycle) -> GpuRequest | None:
    """The team's weekly request on `pool` in `cycle` that is not withdrawn (at most one: a database rule)."""
    return (
        GpuRequest.objects.filter(team=team, pool=pool, cycle=cycle, is_emergency=False)
        .exclude(status=RequestStatus.WITHDRAWN)
        .first()
    )


def request_active_by_team_pool(*, teams: Iterable[Team], cycle: ReviewCycle) -> dict[tuple[int, int], GpuRequest]:
    """The teams' active weekly requests in `cycle`, by (team id, pool id): the new-request page's notices."""
    rows = (
        GpuRequest.objects.filter(team__in=list(teams), cycle=cycle, is_emergency=False)
        .exclude(status=RequestStatus.WITHDRAWN)
        .select_related("team", "pool", "pool__cluster")
        .order_by("team__name", "pool__cluster__name", "pool__slug")
    )
    return {(r.team_id, r.pool_id): r for r in rows}


def request_copy_sources(*, viewer: Viewer, cycle: ReviewCycle) -> list[GpuRequest]:
    """What the viewer's teams can start a request of `cycle` from: each team's latest weekly request on each
    pool in an earlier week (not withdrawn), newest week first; not on a pool the team already has a request
    on in `cycle` (it edits that one). Two queries."""
    rows = (
        request_list_for_team_member(viewer=viewer)
        .filter(cycle__starts_at__lt=cycle.starts_at, is_emergency=False)
        .exclude(status=RequestStatus.WITHDRAWN)
        .order_by("-cycle__starts_at", "team__name", "pool__slug", "-id")
    )
    taken = set(
        GpuRequest.objects.filter(team_id__in=viewer_roles(user=viewer).team_ids, cycle=cycle, is_emergency=False)
        .exclude(status=RequestStatus.WITHDRAWN)
        .values_list("team_id", "pool_id")
    )
    latest: dict[tuple[int, int], GpuRequest | None] = dict.fromkeys(taken)
    for row in rows[:200]:  # a team's few pools: the newest rows hold every latest one
        latest.setdefault((row.team_id, row.pool_id), row)
    return [row for row in latest.values() if row is not None]


@dataclass(frozen=True)
class RequestCopy:
    """A request of an earlier week as the initial data of a new one in `cycle` (nothing is saved).

    The window and the deadline keep their weekday and time, counted from the new week's Monday; the
    window is clipped to the new week (`clipped` then says so).
    """

    source: GpuRequest
    fields: dict[str, Any]
    forecast: dict[str, Any]
    usage: dict[str, Any]
    alternatives: list[dict[str, Any]]
    clipped: bool
    pool_options: list[dict[str, Any]] = field(default_factory=list)


COPIED_FIELDS = (
    "pool", "title", "gpu_count", "min_gpu_count", "duration_hours", "preemptible_ok", "baseline_gpu_hours",
    "slip_consequence",
)


def request_copy(*, source: GpuRequest, cycle: ReviewCycle) -> RequestCopy:
    """`source`'s fields and evidence moved into `cycle` (request_copy_sources; request_carry)."""
    fields: dict[str, Any] = {name: getattr(source, name) for name in COPIED_FIELDS}
    from_week, to_week = source.cycle.week, cycle.week
    start = weeks.moment_into_week(source.earliest_start, from_week=from_week, to_week=to_week)
    end = weeks.moment_into_week(source.latest_end, from_week=from_week, to_week=to_week)
    unclipped = (
        weeks.moment_into_week(source.earliest_start, from_week=from_week, to_week=to_week, clip=False),
        weeks.moment_into_week(source.latest_end, from_week=from_week, to_week=to_week, clip=False),
    )
    fields.update(earliest_start=start, latest_end=end)
    fields["deadline"] = (
        weeks.moment_into_week(source.deadline, from_week=from_week, to_week=to_week, clip=False)
        if source.deadline is not None else None
    )
    impact = getattr(source, "impact_forecast", None)
    forecast = {name: getattr(impact, name) for name in FORECAST_COPIED} if impact is not None else {}
    report = getattr(source, "usage_report", None)
    usage = {name: getattr(report, name) for name in USAGE_COPIED} if report is not None else {}
    alternatives = [{name: getattr(row, name) for name in ALTERNATIVE_COPIED} for row in source.alternatives.all()]
    pool_options = [{"pool": row.pool, "gpu_count": row.gpu_count, "duration_hours": row.duration_hours}
                    for row in source.pool_options.all()]
    return RequestCopy(
        source=source, fields=fields, forecast=forecast, usage=usage, alternatives=alternatives,
        clipped=(start, end) != unclipped, pool_options=pool_options,
    )


FORECAST_COPIED = ("kind", "estimated_value", "value_unit", "confidence", "narrative")
USAGE_COPIED = ("gpu_hours_granted", "gpu_hours_used", "mean_utilization_pct", "notes")
ALTERNATIVE_COPIED = ("description", "gpu_hours", "quality_change", "cost_estimate", "feasible")


@dataclass(frozen=True)
class CarryOffer:
    """A deferred request its team may carry into `cycle`'s intake; `carried` is the draft it already made,
    `blocked_by` the team's own request on the same pool in `cycle` (edit that one instead)."""

    cycle: ReviewCycle
    carried: GpuRequest | None
    blocked_by: GpuRequest | None = None


def week_before(cycle: ReviewCycle) -> str:
    """The ISO week before `cycle`'s: a request deferred there is carried into `cycle` (request_carry)."""
    return weeks.week_label(weeks.parse_week(cycle.week) - timedelta(days=7))


def request_carry_offers(*, requests: Iterable[GpuRequest], cycle: ReviewCycle | None) -> dict[int, CarryOffer]:
    """Of `requests`, those deferred in the finalized or published week right before `cycle`, by id: what the
    portal and the request page offer to carry into `cycle` (committee.services.request_carry). Three
    queries at most."""
    if cycle is None:
        return {}
    previous = week_before(cycle)
    rows = {r.pk: r for r in requests if r.cycle.week == previous}
    if not rows:
        return {}
    deferred = set(
        Decision.objects.filter(
            request__in=list(rows), outcome=DecisionOutcome.DEFER,
            cycle__status__in=[CycleStatus.FINALIZED, CycleStatus.PUBLISHED],
        ).values_list("request_id", flat=True)
    )
    if not deferred:
        return {}
    carried = {r.carried_from_id: r for r in GpuRequest.objects.filter(carried_from__in=deferred, cycle=cycle)}
    active = request_active_by_team_pool(teams=[rows[pk].team for pk in deferred], cycle=cycle)
    return {
        pk: CarryOffer(
            cycle=cycle, carried=carried.get(pk),
            blocked_by=active.get((rows[pk].team_id, rows[pk].pool_id)) if pk not in carried else None,
        )
        for pk in deferred
    }


def pool_standard_gpus(*, pool: GpuPool) -> int:
    """The GPUs of `pool` that standard (not preemptible) windows may hold: its GPUs less the burst reserve and the
    cold standby, by the engine's own reserve rule (`allocations.selectors.pool_week_capacity`)."""
    return allocation_selectors.pool_week_capacity(pool=pool, hours=1).standard_gpu_hours


def pool_standard_gpus_list() -> list[tuple[GpuPool, int]]:
    """Every pool with its standard GPUs, as `pool_standard_gpus` (one query): the request form lists them."""
    return [(pool, capacity.standard_gpu_hours) for pool, capacity in allocation_selectors.pool_week_capacity_list(
        hours=1)]


def request_capacity_warning(*, gpu_request: GpuRequest) -> dict[str, Any] | None:
    """When a request that may not run preemptible asks for more GPUs than its pool's standard capacity, what the
    engine can place at most (it is shortened every week otherwise); None when it fits or may run preemptible."""
    if gpu_request.preemptible_ok or not gpu_request.pool_id:
        return None
    standard = pool_standard_gpus(pool=gpu_request.pool)
    if gpu_request.gpu_count <= standard:
        return None
    return {"asked": gpu_request.gpu_count, "standard": standard, "pool": gpu_request.pool.key}
