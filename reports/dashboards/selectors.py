"""The dashboards' numbers, each as a `Table`, scoped to who asks and filtered by cluster, pool, team and weeks.

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
- a number nobody reported (a week not over yet) is empty, not zero.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Count, DecimalField, F, QuerySet, Sum
from django.db.models.functions import Coalesce, TruncWeek
from django.utils.translation import gettext as _

from allocations import selectors as allocation_selectors
from allocations.models import AllocationWindow, Cluster, GpuPool, Team, UsageRecord
from committee import scoring, weeks
from committee import selectors as committee_selectors
from committee.models import (
    PLACING_OUTCOMES,
    Decision,
    FairShareSnapshot,
    GpuRequest,
    RequestStatus,
    Score,
    criterion_label,
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

    @property
    def team_ids(self) -> set[int]:
        return {team.pk for team in self.teams}


def dashboard_scope(*, viewer: Viewer) -> DashboardScope:
    if committee_selectors.user_is_committee(user=viewer):
        return DashboardScope(committee=True, teams=tuple(Team.objects.order_by("name")))
    return DashboardScope(committee=False, teams=tuple(committee_selectors.team_list_for_user(user=viewer)))


@dataclass(frozen=True)
class DashboardFilter:
    """The weeks (ascending ISO weeks) and, optionally, one cluster, one pool, one team."""

    weeks: tuple[str, ...]
    cluster: Cluster | None = None
    pool: GpuPool | None = None
    team: Team | None = None

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


def _team_ids(*, scope: DashboardScope, filters: DashboardFilter) -> set[int]:
    """The teams a team chart shows: the chosen team, else every team the viewer may see."""
    if filters.team is not None:
        return {filters.team.pk} & scope.team_ids
    return scope.team_ids


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


def _sum(values: Iterable[Decimal]) -> Decimal:
    return sum(values, Decimal(0))


def _group(items: Iterable[tuple[tuple[Any, ...], Any]], key: Any) -> dict[Any, list[Any]]:
    """The values of `items` grouped by `key(their tuple key)`, in one pass."""
    groups: dict[Any, list[Any]] = {}
    for item_key, value in items:
        groups.setdefault(key(item_key), []).append(value)
    return groups


# --- the charts' tables --------------------------------------------------------------------------


def granted_vs_used(*, scope: DashboardScope, filters: DashboardFilter) -> Table:
    """Per week and team: GPU-hours decided (grants), placed (windows), used (reported), used as a share of placed."""
    team_ids = _team_ids(scope=scope, filters=filters)
    decided = decided_gpu_hours(filters=filters, team_ids=team_ids)
    placed = placed_gpu_hours(filters=filters, team_ids=team_ids)
    used = usage_sums(filters=filters, team_ids=team_ids)
    teams = [team for team in scope.teams if team.pk in team_ids]
    decided_by = _group(decided.items(), lambda k: (k[0], k[1]))
    placed_by = _group(placed.items(), lambda k: (k[0], k[1]))
    used_by = _group(used.items(), lambda k: (k[0], k[1]))
    rows = []
    for week in filters.weeks:
        for team in teams:
            d = _sum(decided_by.get((week, team.pk), []))
            p = _sum(placed_by.get((week, team.pk), []))
            sums = used_by.get((week, team.pk), [])
            u = _sum(s.used_gpu_hours for s in sums) if sums else None  # None: nothing reported (yet)
            rows.append((week, team.name, q(d), q(p), q(u), pct(u, p)))
    return Table(
        key="granted-used",
        title=_("GPU-hours decided, placed and used, per team and week"),
        columns=(
            Column("week", _("Week")),
            Column("team", _("Team")),
            Column("decided_gpu_hours", _("Decided GPU-h")),
            Column("placed_gpu_hours", _("Placed GPU-h")),
            Column("used_gpu_hours", _("Used GPU-h")),
            Column("used_pct", _("Share of placed GPU-hours used %")),
        ),
        rows=tuple(rows),
        note=_("Decided: the committee's grants (GPUs × duration). Placed: the windows of the current plans. "
               "Used: what the schedulers reported."),
    )


def _pool_team_filter(*, scope: DashboardScope, filters: DashboardFilter) -> set[int] | None:
    """A pool chart counts every team's use, unless a team is chosen (one the viewer may see)."""
    if filters.team is None:
        return None
    return {filters.team.pk} & scope.team_ids


def _usage_per_week_and_pool(
    *, scope: DashboardScope, filters: DashboardFilter
) -> Iterator[tuple[str, Any, list[Any]]]:
    """(week, pool, that pool's usage sums of that week) for every week and chosen pool, in order."""
    used = usage_sums(filters=filters, team_ids=_pool_team_filter(scope=scope, filters=filters))
    used_by = _group(used.items(), lambda k: (k[0], k[2]))
    pools = list(filters.pools())
    for week in filters.weeks:
        for pool in pools:
            yield week, pool, used_by.get((week, pool.pk), [])


