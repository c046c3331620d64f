"""Reads of the allocations app, already scoped to who asks."""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db.models import (
    Case,
    Count,
    DecimalField,
    F,
    Max,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    Value,
    When,
)
from django.utils import timezone

from allocations import engine
from allocations.models import (
    AllocationPlan,
    AllocationWindow,
    Cluster,
    ClusterAccount,
    ElasticAction,
    ElasticActionKind,
    GpuPool,
    PlanExplanation,
    Team,
    UsageRecord,
)
from governed.params import POOL_FIELDS, POOL_PREFIX, as_int
from governed.selectors import policy_values


def usage_gpu_hours_by_team_per_week(*, until: datetime, weeks: int) -> list[dict[int, Decimal]]:
    """GPU-hours used per team id in each of the `weeks` whole weeks before `until`, latest week first.

    A record counts in the week its period starts in: index 0 holds [until − 1 week, until). Weeks
    step on the local clock (settings.TIME_ZONE), so across a change of summer time every week still
    begins at `until`'s local time of day and lasts 167 or 169 hours. One query.
    """
    local_until = until.astimezone(timezone.get_default_timezone())
    # Aware arithmetic within one zone is wall-clock arithmetic: each bound keeps the local time of day.
    bounds = [(local_until - timedelta(weeks=k)).astimezone(UTC) for k in range(weeks, -1, -1)]  # oldest first
    rows = (
        UsageRecord.objects.filter(period_start__gte=bounds[0], period_start__lt=bounds[-1])
        .values("team_id", "period_start")
        .annotate(total=Sum("gpu_hours_used"))
    )
    buckets: list[dict[int, Decimal]] = [{} for _week in range(weeks)]
    for row in rows:
        index = weeks - bisect.bisect_right(bounds, row["period_start"])
        bucket = buckets[index]
        bucket[row["team_id"]] = bucket.get(row["team_id"], Decimal(0)) + row["total"]
    return buckets


# --- capacity ---------------------------------------------------------------------------------


def pool_reserves_for_week(*, week: str, pools: Iterable[GpuPool]) -> list[GpuPool]:
    """`pools` as the engine places on them in `week`: each one's burst reserve and cold standby set (in memory,
    never saved) to the values in force that week (the one store, governed); a pool the store has no value for keeps
    its own. One query."""
    stored = policy_values(week=week, prefix=POOL_PREFIX)
    out = list(pools)
    for pool in out:
        for name in POOL_FIELDS:
            value = stored.get(f"{POOL_PREFIX}{pool.key}.{name}")
            if value is not None:
                setattr(pool, name, as_int(value))
    return out


def pool_capacity(*, pool: GpuPool) -> engine.PoolCapacity:
    """A pool as the engine's input: its GPUs and the reserves held back from them."""
    return engine.PoolCapacity(
        key=pool.key,
        gpu_count=pool.gpu_count,
        gpu_model=pool.gpu_model,
        burst_reserve_pct=pool.burst_reserve_pct,
        standby_pct=pool.standby_pct,
    )


def pool_week_capacity(*, pool: GpuPool, hours: int) -> engine.WeekCapacity:
    """The GPU-hours the engine can place on a pool over a week of `hours` hours (standard + burst).

    Every page, API and command that shows a pool's capacity reads it here, so it is what the
    engine places, by the engine's own reserve rule.
    """
    return engine.week_capacity(pool_capacity(pool=pool), hours=hours)


def pool_week_capacity_list(*, hours: int) -> list[tuple[GpuPool, engine.WeekCapacity]]:
    """Every pool (by cluster name, then slug) with its week's capacity, as `pool_week_capacity`. One query."""
    pools = GpuPool.objects.select_related("cluster").order_by("cluster__name", "slug")
    return [(pool, pool_week_capacity(pool=pool, hours=hours)) for pool in pools]


# --- published windows ------------------------------------------------------------------------


@dataclass(frozen=True)
class WindowSnapshot:
    """A cluster's windows as of one point of the change sequence.

    `windows` (unordered, unfiltered by pool/team/time) holds the windows live at `cursor` in
    the scope asked for and, with `since`, the windows withdrawn after `since`; each row is
    annotated with `withdrawn_seq` (None when live). `versions` maps each week in scope to
    its current version as of `cursor`; `plan_version` is the version of the plan published
    last among them. Windows are never edited, so reading `windows` later, in other
    statements, still gives exactly this snapshot.
    """

    cluster: Cluster
    cursor: int
    plan_version: int | None
    versions: dict[str, int]
    windows: QuerySet[AllocationWindow]


