"""Hour-of-week utilization per pool, from measured usage (allocations.UsageRecord), in the committee's zone.

A cell is one hour of the week, Monday 00 to Sunday 23 on the committee's clock (settings.TIME_ZONE). Its
utilization is the GPU-hours used in the span's hours that fall in that cell over the pool's GPU-hours in
them (GPUs × the number of such hours). The span's hours are walked in UTC and each one is put into the
cell of its local start, so in the week summer time ends the Sunday 02 cell gets two hours (and two hours
of usage), and in the week it starts none.

Peak hours are the hours Monday to Friday that start from 09:00 to 17:00 local (09–18): `peak_above_pct` is
the share of those hours, one by one, in which the pool used more than 80% of its GPUs.

Usage comes from the database already summed per pool and period (the teams' records of one hour, or one
day, are one row); a period inside one UTC hour (what an hourly collector posts) counts in that hour, a longer
one (a daily report) is spread evenly over its hours here. Two queries for any span and any number of records.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

from django.db.models import Sum

from allocations.models import GpuPool, UsageRecord
from committee import weeks

HOUR = timedelta(hours=1)
DEFAULT_WEEKS = 13
MAX_WEEKS = 104
PEAK_START_HOUR = 9
PEAK_END_HOUR = 18  # exclusive: the last peak hour starts at 17:00
PEAK_THRESHOLD_PCT = Decimal(80)
CELLS = 7 * 24


def cell_of(instant: datetime, zone: ZoneInfo) -> int:
    """The hour-of-week cell (0 = Monday 00, 167 = Sunday 23) of an instant, on the zone's clock."""
    local = instant.astimezone(zone)
    return local.weekday() * 24 + local.hour


def is_peak(cell: int) -> bool:
    day, hour = divmod(cell, 24)
    return day < 5 and PEAK_START_HOUR <= hour < PEAK_END_HOUR


def span_hours(start: datetime, end: datetime) -> Iterator[datetime]:
    """Each hour of [start, end) in UTC, by its start."""
    hour = start.astimezone(UTC)
    stop = end.astimezone(UTC)
    while hour < stop:
        yield hour
        hour += HOUR


def spread(*, start: datetime, end: datetime, gpu_hours: Decimal, within: tuple[datetime, datetime]
           ) -> Iterator[tuple[datetime, Decimal]]:
    """A period's GPU-hours spread evenly over its time, as (UTC hour, GPU-hours) pieces inside `within`."""
    duration = (end - start).total_seconds()
    lower, upper = max(start, within[0]), min(end, within[1])
    hour = lower.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    while hour < upper:
        piece = (min(hour + HOUR, upper) - max(hour, lower)).total_seconds()
        if piece > 0:
            yield hour, gpu_hours * Decimal(piece) / Decimal(duration)
        hour += HOUR


@dataclass(frozen=True)
class Span:
    first_week: str
    last_week: str
    start: datetime
    end: datetime

    @property
    def weeks(self) -> int:
        return (weeks.parse_week(self.last_week) - weeks.parse_week(self.first_week)).days // 7 + 1


def span_of(*, last_week: str, weeks_back: int, now: datetime | None = None) -> Span:
    """The `weeks_back` ISO weeks ending with `last_week`, Monday 00:00 to Monday 00:00 committee time.

    With `now`, a span reaching into the current week ends at the start of the current hour: the hours still
    to come have no usage yet and would read as idle.
    """
    first = weeks.week_label(weeks.parse_week(last_week) - timedelta(weeks=weeks_back - 1))
    end = weeks.week_bounds(last_week)[1]
    if now is not None:
        end = min(end, now.astimezone(UTC).replace(minute=0, second=0, microsecond=0))
    return Span(first_week=first, last_week=last_week, start=weeks.week_bounds(first)[0], end=end)


def default_last_week(*, now: datetime) -> str:
    """The last complete week: the one before the current week."""
    current = weeks.parse_week(weeks.current_week_label(now))
    return weeks.week_label(current - timedelta(weeks=1))


@dataclass(frozen=True)
class PoolHeatmap:
    key: str
    gpu_model: str
    gpu_count: int
    cells_pct: list[Decimal | None]  # 168 cells; None where the span has no such hour
    hours_counted: list[int]  # per cell: how many of the span's hours fell in it
    used_gpu_hours: Decimal
    capacity_gpu_hours: Decimal
    peak_hours: int
    peak_hours_above: int
    longest_record_hours: int = 1  # usage reported in periods up to this long was spread evenly over them

    @property
    def utilization_pct(self) -> Decimal | None:
        return self.used_gpu_hours * 100 / self.capacity_gpu_hours if self.capacity_gpu_hours else None

    @property
    def peak_above_pct(self) -> Decimal | None:
        return Decimal(self.peak_hours_above) * 100 / self.peak_hours if self.peak_hours else None

    def grid(self) -> list[list[float | None]]:
        """7 rows (Monday first) of 24 hours, in %, for the chart."""
        return [[float(v) if v is not None else None for v in self.cells_pct[d * 24:(d + 1) * 24]] for d in range(7)]