# Two figures are both called "utilization" elsewhere; each has its own chart and its own words here (and in
# docs/dashboards.md): the share of pool capacity used (GPU-hours used ÷ the pool's GPU-hours) and how busy the
# GPUs were while a job held them (the schedulers' figure). They never share a chart or a name.


def utilization_per_pool(*, scope: DashboardScope, filters: DashboardFilter) -> Table:
    """Per week and pool: capacity, GPU-hours used, and the share of the pool's capacity used."""
    rows = []
    for week, pool, sums in _usage_per_week_and_pool(scope=scope, filters=filters):
        hours = _sum(s.used_gpu_hours for s in sums)
        capacity = pool.gpu_count * week_hours(week)
        reported = hours if sums else None  # None: nothing reported for the week (yet)
        rows.append((week, pool.key, q(capacity), q(reported), pct(reported, capacity)))
    return Table(
        key="utilization",
        title=_("Share of pool capacity used, per pool"),
        columns=(
            Column("week", _("Week")),
            Column("pool", _("Pool")),
            Column("capacity_gpu_hours", _("Capacity GPU-h")),
            Column("used_gpu_hours", _("Used GPU-h")),
            Column("used_of_capacity_pct", _("Share of pool capacity used %")),
        ),
        rows=tuple(rows),
        note=_("GPU-hours the schedulers reported used ÷ the pool's GPU-hours (GPUs × hours of the week)."),
    )


def gpu_busy_per_pool(*, scope: DashboardScope, filters: DashboardFilter) -> Table:
    """Per week and pool: how busy the GPUs were while jobs held them, the schedulers' figure."""
    rows = []
    for week, pool, sums in _usage_per_week_and_pool(scope=scope, filters=filters):
        hours = _sum(s.used_gpu_hours for s in sums)
        mean = _sum(s.utilization_weighted for s in sums) / hours if hours else None
        rows.append((week, pool.key, q(hours if sums else None), q(mean)))
    return Table(
        key="gpu-busy",
        title=_("GPU busy time while in use, per pool"),
        columns=(
            Column("week", _("Week")),
            Column("pool", _("Pool")),
            Column("used_gpu_hours", _("Used GPU-h")),
            Column("mean_utilization_pct", _("GPU busy time %")),
        ),
        rows=tuple(rows),
        note=_("The schedulers' measure of how busy each GPU was while a job held it, weighted by GPU-hours used. "
               "It says nothing of the GPUs no job held: that is the share of pool capacity used."),
    )


def queue_wait(*, scope: DashboardScope, filters: DashboardFilter) -> Table:
    """Per week and pool: the mean queue wait the schedulers reported, weighted by GPU-hours used."""
    rows = []
    for week, pool, sums in _usage_per_week_and_pool(scope=scope, filters=filters):
        records = sum(s.records for s in sums)
        hours = _sum(s.used_gpu_hours for s in sums)
        if hours:
            mean = _sum(s.wait_weighted for s in sums) / hours
        elif records:
            mean = _sum(s.wait_plain for s in sums) / records
        else:
            mean = None
        rows.append((week, pool.key, q(mean), records))
    return Table(
        key="queue-wait",
        title=_("Queue wait per pool (minutes)"),
        columns=(
            Column("week", _("Week")),
            Column("pool", _("Pool")),
            Column("mean_queue_wait_minutes", _("Mean queue wait (min)")),
            Column("usage_records", _("Measured usage records")),
        ),
        rows=tuple(rows),
        note=_("Weighted by GPU-hours used; a measured usage record with no GPU-hours counts once."),
    )


def demand_vs_capacity(*, scope: DashboardScope, filters: DashboardFilter) -> Table:
    """Per week, over the chosen pools: GPU-hours requested, decided, placed, and the allocatable capacity."""
    team_ids = _pool_team_filter(scope=scope, filters=filters)
    requested = requested_gpu_hours(filters=filters, team_ids=team_ids)
    decided = decided_gpu_hours(filters=filters, team_ids=team_ids)
    placed = placed_gpu_hours(filters=filters, team_ids=team_ids)
    pools = allocation_selectors.pool_reserves_now(filters.pools())
    asked_by = _group(requested.items(), lambda k: k[0])
    decided_by = _group(decided.items(), lambda k: k[0])
    placed_by = _group(placed.items(), lambda k: k[0])
    rows = []
    for week in filters.weeks:
        asked = _sum(asked_by.get(week, []))
        hours = int(week_hours(week))
        capacity = Decimal(
            sum(allocation_selectors.pool_week_capacity(pool=p, hours=hours).allocatable_gpu_hours for p in pools)
        )
        rows.append((week, q(asked), q(_sum(decided_by.get(week, []))), q(_sum(placed_by.get(week, []))),
                     q(capacity), pct(asked, capacity)))
    return Table(
        key="demand-capacity",
        title=_("Demand vs capacity per week"),
        columns=(
            Column("week", _("Week")),
            Column("requested_gpu_hours", _("Requested GPU-h")),
            Column("decided_gpu_hours", _("Decided GPU-h")),
            Column("placed_gpu_hours", _("Placed GPU-h")),
            Column("allocatable_gpu_hours", _("Allocatable GPU-h")),
            Column("demand_pct", _("Requested / allocatable %")),
        ),
        rows=tuple(rows),
        note=_(
            "Decided: the committee's grants (GPUs × duration); placed: the windows of the current plans. "
            "Allocatable: what the allocation engine can place, the pools' GPU-hours less the cold standby "
            "(in whole GPUs; the burst reserve included)."
        ),
    )