class SnapshotUnavailable(ValueError):
    """`as_of` names a change that has not happened yet."""


def change_seq_latest() -> int:
    """The change sequence of the latest published plan (0 before any)."""
    return AllocationPlan.objects.aggregate(top=Max("change_seq"))["top"] or 0


def window_snapshot(
    *,
    cluster: Cluster,
    week: str | None = None,
    since: int | None = None,
    as_of: int | None = None,
    ends_after: datetime | None = None,
) -> WindowSnapshot:
    """The windows of `cluster` that the current plans hold, read as of one change.

    Scope: the windows of `week`, or, without it, those that end after `ends_after`
    (default: now). `as_of` pins the snapshot to an earlier change (the windows API's page
    links carry it, so the pages of one list never mix two plans); by default the latest.
    With `since`, only what changed after it: windows published after `since` that are still
    live, and windows live at `since` that a later version withdrew.

    One query for the plans and the cursor; the returned queryset is lazy.
    """
    plans = AllocationPlan.objects.all()
    if week is not None:
        plans = plans.filter(week=week)
    else:
        ends_after = ends_after or timezone.now()
        plans = plans.filter(week_ends_at__gt=ends_after)
    if as_of is not None:
        plans = plans.filter(change_seq__lte=as_of)
    rows = list(
        plans.annotate(top=Subquery(AllocationPlan.objects.order_by("-change_seq").values("change_seq")[:1]))
        .order_by("change_seq")
        .values_list("week", "version", "change_seq", "top")
    )
    top = rows[0][3] if rows else change_seq_latest()
    if as_of is not None and as_of > top:
        raise SnapshotUnavailable(f"as_of {as_of} is ahead of the latest change {top}")
    cursor = top if as_of is None else as_of
    versions = {plan_week: version for plan_week, version, _seq, _top in rows}  # ascending seq: last wins
    plan_version = rows[-1][1] if rows else None

    windows = AllocationWindow.objects.filter(cluster=cluster, created_seq__lte=cursor)
    windows = windows.filter(week=week) if week is not None else windows.filter(end__gt=ends_after)
    live = Q(withdrawal__isnull=True) | Q(withdrawal__change_seq__gt=cursor)
    if since is None:
        windows = windows.filter(live)
    else:
        added = live & Q(created_seq__gt=since)
        withdrawn = Q(created_seq__lte=since, withdrawal__change_seq__gt=since, withdrawal__change_seq__lte=cursor)
        windows = windows.filter(added | withdrawn)
    windows = windows.annotate(withdrawn_seq=Case(
        When(withdrawal__change_seq__lte=cursor, then=F("withdrawal__change_seq")), default=None
    ))
    return WindowSnapshot(
        cluster=cluster, cursor=cursor, plan_version=plan_version, versions=versions, windows=windows
    )


@dataclass(frozen=True)
class WindowPage:
    rows: list[tuple[Any, ...]]
    more_before: bool
    more_after: bool


def window_page(
    *, windows: QuerySet[Any], size: int, after: int | None = None, before: int | None = None
) -> WindowPage:
    """One page of `windows` (a values_list whose first column is the id), keyed on the id.

    Keyset, not offset: a window that ends between two page reads drops out without shifting
    the others, so no window is skipped. One query (it reads one row more than `size`).
    """
    if before is not None:
        rows = list(windows.filter(id__lt=before).order_by("-id")[: size + 1])
        return WindowPage(rows=rows[:size][::-1], more_before=len(rows) > size, more_after=bool(rows))
    if after is not None:
        windows = windows.filter(id__gt=after)
    rows = list(windows.order_by("id")[: size + 1])
    return WindowPage(rows=rows[:size], more_before=after is not None and bool(rows), more_after=len(rows) > size)


@dataclass(frozen=True)
class SchedulerReference:
    """What a window's JSON shows of its pool, team and account: read once per list."""

    pools: dict[int, tuple[str, str, str, int]]  # id -> (slug, gpu_model, scheduler_label, gpus_per_node)
    teams: dict[int, tuple[str, str | None]]  # id -> (slug, account on the cluster or None)
    # window id -> (GPUs offered to preemptible work, "idle" or "night_open"): the elastic policy's offers in force
    offers: dict[int, tuple[int, str]] = field(default_factory=dict)

    def fingerprint(self) -> str:
        """Changes whenever anything shown of a pool, team, account or a window's offer changes."""
        payload = repr((sorted(self.pools.items()), sorted(self.teams.items()), sorted(self.offers.items())))
        return hashlib.sha256(payload.encode()).hexdigest()