@dataclass(frozen=True)
class Heatmap:
    span: Span
    zone: str
    pools: list[PoolHeatmap]


@dataclass(frozen=True)
class HourlyUsage:
    gpu_hours: dict[int, dict[datetime, Decimal]]  # {pool id: {UTC hour: GPU-hours used}}
    longest_record_hours: dict[int, int]  # {pool id: the longest period a record of the span covered, in hours}


def hourly_usage(*, pools: list[GpuPool], start: datetime, end: datetime) -> HourlyUsage:
    """Each pool's GPU-hours used per UTC hour over [start, end): one query, summed in SQL per pool and period.

    The database sums the teams' records of the same period (what collectors post: one record per team, pool
    and hour or day); each period's sum is then put into its hour, or spread over its hours. Nothing here calls
    a date function in SQL: SQLite runs those in Python for every row, which made a year of hourly records
    five times slower (docs/benchmarks.md).
    """
    rows = (UsageRecord.objects.filter(pool__in=pools, period_start__lt=end, period_end__gt=start)
            .values_list("pool_id", "period_start", "period_end").annotate(gpu_hours=Sum("gpu_hours_used"))
            .order_by())
    result: dict[int, dict[datetime, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    longest: dict[int, int] = {}
    for pool_id, period_start, period_end, gpu_hours in rows:
        period_start, period_end = period_start.astimezone(UTC), period_end.astimezone(UTC)
        hour = period_start.replace(minute=0, second=0, microsecond=0)
        if period_end <= hour + HOUR:  # inside one hour: an hourly collector's record
            result[pool_id][hour] += gpu_hours
            continue
        hours = -(-(period_end - period_start) // HOUR)
        longest[pool_id] = max(longest.get(pool_id, 1), hours)
        for piece_hour, piece in spread(start=period_start, end=period_end, gpu_hours=gpu_hours, within=(start, end)):
            result[pool_id][piece_hour] += piece
    return HourlyUsage(gpu_hours=result, longest_record_hours=longest)


def span_cells(span: Span, zone: ZoneInfo) -> list[tuple[datetime, int]]:
    """Each UTC hour of the span with its hour-of-week cell (computed once for every pool)."""
    return [(hour, cell_of(hour, zone)) for hour in span_hours(span.start, span.end)]


def pool_heatmap(*, pool: GpuPool, usage: dict[datetime, Decimal], cells: list[tuple[datetime, int]],
                 longest_record_hours: int = 1) -> PoolHeatmap:
    """One pool's 168 cells and its peak-hour share (plain data in: the pool's hourly usage, the span's cells)."""
    used = [Decimal(0)] * CELLS
    counted = [0] * CELLS
    peak_hours = peak_above = 0
    threshold = PEAK_THRESHOLD_PCT * pool.gpu_count / 100
    zero = Decimal(0)
    for hour, cell in cells:
        gpu_hours = usage.get(hour, zero)
        used[cell] += gpu_hours
        counted[cell] += 1
        if is_peak(cell):
            peak_hours += 1
            if gpu_hours > threshold:
                peak_above += 1
    cells_pct: list[Decimal | None] = [
        used[c] * 100 / (pool.gpu_count * counted[c]) if counted[c] else None for c in range(CELLS)
    ]
    return PoolHeatmap(
        key=pool.key, gpu_model=pool.gpu_model, gpu_count=pool.gpu_count,
        cells_pct=cells_pct, hours_counted=counted,
        used_gpu_hours=sum(used, Decimal(0)), capacity_gpu_hours=Decimal(pool.gpu_count * sum(counted)),
        peak_hours=peak_hours, peak_hours_above=peak_above, longest_record_hours=longest_record_hours,
    )


def utilization_heatmap(*, span: Span) -> Heatmap:
    """Every pool's hour-of-week utilization over the span (two queries)."""
    zone = weeks.committee_zone()
    pools = list(GpuPool.objects.select_related("cluster").order_by("cluster__slug", "slug"))
    usage = hourly_usage(pools=pools, start=span.start, end=span.end)
    cells = span_cells(span, zone)
    return Heatmap(span=span, zone=str(zone), pools=[
        pool_heatmap(pool=pool, usage=usage.gpu_hours.get(pool.pk, {}), cells=cells,
                     longest_record_hours=usage.longest_record_hours.get(pool.pk, 1)) for pool in pools
    ])
