"""The dashboards' sums and their shapes: who may see what, the filter, `Table`, and one query per raw sum.

The dashboards page's charts are built from them in `overview`; the capacity, team and monthly pages use them too.

Who sees what (`dashboard_scope`):
- committee members: every chart, every team;
- anyone else signed in: the pool charts (utilization, queue wait, demand vs capacity: facts about
  shared machines, whose published windows everyone can already read), and the team charts
  (granted vs used, fair share) for their own teams only; never the distribution of members' scores.

Conventions, the same in every table:
- a week is an ISO week in the committee's time zone; a usage record counts in the week its period
  starts in (as the fairness criterion counts it);
- decided GPU-hours are what the committee granted in finalized weeks (GPUs granted × the request's
  duration, as committee.selectors.request_outcome_map counts them); placed GPU-hours are those of
  the windows the current plans hold (a window a correction withdrew does not count), in the week of
  their plan. The two differ when the engine shortened, demoted or could not place a grant;
- requested GPU-hours are GPUs × hours of the week's submitted or decided requests;
- capacity is the pool's GPUs × the week's hours; "allocatable" leaves out the cold standby, as the
  weekly review does;
- means of utilization and queue wait are weighted by GPU-hours used;
- a number nobody reported (a week not over yet) is empty, not zero;
- a sum across pools (a team's week, the demand vs capacity totals) is in the common unit, A100-equivalent GPU-hours:
  each pool's GPU-hours × its billing weight in force that week (`pool.{pool}.billing_weight`, governed), and its
  column says so; a figure of one pool (utilization, queue wait) stays in that pool's own GPU-hours.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Count, DecimalField, F, QuerySet, Sum
from django.db.models.functions import Coalesce, TruncWeek

from allocations import selectors as allocation_selectors
from allocations.models import AllocationWindow, Cluster, Department, GpuPool, Team, UsageRecord
from committee import selectors as committee_selectors
from committee import weeks
from committee.models import (
    PLACING_OUTCOMES,
    Decision,
    GpuRequest,
    RequestStatus,
)

Viewer = User | AnonymousUser
HUNDRED = Decimal(100)
MAX_WEEKS = 52
REQUESTED_STATUSES = (RequestStatus.SUBMITTED, RequestStatus.DECIDED)


def q(value: Decimal | float | int | None, places: int = 1) -> Decimal | None:
    """Round half away from zero to `places` decimals: every number the dashboards show goes through here."""
    if value is None:
        return None
    return Decimal(str(value)).quantize(Decimal(1).scaleb(-places), ROUND_HALF_UP)


def pct(part: Decimal | None, whole: Decimal | None) -> Decimal | None:
    if part is None or not whole:
        return None
    return q(HUNDRED * Decimal(part) / Decimal(whole))


@dataclass(frozen=True)
class Column:
    key: str
    label: str


@dataclass(frozen=True)
class Table:
    """One chart's numbers: what the chart draws, the table view shows and the CSV holds."""

    key: str
    title: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[Any, ...], ...]
    note: str = ""

    def column(self, key: str) -> list[Any]:
        index = [c.key for c in self.columns].index(key)
        return [row[index] for row in self.rows]

    def as_dicts(self) -> list[dict[str, Any]]:
        keys = [c.key for c in self.columns]
        return [dict(zip(keys, row, strict=True)) for row in self.rows]