def scheduler_reference(*, cluster: Cluster) -> SchedulerReference:
    """The cluster's pools and every team with its account on the cluster. Two queries."""
    pools = {
        pk: (slug, model, label, per_node)
        for pk, slug, model, label, per_node in GpuPool.objects.filter(cluster=cluster)
        .order_by()  # the default ordering would join the cluster table for nothing
        .values_list("pk", "slug", "gpu_model", "scheduler_label", "gpus_per_node")
    }
    account = ClusterAccount.objects.filter(cluster=cluster, team=OuterRef("pk")).order_by().values("account")[:1]
    teams = {
        pk: (slug, acct)
        for pk, slug, acct in Team.objects.annotate(acct=Subquery(account))
        .order_by()
        .values_list("pk", "slug", "acct")
    }
    return SchedulerReference(pools=pools, teams=teams, offers=window_offers(cluster=cluster))


def window_offers(*, cluster: Cluster) -> dict[int, tuple[int, str]]:
    """Window id -> (GPUs, reason) the elastic policy offers to preemptible work now, on the cluster. One query.

    Offers come from the lending actions in force (IDLE with GPUs, NIGHT_OPEN); the evaluation never gives
    one window both, and should two be in force the larger counts.
    """
    offers: dict[int, tuple[int, str]] = {}
    rows = (
        ElasticAction.objects.filter(
            pool__cluster=cluster, ended_at__isnull=True, window__isnull=False, gpus__gt=0,
            kind__in=[ElasticActionKind.IDLE, ElasticActionKind.NIGHT_OPEN],
        )
        .order_by("id")
        .values_list("window_id", "gpus", "kind")
    )
    for window_id, gpus, kind in rows:
        if window_id not in offers or offers[window_id][0] < gpus:
            offers[window_id] = (gpus, kind)
    return offers


def window_detail(*, cluster: Cluster, window_id: int) -> tuple[QuerySet[AllocationWindow], dict[str, int]] | None:
    """One window of `cluster` (a one-row queryset annotated with `withdrawn_seq`) and its week's version."""
    window = AllocationWindow.objects.filter(cluster=cluster, pk=window_id).values_list("week", flat=True).first()
    if window is None:
        return None
    plan = plan_for_week(week=window)
    versions = {window: plan.version} if plan else {}
    rows = AllocationWindow.objects.filter(pk=window_id).annotate(withdrawn_seq=F("withdrawal__change_seq"))
    return rows, versions


# --- pages ------------------------------------------------------------------------------------


def plan_week_list(*, limit: int = 12) -> list[str]:
    """The weeks that have a published plan, latest week first."""
    return list(
        AllocationPlan.objects.order_by("-week").values_list("week", flat=True).distinct()[:limit]
    )


def plan_for_week(*, week: str, version: int | None = None) -> AllocationPlan | None:
    """A week's plan: the given version, or the current (highest) one."""
    plans = AllocationPlan.objects.filter(week=week).select_related("supersedes")
    if version is not None:
        return plans.filter(version=version).first()
    return plans.order_by("-version").first()


def plan_week_current(*, now: datetime | None = None) -> str | None:
    """The week whose plan covers `now`, else the latest week with a plan."""
    now = now or timezone.now()
    covering = AllocationPlan.objects.filter(week_starts_at__lte=now, week_ends_at__gt=now).order_by("-week").first()
    if covering is not None:
        return covering.week
    latest = AllocationPlan.objects.order_by("-week").first()
    return latest.week if latest else None


def plan_window_list(*, plan: AllocationPlan) -> QuerySet[AllocationWindow]:
    """The windows `plan` holds (its own and those carried over into it), with their sync status."""
    return (
        AllocationWindow.objects.filter(week=plan.week, created_seq__lte=plan.change_seq)
        .filter(Q(withdrawal__isnull=True) | Q(withdrawal__change_seq__gt=plan.change_seq))
        .select_related("cluster", "pool__cluster", "team", "sync_status")
        .order_by("cluster__name", "pool__slug", "start", "id")
    )


def plan_withdrawn_list(*, plan: AllocationPlan) -> QuerySet[AllocationWindow]:
    """The windows of the version before `plan` that `plan` withdrew."""
    return (
        AllocationWindow.objects.filter(withdrawal__plan=plan)
        .select_related("cluster", "pool__cluster", "team")
        .order_by("cluster__name", "pool__slug", "start", "id")
    )