def fair_share_history(*, scope: DashboardScope, filters: DashboardFilter) -> Table:
    """Per week and team: the fair-share factor F = 2^(−U/S) the week's review ranks (or would rank) with.

    Where the week's cycle froze its factors when intake closed, those; otherwise computed now, with
    committee.scoring, from the usage reported before that week's intake closed. Fair share counts
    every pool, so the cluster and pool filters do not change it.
    """
    team_ids = _team_ids(scope=scope, filters=filters)
    frozen: dict[str, dict[int, scoring.FairShare]] = {}
    for snapshot in FairShareSnapshot.objects.filter(cycle__week__in=filters.weeks).select_related("cycle"):
        frozen.setdefault(snapshot.cycle.week, {})[snapshot.team_id] = snapshot.share()
    rows = []
    for week in filters.weeks:
        if week in frozen:
            shares, basis = frozen[week], _("frozen at intake close")
        else:
            as_of = weeks.cycle_schedule(week)["intake_closes_at"]
            shares, basis = committee_selectors.fair_share_live(as_of=as_of), _("computed")
        for team in scope.teams:
            share = shares.get(team.pk)
            if team.pk not in team_ids or share is None:
                continue
            rows.append(
                (week, team.name, q(share.factor, 3), q(100 * share.usage_share), q(100 * share.entitled_share), basis)
            )
    return Table(
        key="fair-share",
        title=_("Fair-share factor per team"),
        columns=(
            Column("week", _("Week")),
            Column("team", _("Team")),
            Column("factor", _("Factor F")),
            Column("usage_share_pct", _("Usage share U %")),
            Column("entitled_share_pct", _("Entitled share S %")),
            Column("basis", _("Basis")),
        ),
        rows=tuple(rows),
        note=_("F = 2^(−U/S): 1 for a team that used nothing, ½ for one that used exactly its share. All pools count."),
    )


def score_distribution(*, scope: DashboardScope, filters: DashboardFilter) -> Table:
    """How often each score 0–10 was given, per member-scored criterion, to the weeks' requests (committee only)."""
    if not scope.committee:
        raise PermissionError("the distribution of members' scores is the committee's")
    scores = Score.objects.filter(request__cycle__week__in=filters.weeks, request__pool__in=filters.pools())
    if filters.team is not None:
        scores = scores.filter(request__team=filters.team)
    counts = {
        (row["criterion"], row["value"]): row["n"]
        for row in scores.values("criterion", "value").annotate(n=Count("id")).order_by()
    }
    rows = [
        (criterion_label(criterion), value, counts.get((criterion, value), 0))
        for criterion in scoring.MEMBER_SCORED
        for value in range(scoring.SCORE_MIN, scoring.SCORE_MAX + 1)
    ]
    return Table(
        key="scores",
        title=_("Distribution of scores per criterion"),
        columns=(Column("criterion", _("Criterion")), Column("score", _("Score")), Column("count", _("Scores given"))),
        rows=tuple(rows),
        note=_("Members' scores of the weeks' requests; fairness is computed, not scored."),
    )


CHARTS = {
    "granted-used": granted_vs_used,
    "utilization": utilization_per_pool,
    "gpu-busy": gpu_busy_per_pool,
    "queue-wait": queue_wait,
    "demand-capacity": demand_vs_capacity,
    "fair-share": fair_share_history,
    "scores": score_distribution,
}
TEAM_CHARTS = ("granted-used", "fair-share")
COMMITTEE_CHARTS = ("scores",)


def chart_keys_for(*, scope: DashboardScope) -> list[str]:
    """The charts a viewer sees, in page order."""
    keys = []
    for key in CHARTS:
        if key in COMMITTEE_CHARTS and not scope.committee:
            continue
        if key in TEAM_CHARTS and not scope.teams:
            continue
        keys.append(key)
    return keys


def dashboard_tables(
    *, scope: DashboardScope, filters: DashboardFilter, keys: Sequence[str] | None = None
) -> list[Table]:
    allowed = chart_keys_for(scope=scope)
    return [CHARTS[key](scope=scope, filters=filters) for key in (keys or allowed) if key in allowed]