@dataclass(frozen=True)
class DashboardScope:
    """Who looks: a committee member sees every team; anyone else their own teams' numbers."""

    committee: bool
    teams: tuple[Team, ...]
    # Sums two charts share (the teams' and the departments' GPU-hours), computed once: a scope lives one request.
    shared: dict[Any, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def team_ids(self) -> set[int]:
        return {team.pk for team in self.teams}

    @property
    def department_ids(self) -> set[int]:
        """The departments of the teams the viewer sees (a department filter offers these)."""
        return {team.department_id for team in self.teams if team.department_id is not None}


def dashboard_scope(*, viewer: Viewer) -> DashboardScope:
    """Who looks, with each team's department (the team tables show it; no query per row)."""
    if committee_selectors.user_is_committee(user=viewer):
        teams = Team.objects.select_related("department").order_by("name")
        return DashboardScope(committee=True, teams=tuple(teams))
    mine = committee_selectors.team_list_for_user(user=viewer).select_related("department")
    return DashboardScope(committee=False, teams=tuple(mine))


def department_name(team: Team) -> str:
    """The team's department as a table shows it: its name, "" for a team in none."""
    return team.department.name if team.department is not None else ""


@dataclass(frozen=True)
class DashboardFilter:
    """The weeks (ascending ISO weeks) and, optionally, one cluster, one pool, one department, one team."""

    weeks: tuple[str, ...]
    cluster: Cluster | None = None
    pool: GpuPool | None = None
    team: Team | None = None
    department: Department | None = None

    @property
    def since(self) -> datetime:
        return weeks.week_bounds(self.weeks[0])[0]

    @property
    def until(self) -> datetime:
        return weeks.week_bounds(self.weeks[-1])[1]

    def pools(self) -> QuerySet[GpuPool]:
        pools = GpuPool.objects.select_related("cluster").order_by("cluster__slug", "slug")
        if self.cluster is not None:
            pools = pools.filter(cluster=self.cluster)
        if self.pool is not None:
            pools = pools.filter(pk=self.pool.pk)
        return pools


def week_range(*, first: str, last: str) -> tuple[str, ...]:
    """Every ISO week from `first` to `last`, both included. ValueError when reversed or longer than MAX_WEEKS."""
    start, end = weeks.parse_week(first), weeks.parse_week(last)
    if end < start:
        raise ValueError("the first week comes after the last")
    count = (end - start).days // 7 + 1
    if count > MAX_WEEKS:
        raise ValueError(f"at most {MAX_WEEKS} weeks")
    return tuple(weeks.week_label(start + timedelta(weeks=i)) for i in range(count))


def week_hours(week: str) -> Decimal:
    """Hours in a committee-time week: 168, or 167/169 across a daylight-saving change."""
    start, end = weeks.week_bounds(week)
    return Decimal(int((end - start).total_seconds())) / 3600


def team_ids_for(*, scope: DashboardScope, filters: DashboardFilter) -> set[int]:
    """The teams a team chart shows: the chosen team, else every team the viewer may see; of the chosen department's
    teams only, when one is chosen."""
    team_ids = {filters.team.pk} & scope.team_ids if filters.team is not None else scope.team_ids
    if filters.department is not None:
        team_ids = {team.pk for team in scope.teams if team.department_id == filters.department.pk} & team_ids
    return team_ids


# --- the raw sums (one query each) ---------------------------------------------------------------


def decided_gpu_hours(
    *, filters: DashboardFilter, team_ids: Iterable[int] | None = None
) -> dict[tuple[str, int, int], Decimal]:
    """GPU-hours the committee granted per (week, team id, pool id): every outcome that places (PLACING_OUTCOMES:
    grants, partial grants, alternatives granted) of finalized weeks (the request is "decided"), GPUs granted × the
    request's duration."""
    decisions = Decision.objects.filter(
        cycle__week__in=filters.weeks,
        outcome__in=PLACING_OUTCOMES,
        request__status=RequestStatus.DECIDED,
        request__pool__in=filters.pools(),
    )
    if team_ids is not None:
        decisions = decisions.filter(request__team_id__in=list(team_ids))
    rows = (
        decisions.values("cycle__week", "request__team_id", "request__pool_id")
        .annotate(hours=Sum(Coalesce("granted_gpu_count", "requested_gpu_count") * F("request__duration_hours")))
        .order_by()
    )
    return {
        (row["cycle__week"], row["request__team_id"], row["request__pool_id"]): Decimal(row["hours"]) for row in rows
    }


def placed_gpu_hours(
    *, filters: DashboardFilter, team_ids: Iterable[int] | None = None
) -> dict[tuple[str, int, int], Decimal]:
    """GPU-hours of the live windows per (week, team id, pool id)."""
    windows = AllocationWindow.objects.filter(
        week__in=filters.weeks, withdrawal__isnull=True, pool__in=filters.pools()
    )
    if team_ids is not None:
        windows = windows.filter(team_id__in=list(team_ids))
    totals: dict[tuple[str, int, int], Decimal] = {}
    for week, team_id, pool_id, gpus, start, end in windows.values_list(
        "week", "team_id", "pool_id", "gpu_count", "start", "end"
    ):
        key = (week, team_id, pool_id)
        totals[key] = totals.get(key, Decimal(0)) + gpus * Decimal(int((end - start).total_seconds())) / 3600
    return totals


@dataclass(frozen=True)
class UsageSum:
    used_gpu_hours: Decimal
    utilization_weighted: Decimal  # Σ GPU-hours × utilization %
    wait_weighted: Decimal  # Σ GPU-hours × queue wait
    wait_plain: Decimal  # Σ queue wait (for records with no GPU-hours)
    records: int


def usage_sums(
    *, filters: DashboardFilter, team_ids: Iterable[int] | None = None
) -> dict[tuple[str, int, int], UsageSum]:
    """Usage per (week, team id, pool id), the week being that of the record's start in committee time."""
    records = UsageRecord.objects.filter(
        period_start__gte=filters.since, period_start__lt=filters.until, pool__in=filters.pools()
    )
    if team_ids is not None:
        records = records.filter(team_id__in=list(team_ids))
    decimal: DecimalField[Decimal, Decimal] = DecimalField(max_digits=20, decimal_places=4)
    rows = (
        records.annotate(week_start=TruncWeek("period_start", tzinfo=weeks.committee_zone()))
        .values("week_start", "team_id", "pool_id")
        .annotate(
            used=Sum("gpu_hours_used"),
            utilization=Sum(F("gpu_hours_used") * F("mean_utilization_pct"), output_field=decimal),
            wait=Sum(F("gpu_hours_used") * F("mean_queue_wait_minutes"), output_field=decimal),
            wait_plain=Sum("mean_queue_wait_minutes"),
            records=Count("id"),
        )
        .order_by()
    )
    zone = weeks.committee_zone()
    return {
        (weeks.week_label(row["week_start"].astimezone(zone).date()), row["team_id"], row["pool_id"]): UsageSum(
            used_gpu_hours=Decimal(row["used"]),
            utilization_weighted=Decimal(row["utilization"]),
            wait_weighted=Decimal(row["wait"]),
            wait_plain=Decimal(row["wait_plain"]),
            records=row["records"],
        )
        for row in rows
    }


def requested_gpu_hours(
    *, filters: DashboardFilter, team_ids: Iterable[int] | None = None
) -> dict[tuple[str, int], Decimal]:
    """GPU-hours asked for per (week, pool id) by the weeks' submitted or decided requests."""
    requests = GpuRequest.objects.filter(
        cycle__week__in=filters.weeks, status__in=REQUESTED_STATUSES, pool__in=filters.pools()
    )
    if team_ids is not None:
        requests = requests.filter(team_id__in=list(team_ids))
    rows = (
        requests.values("cycle__week", "pool_id")
        .annotate(hours=Sum(F("gpu_count") * F("duration_hours")))
        .order_by()
    )
    return {(row["cycle__week"], row["pool_id"]): Decimal(row["hours"]) for row in rows}


def billing_weights(*, pool_ids: Iterable[int], weeks: Iterable[str]) -> dict[tuple[int, str], Decimal]:
    """Each (pool id, ISO week)'s billing weight in force that week: A100-equivalents of one of its GPU-hours.
    Two queries (allocations.selectors.usage_counted_factors, as the fair share reads them)."""
    factors = allocation_selectors.usage_counted_factors(keys={(p, w) for p in pool_ids for w in weeks})
    return {key: weight for key, (weight, _lent) in factors.items()}


def in_common_unit(
    sums: dict[tuple[str, int, int], Decimal], weights: dict[tuple[int, str], Decimal]
) -> dict[tuple[str, int, int], Decimal]:
    """(week, team id, pool id) → GPU-hours, as A100-equivalent GPU-hours (× the pool's weight of the week)."""
    return {(week, team, pool): hours * weights[(pool, week)] for (week, team, pool), hours in sums.items()}


def decimal_sum(values: Iterable[Decimal]) -> Decimal:
    return sum(values, Decimal(0))


def grouped(items: Iterable[tuple[tuple[Any, ...], Any]], key: Any) -> dict[Any, list[Any]]:
    """The values of `items` grouped by `key(their tuple key)`, in one pass."""
    groups: dict[Any, list[Any]] = {}
    for item_key, value in items:
        groups.setdefault(key(item_key), []).append(value)
    return groups