def plan_explanation_map(*, plan: AllocationPlan) -> dict[int, PlanExplanation]:
    return {explanation.request_ref: explanation for explanation in plan.explanations.all()}


@dataclass(frozen=True)
class RequestAllocation:
    """What the current plan gives one request: its windows and the engine's explanation."""

    plan: AllocationPlan
    explanation: PlanExplanation | None
    windows: list[AllocationWindow]


def request_allocation(*, request_ref: int) -> RequestAllocation | None:
    """The current plan of the week that last explained `request_ref`, or None if never planned.

    Three queries at most.
    """
    last = (
        PlanExplanation.objects.filter(request_ref=request_ref).select_related("plan").order_by("-plan__change_seq")
        .first()
    )
    if last is None:
        return None
    plan = plan_for_week(week=last.plan.week) or last.plan
    explanation = last if last.plan_id == plan.pk else plan.explanations.filter(request_ref=request_ref).first()
    windows = list(plan_window_list(plan=plan).filter(request_ref=request_ref))
    return RequestAllocation(plan=plan, explanation=explanation, windows=windows)


def request_allocation_map(*, request_refs: Iterable[int]) -> dict[int, RequestAllocation]:
    """`request_allocation` for many requests at once: request id -> what its week's current plan gives it.

    Requests no plan ever explained are missing from the map. Three queries, however many requests:
    every explanation of the requests (with its plan), the plans of their weeks, and the windows the
    current plans hold for them (with pool, cluster and sync status).
    """
    refs = sorted(set(request_refs))
    if not refs:
        return {}
    explanations = list(
        PlanExplanation.objects.filter(request_ref__in=refs).select_related("plan").order_by("plan__change_seq")
    )
    if not explanations:
        return {}
    latest_week: dict[int, str] = {}
    for explanation in explanations:  # ascending change_seq: the last plan to explain a request wins
        latest_week[explanation.request_ref] = explanation.plan.week
    current: dict[str, AllocationPlan] = {}
    for plan in AllocationPlan.objects.filter(week__in=set(latest_week.values())).order_by("week", "version"):
        current[plan.week] = plan  # ascending version: the highest wins
    by_plan = {(e.plan_id, e.request_ref): e for e in explanations}
    live = Q()
    for plan in current.values():
        live |= Q(week=plan.week, created_seq__lte=plan.change_seq) & (
            Q(withdrawal__isnull=True) | Q(withdrawal__change_seq__gt=plan.change_seq)
        )
    windows: dict[int, list[AllocationWindow]] = {}
    rows = (
        AllocationWindow.objects.filter(live, request_ref__in=refs)
        .select_related("cluster", "pool__cluster", "team", "sync_status")
        .order_by("start", "id")
    )
    for window in rows:
        if window.request_ref is not None and latest_week.get(window.request_ref) == window.week:
            windows.setdefault(window.request_ref, []).append(window)
    result = {}
    for ref, week in latest_week.items():
        plan = current[week]
        given = by_plan.get((plan.pk, ref))
        if given is not None:
            given.plan = plan  # display_text reads the plan's week; it is this one
        result[ref] = RequestAllocation(plan=plan, explanation=given, windows=windows.get(ref, []))
    return result


def team_window_list(
    *, team: Team, week: str | None = None, ends_after: datetime | None = None
) -> list[tuple[AllocationPlan, AllocationWindow]]:
    """A team's windows in the current plan of each week, with that plan, by start.

    The windows of `week`, or, without it, of the weeks whose plan has not ended by `ends_after`
    (default: now). Two queries: the plans of those weeks, and the windows the current ones hold.
    """
    scope = Q(week=week) if week is not None else Q(week_ends_at__gt=ends_after or timezone.now())
    plans = AllocationPlan.objects.filter(scope)
    current: dict[str, AllocationPlan] = {}
    for plan in plans.order_by("week", "version"):
        current[plan.week] = plan  # ascending version: the highest wins
    if not current:
        return []
    live = Q()
    for plan in current.values():
        live |= Q(week=plan.week, created_seq__lte=plan.change_seq) & (
            Q(withdrawal__isnull=True) | Q(withdrawal__change_seq__gt=plan.change_seq)
        )
    windows = (
        AllocationWindow.objects.filter(live, team=team)
        .select_related("cluster", "pool__cluster")
        .order_by("start", "id")
    )
    return [(current[window.week], window) for window in windows]


