"""The forward calendar (docs/multi-week-runs.md): per pool, the weeks ahead that a run filed now may span, with
what is already committed in each (windows of published plans, runs' commitments), what the reserves hold back and
what is free. Executives and finance read it as forward demand; schedulers' own view is the windows API."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from allocations import engine
from allocations import selectors as allocation_selectors
from allocations.models import PLACED_STATES, AllocationPlan, AllocationWindow, Commitment, GpuPool
from committee import weeks
from committee.selectors.runs import run_max_weeks


@dataclass(frozen=True)
class CalendarWeek:
    """One pool in one week, in GPU-hours: all its GPUs over the week's hours (167, 168 or 169), the burst reserve
    and cold standby held back (the week's policy), what windows and commitments hold, and what is left."""

    week: str
    start: datetime
    end: datetime
    hours: int
    capacity_gpu_hours: int
    reserved_gpu_hours: int
    committed_gpu_hours: int

    @property
    def free_gpu_hours(self) -> int:
        return max(0, self.capacity_gpu_hours - self.reserved_gpu_hours - self.committed_gpu_hours)

    @property
    def committed_pct(self) -> int:
        """Committed GPU-hours as a share of what may be placed (capacity less the reserves), rounded; over 100
        when windows use the burst reserve."""
        placeable = self.capacity_gpu_hours - self.reserved_gpu_hours
        return round(100 * self.committed_gpu_hours / placeable) if placeable > 0 else 0


@dataclass(frozen=True)
class PoolCalendar:
    pool: GpuPool
    weeks: tuple[CalendarWeek, ...]


def _gpu_hours(gpus: int, start: datetime, end: datetime) -> int:
    return gpus * int((end - start).total_seconds() // 3600)


@dataclass(frozen=True)
class Held:
    """GPUs held on a pool over [start, end) in a week: a current window of a published plan, or a run's
    commitment (committed or confirmed) whose week is not yet published with the run's window."""

    pool_id: int
    week: str
    gpu_count: int
    start: datetime
    end: datetime


def _held(*, labels: list[str], pool_id: int | None = None) -> list[Held]:
    """What the weeks `labels` already hold, each run's week counted once whether published yet or not. 2 queries."""
    pools = {} if pool_id is None else {"pool_id": pool_id}
    held: list[Held] = []
    placed: set[tuple[int | None, str]] = set()
    for pool, week, gpus, start, end, ref in AllocationWindow.objects.filter(
        week__in=labels, withdrawal__isnull=True, **pools
    ).values_list("pool_id", "week", "gpu_count", "start", "end", "request_ref"):
        held.append(Held(pool, week, gpus, start, end))
        placed.add((ref, week))
    for pool, week, gpus, start, end, ref in Commitment.objects.filter(
        week__in=labels, state__in=PLACED_STATES, **pools
    ).values_list("pool_id", "week", "gpu_count", "start", "end", "request_ref"):
        if (ref, week) not in placed:
            held.append(Held(pool, week, gpus, start, end))
    return held


def _weeks_from(first: str, count: int) -> list[str]:
    return [weeks.week_label(weeks.parse_week(first) + timedelta(days=7 * n)) for n in range(count)]


def forward_calendar(*, now: datetime, week_count: int | None = None) -> list[PoolCalendar]:
    """Every pool (by cluster name, then slug) over the `week_count` weeks after the week of `now` (default the
    policy's grants.max_weeks in force next week: the weeks a run filed now may span).

    Committed: the GPU-hours of the current windows of each week (every published plan's, emergencies included)
    and of the runs' commitments still placed first (committed or confirmed) whose week is not published with the
    run's window yet (counted once). Queries: 4 plus one a week (its reserves)."""
    first = weeks.week_label(weeks.parse_week(weeks.week_label(now.astimezone(weeks.committee_zone()).date()))
                             + timedelta(days=7))
    count = week_count if week_count is not None else run_max_weeks(week=first)
    labels = _weeks_from(first, count)
    pools = list(GpuPool.objects.select_related("cluster").order_by("cluster__name", "slug"))
    committed: dict[tuple[int, str], int] = {}
    for held in _held(labels=labels):
        key = (held.pool_id, held.week)
        committed[key] = committed.get(key, 0) + _gpu_hours(held.gpu_count, held.start, held.end)
    by_pool: dict[int, list[CalendarWeek]] = {pool.pk: [] for pool in pools}
    for label in labels:
        start, end = (bound.astimezone(UTC) for bound in weeks.week_bounds(label))  # UTC: 167/169 in summer time
        hours = int((end - start).total_seconds() // 3600)
        for pool in allocation_selectors.pool_reserves_for_week(week=label, pools=pools):
            burst, standby = engine.reserved_gpus(allocation_selectors.pool_capacity(pool=pool))
            by_pool[pool.pk].append(CalendarWeek(
                week=label, start=start, end=end, hours=hours, capacity_gpu_hours=pool.gpu_count * hours,
                reserved_gpu_hours=(burst + standby) * hours, committed_gpu_hours=committed.get((pool.pk, label), 0),
            ))
    return [PoolCalendar(pool=pool, weeks=tuple(by_pool[pool.pk])) for pool in pools]


# How many weeks before a request's own the filing hint looks back at ("placed in 3 of the last 4 weeks").
HINT_WEEKS_BACK = 4


@dataclass(frozen=True)
class FilingHint:
    """What a team filing a request on `pool` sees beside the form: how much of the pool its window (and, for a
    run over several weeks, the run's later weeks) is already committed, and how often a request of its size was
    placed on the pool in the weeks before."""

    pool: GpuPool
    gpu_count: int
    start: datetime
    end: datetime
    committed_gpu_hours: int
    placeable_gpu_hours: int
    weeks_placed: int  # of `weeks_published`: weeks whose current plan has a window of at least gpu_count GPUs
    weeks_published: int  # of the HINT_WEEKS_BACK weeks before: those with a published plan

    @property
    def committed_pct(self) -> int:
        """Committed as a share of what may be placed over the span (capacity less the reserves), rounded."""
        if self.placeable_gpu_hours <= 0:
            return 100 if self.committed_gpu_hours else 0
        return round(100 * self.committed_gpu_hours / self.placeable_gpu_hours)


def filing_hint(
    *, pool: GpuPool, week: str, gpu_count: int, earliest_start: datetime, latest_end: datetime, run_weeks: int = 1
) -> FilingHint | None:
    """The hint for a request of `gpu_count` GPUs on `pool` in `week` over [earliest_start, latest_end) (a run of
    `run_weeks` weeks goes on to the end of its last week). None when the window is empty.

    Committed counts what the forward calendar counts (`_held`: current windows and runs' commitments, once), the
    part of each inside the span; placeable is the pool's GPUs less the reserves in force in `week`, over the
    span's hours. Placed: the weeks among the HINT_WEEKS_BACK before `week` with a published plan, and of them
    those with a current window of at least `gpu_count` GPUs on the pool. Queries: 5."""
    if latest_end <= earliest_start or gpu_count < 1:
        return None
    labels = _weeks_from(week, max(1, run_weeks))
    start, end = earliest_start, latest_end
    if run_weeks > 1:
        end = max(end, weeks.week_bounds(labels[-1])[1])
    committed = 0
    for held in _held(labels=labels, pool_id=pool.pk):
        overlap = min(end, held.end) - max(start, held.start)
        if overlap.total_seconds() > 0:
            committed += held.gpu_count * int(overlap.total_seconds() // 3600)
    (pool,) = allocation_selectors.pool_reserves_for_week(week=week, pools=[pool])
    burst, standby = engine.reserved_gpus(allocation_selectors.pool_capacity(pool=pool))
    hours = int((end - start).total_seconds() // 3600)
    before = [weeks.week_label(weeks.parse_week(week) - timedelta(days=7 * n)) for n in range(HINT_WEEKS_BACK, 0, -1)]
    published = set(AllocationPlan.objects.filter(week__in=before).values_list("week", flat=True))
    placed = set(AllocationWindow.objects.filter(
        week__in=published, pool=pool, gpu_count__gte=gpu_count, withdrawal__isnull=True
    ).values_list("week", flat=True))
    return FilingHint(
        pool=pool, gpu_count=gpu_count, start=start, end=end, committed_gpu_hours=committed,
        placeable_gpu_hours=(pool.gpu_count - burst - standby) * hours, weeks_placed=len(placed),
        weeks_published=len(published),
    )
