"""The forward calendar (docs/multi-week-runs.md): per pool, the weeks ahead that a run filed now may span, with
what is already committed in each (windows of published plans, runs' commitments), what the reserves hold back and
what is free. Executives and finance read it as forward demand; schedulers' own view is the windows API."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from allocations import engine
from allocations import selectors as allocation_selectors
from allocations.models import PLACED_STATES, AllocationWindow, Commitment, GpuPool
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


def forward_calendar(*, now: datetime, week_count: int | None = None) -> list[PoolCalendar]:
    """Every pool (by cluster name, then slug) over the `week_count` weeks after the week of `now` (default the
    policy's grants.max_weeks in force next week: the weeks a run filed now may span).

    Committed: the GPU-hours of the current windows of each week (every published plan's, emergencies included)
    and of the runs' commitments still placed first (committed or confirmed) whose week is not published with the
    run's window yet (counted once). Queries: 4 plus one a week (its reserves)."""
    first = weeks.week_label(weeks.parse_week(weeks.week_label(now.astimezone(weeks.committee_zone()).date()))
                             + timedelta(days=7))
    count = week_count if week_count is not None else run_max_weeks(week=first)
    labels = [weeks.week_label(weeks.parse_week(first) + timedelta(days=7 * n)) for n in range(count)]
    pools = list(GpuPool.objects.select_related("cluster").order_by("cluster__name", "slug"))
    committed: dict[tuple[int, str], int] = {}
    placed: set[tuple[int | None, str]] = set()
    for pool_id, week, gpus, start, end, ref in AllocationWindow.objects.filter(
        week__in=labels, withdrawal__isnull=True
    ).values_list("pool_id", "week", "gpu_count", "start", "end", "request_ref"):
        committed[(pool_id, week)] = committed.get((pool_id, week), 0) + _gpu_hours(gpus, start, end)
        placed.add((ref, week))
    for pool_id, week, gpus, start, end, ref in Commitment.objects.filter(
        week__in=labels, state__in=PLACED_STATES
    ).values_list("pool_id", "week", "gpu_count", "start", "end", "request_ref"):
        if (ref, week) not in placed:
            committed[(pool_id, week)] = committed.get((pool_id, week), 0) + _gpu_hours(gpus, start, end)
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