def pool_list_with_capacity(*, hours: int = 168) -> list[tuple[GpuPool, engine.WeekCapacity, tuple[int, int]]]:
    """Every pool with its week's capacity and its reserved GPUs (burst, standby), for the pools API. One query."""
    return [
        (pool, capacity, engine.reserved_gpus(pool_capacity(pool=pool)))
        for pool, capacity in pool_week_capacity_list(hours=hours)
    ]


# --- usage pre-fill ---------------------------------------------------------------------------


@dataclass(frozen=True)
class MeasuredUsage:
    """What the schedulers reported for one team on one pool over one period, summed."""

    gpu_hours_used: Decimal
    mean_utilization_pct: Decimal  # weighted by GPU-hours used; 0 when no GPU-hour was used
    records: int


def _measured(*, hours: Decimal | None, weighted: Decimal | None, records: int) -> MeasuredUsage:
    tenth = Decimal("0.1")
    hours_used = Decimal(hours or 0)
    utilization = Decimal(weighted or 0) / hours_used if hours_used else Decimal(0)
    return MeasuredUsage(
        gpu_hours_used=hours_used.quantize(tenth),
        mean_utilization_pct=min(Decimal(100), utilization.quantize(tenth)),
        records=records,
    )


def usage_measured_by_team_pool(
    *, periods: dict[str, tuple[datetime, datetime]], team_ids: Iterable[int], pool_ids: Iterable[int]
) -> dict[tuple[str, int, int], MeasuredUsage]:
    """The usage records of the given teams and pools, summed per (period label, team id, pool id).

    A record counts in the period its own period starts in, as the fair-share factor and the
    dashboards count it. A key is absent when nothing was reported: "not measured" is not 0.
    One query, whatever the number of periods, teams and pools.
    """
    if not periods:
        return {}
    label = Case(
        *[When(period_start__gte=since, period_start__lt=until, then=Value(key))
          for key, (since, until) in periods.items()],
        default=Value(""),
    )
    in_any = Q()
    for since, until in periods.values():
        in_any |= Q(period_start__gte=since, period_start__lt=until)
    rows = (
        UsageRecord.objects.filter(in_any, team_id__in=set(team_ids), pool_id__in=set(pool_ids))
        .annotate(period=label)
        .values("period", "team_id", "pool_id")
        .annotate(
            hours=Sum("gpu_hours_used"),
            weighted=Sum(F("gpu_hours_used") * F("mean_utilization_pct"), output_field=DecimalField()),
            records=Count("id"),
        )
        .order_by()
    )
    return {
        (row["period"], row["team_id"], row["pool_id"]): _measured(
            hours=row["hours"], weighted=row["weighted"], records=row["records"]
        )
        for row in rows
    }


def usage_report_initial(
    *, team: Team, since: datetime, until: datetime, pool: GpuPool | None = None
) -> dict[str, Decimal]:
    """A team's usage report for [since, until) from Docket's own records, for a form's initial values.

    gpu_hours_granted: GPU-hours of the team's live windows (current plans) inside the period,
    if it had any; gpu_hours_used and mean_utilization_pct (weighted by GPU-hours used) from
    the usage records whose period starts in it, if there are any. With `pool`, only that pool's
    windows and records count. Only what is known is returned: an empty dict leaves the form
    blank. Two queries.
    """
    tenth = Decimal("0.1")
    initial: dict[str, Decimal] = {}
    on_pool = Q(pool=pool) if pool is not None else Q()
    windows = list(
        AllocationWindow.objects.filter(on_pool, team=team, start__lt=until, end__gt=since, withdrawal__isnull=True)
        .values_list("gpu_count", "start", "end")
    )
    if windows:
        granted = sum(
            (gpu_count * Decimal((min(end, until) - max(start, since)).total_seconds()) / 3600
             for gpu_count, start, end in windows),
            Decimal(0),
        )
        initial["gpu_hours_granted"] = granted.quantize(tenth)
    used = UsageRecord.objects.filter(on_pool, team=team, period_start__gte=since, period_start__lt=until).aggregate(
        hours=Sum("gpu_hours_used"),
        weighted=Sum(F("gpu_hours_used") * F("mean_utilization_pct"), output_field=DecimalField()),
        records=Count("id"),
    )
    if used["hours"] is not None:
        measured = _measured(hours=used["hours"], weighted=used["weighted"], records=used["records"])
        initial["gpu_hours_used"] = measured.gpu_hours_used
        initial["mean_utilization_pct"] = measured.mean_utilization_pct
    return initial
