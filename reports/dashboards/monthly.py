"""The monthly review: each month's utilization, queue wait and cost against a baseline, flagged beyond ±10%.

For a month (committee time), per pool and for all pools together:

- share of pool capacity used: GPU-hours used ÷ (GPUs × hours of the month), in %; higher is better
  (the GPUs the company pays for did work);
- queue wait: the schedulers' mean queue wait in minutes, weighted by GPU-hours used; lower is better;
- cost: GPU-hours used × the pool's price per GPU-hour in force in the ISO week the usage starts in (the governed
  `pool.<pool>.price_per_gpu_hour`, in settings.DOCKET_COST_CURRENCY); lower is better.

Each metric says which way is better (Metric.better), and a change off the baseline is good or bad by
that direction, not by its sign: a queue wait 20% down is good, a share used 20% down is bad.

A month that is still running counts up to now ("to date"). A metric's baseline is the mean of its
values over the baseline months (by default the three months before) in which the pool had usage
reported; months without any are left out, so a pool that is new has no baseline yet. Cost is
compared per hour, so a short month or a month to date is not flagged for its length: the baseline
cost of a month is the baseline months' mean cost per hour × the month's hours.

A metric is flagged when it is off its baseline by more than 10% of the baseline:
|value − baseline| > 10% × baseline, in exact decimals (10.0% is not flagged). No baseline, no flag.

Service levels: a pool with a queue-wait target (GpuPool.queue_wait_target_minutes) is flagged when
its measured queue wait for the month (the same GPU-hour-weighted mean) is above the target, strictly
(a wait equal to the target meets it). No target, or no usage reported, no flag.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime
from decimal import Decimal

from django.conf import settings
from django.db.models import Count, DecimalField, F, Sum
from django.db.models.functions import TruncMonth, TruncWeek
from django.utils.translation import gettext as _

from allocations.models import GpuPool, UsageRecord
from allocations.selectors import pool_prices_and_weights_for_weeks
from committee import weeks
from core import numbers
from core.datetimes import format_isoweek
from reports.dashboards.selectors import Column, Table, q
from reports.models import Page

FLAG_THRESHOLD_PCT = Decimal(10)
DEFAULT_BASELINE_MONTHS = 3
MAX_BASELINE_MONTHS = 12
ALL_POOLS = "*"
HIGHER = "higher"
LOWER = "lower"


def deviation_pct(*, value: Decimal | None, baseline: Decimal | None) -> Decimal | None:
    """How far `value` is off `baseline`, in % of the baseline; None without a (non-zero) baseline."""
    if value is None or baseline is None or baseline == 0:
        return None
    return (value - baseline) * 100 / baseline


def is_flagged(*, value: Decimal | None, baseline: Decimal | None, threshold_pct: Decimal = FLAG_THRESHOLD_PCT) -> bool:
    """More than `threshold_pct` off the baseline, either way (exactly the threshold is not flagged)."""
    if value is None or baseline is None or baseline == 0:
        return False
    return abs(value - baseline) * 100 > threshold_pct * abs(baseline)


# --- months ----------------------------------------------------------------------------------------


def parse_month(month: str) -> date:
    """The first day of a month written YYYY-MM; ValueError if malformed."""
    try:
        first = datetime.strptime(month, "%Y-%m").date()
    except ValueError:
        raise ValueError(f"a month looks like 2026-11, got {month!r}") from None
    return first


def month_label(day: date) -> str:
    return f"{day.year:04d}-{day.month:02d}"


def shift_month(month: str, by: int) -> str:
    first = parse_month(month)
    index = first.year * 12 + first.month - 1 + by
    return f"{index // 12:04d}-{index % 12 + 1:02d}"


def month_bounds(month: str) -> tuple[datetime, datetime]:
    """The month's first instant and the next month's, in the committee's time zone."""
    zone = weeks.committee_zone()
    start = datetime.combine(parse_month(month), datetime.min.time(), tzinfo=zone)
    end = datetime.combine(parse_month(shift_month(month, 1)), datetime.min.time(), tzinfo=zone)
    return start, end


def _hours(start: datetime, end: datetime) -> Decimal:
    return Decimal(int((end - start).total_seconds())) / 3600


# --- the numbers -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PeriodFigures:
    """One pool's (or all pools') figures over one month, exact."""

    hours: Decimal
    capacity_gpu_hours: Decimal
    used_gpu_hours: Decimal
    wait_weighted: Decimal
    wait_plain: Decimal
    records: int
    cost: Decimal
    # All pools only: used and capacity in A100-equivalent GPU-hours (each pool's billing weight in the week of the
    # hour); None for one pool, whose figures stay in its own GPU-hours.
    a100_used_gpu_hours: Decimal | None = None
    a100_capacity_gpu_hours: Decimal | None = None

    @property
    def has_usage(self) -> bool:
        return self.records > 0

    @property
    def utilization_pct(self) -> Decimal | None:
        return self.used_gpu_hours * 100 / self.capacity_gpu_hours if self.capacity_gpu_hours else None

    @property
    def a100_utilization_pct(self) -> Decimal | None:
        """Across pools, in the common unit: A100-equivalent GPU-hours used ÷ A100-equivalent capacity, in %."""
        if not self.a100_capacity_gpu_hours or self.a100_used_gpu_hours is None:
            return None
        return self.a100_used_gpu_hours * 100 / self.a100_capacity_gpu_hours

    @property
    def queue_wait_minutes(self) -> Decimal | None:
        if self.used_gpu_hours:
            return self.wait_weighted / self.used_gpu_hours
        return self.wait_plain / self.records if self.records else None

    @property
    def cost_per_hour(self) -> Decimal | None:
        return self.cost / self.hours if self.hours else None


def _figures(pools: Sequence[GpuPool], rows: dict[int, dict[str, Decimal | int]], hours: Decimal) -> PeriodFigures:
    used = sum((Decimal(rows[p.pk]["used"]) for p in pools if p.pk in rows), Decimal(0))
    return PeriodFigures(
        hours=hours,
        capacity_gpu_hours=sum((p.gpu_count * hours for p in pools), Decimal(0)),
        used_gpu_hours=used,
        wait_weighted=sum((Decimal(rows[p.pk]["wait"]) for p in pools if p.pk in rows), Decimal(0)),
        wait_plain=sum((Decimal(rows[p.pk]["wait_plain"]) for p in pools if p.pk in rows), Decimal(0)),
        records=sum(int(rows[p.pk]["records"]) for p in pools if p.pk in rows),
        cost=sum((Decimal(rows[p.pk]["cost"]) for p in pools if p.pk in rows), Decimal(0)),
    )


def month_figures(*, months: Sequence[str], now: datetime) -> dict[str, dict[str, PeriodFigures]]:
    """{month: {pool key or ALL_POOLS: figures}} for each month, up to `now` for a month still running, the usage
    priced by the week it starts in (a month across a price change at each week's price). ALL_POOLS also counts used
    and capacity in A100-equivalent GPU-hours, each at the pool's billing weight of its week. Two queries."""
    zone = weeks.committee_zone()
    pools = list(GpuPool.objects.select_related("cluster").order_by("cluster__slug", "slug"))
    first = min(month_bounds(m)[0] for m in months)
    last = max(month_bounds(m)[1] for m in months)
    decimal: DecimalField[Decimal, Decimal] = DecimalField(max_digits=20, decimal_places=4)
    rows = list(
        UsageRecord.objects.filter(period_start__gte=first, period_start__lt=min(last, now))
        .annotate(month=TruncMonth("period_start", tzinfo=zone), week=TruncWeek("period_start", tzinfo=zone))
        .values("month", "week", "pool_id")
        .annotate(
            used=Sum("gpu_hours_used"),
            wait=Sum(F("gpu_hours_used") * F("mean_queue_wait_minutes"), output_field=decimal),
            wait_plain=Sum("mean_queue_wait_minutes"),
            records=Count("id"),
        )
        .order_by()
    )
    week_of = {row["week"]: format_isoweek(row["week"].astimezone(zone).date()) for row in rows}
    spans = {month: _week_spans(*month_bounds(month), now=now) for month in months}
    terms = pool_prices_and_weights_for_weeks(
        pools=pools, weeks={*week_of.values(), *(week for s in spans.values() for week, _h in s)})
    a100_used: dict[str, Decimal] = {}
    by_month: dict[str, dict[int, dict[str, Decimal | int]]] = {}
    for row in rows:
        of_month = by_month.setdefault(month_label(row["month"].astimezone(zone).date()), {})
        sums = of_month.setdefault(row["pool_id"], {"used": Decimal(0), "wait": Decimal(0), "wait_plain": Decimal(0),
                                                 "records": 0, "cost": Decimal(0)})
        for name in ("used", "wait", "wait_plain", "records"):
            sums[name] += row[name] or 0
        price, weight = terms.get((row["pool_id"], week_of[row["week"]]), (Decimal(0), Decimal(1)))
        sums["cost"] += Decimal(row["used"] or 0) * price
        label = month_label(row["month"].astimezone(zone).date())
        a100_used[label] = a100_used.get(label, Decimal(0)) + Decimal(row["used"] or 0) * weight
    result: dict[str, dict[str, PeriodFigures]] = {}
    for month in months:
        start, end = month_bounds(month)
        hours = _hours(start, max(start, min(end, now)))
        usage = by_month.get(month, {})
        result[month] = {p.key: _figures([p], usage, hours) for p in pools}
        result[month][ALL_POOLS] = replace(
            _figures(pools, usage, hours), a100_used_gpu_hours=a100_used.get(month, Decimal(0)),
            a100_capacity_gpu_hours=sum((p.gpu_count * span_hours * terms[(p.pk, week)][1]
                                         for week, span_hours in spans[month] for p in pools), Decimal(0)))
    return result


def _week_spans(start: datetime, end: datetime, *, now: datetime) -> list[tuple[str, Decimal]]:
    """The ISO weeks (committee time) of the month from `start` to `end`, up to `now`, each with its hours in it."""
    # Counted as the month's `hours` are (`_hours`), so that with every weight 1 the common unit's share equals the
    # GPU-hours' share.
    end = max(start, min(end, now))
    spans: list[tuple[str, Decimal]] = []
    at = start
    while at < end:
        week = weeks.week_label(at.astimezone(weeks.committee_zone()).date())
        week_end = min(weeks.week_bounds(week)[1], end)
        spans.append((week, _hours(at, week_end)))
        at = week_end
    return spans


@dataclass(frozen=True)
class Metric:
    key: str
    label: str
    unit: str
    value: Decimal | None
    baseline: Decimal | None
    deviation_pct: Decimal | None
    flagged: bool
    better: str = HIGHER  # HIGHER or LOWER: which way of the metric is good

    @property
    def change_is_good(self) -> bool | None:
        """Whether the change from the baseline goes the good way; None without a change (or a baseline)."""
        if self.deviation_pct is None or self.deviation_pct == 0:
            return None
        return (self.deviation_pct > 0) == (self.better == HIGHER)

    @property
    def better_label(self) -> str:
        return _("↑ better") if self.better == HIGHER else _("↓ better")

    def written(self, value: Decimal | None) -> str:
        """A value of this metric as a reader sees it: "USD 1,234.50", "72.5%", "12.5 minutes"; "" for None."""
        if value is None:
            return ""
        if self.key == "cost":
            return numbers.format_money(value, self.unit)
        if self.unit == "%":
            return numbers.format_pct(value, 1)
        return f"{numbers.format_number(value, 1)} {self.unit}"

    @property
    def value_text(self) -> str:
        return self.written(self.value)

    @property
    def baseline_text(self) -> str:
        return self.written(self.baseline)

    @property
    def change_text(self) -> str:
        """The change off the baseline, signed: "+12.3%", "−4.0%"; "" without a baseline."""
        if self.deviation_pct is None:
            return ""
        sign = "+" if self.deviation_pct > 0 else ("−" if self.deviation_pct < 0 else "±")
        return sign + numbers.format_pct(abs(self.deviation_pct), 1)


@dataclass(frozen=True)
class ServiceLevel:
    """A pool's queue-wait target against the month's measured mean queue wait (None: no usage reported)."""

    target_minutes: int
    measured_minutes: Decimal | None

    @property
    def breached(self) -> bool:
        return self.measured_minutes is not None and self.measured_minutes > self.target_minutes

    @property
    def over_minutes(self) -> Decimal | None:
        return self.measured_minutes - self.target_minutes if self.breached and self.measured_minutes else None


@dataclass(frozen=True)
class PoolReview:
    key: str  # "atlas/a100", or ALL_POOLS
    label: str
    metrics: tuple[Metric, ...]
    service_level: ServiceLevel | None = None

    @property
    def flagged(self) -> bool:
        return any(m.flagged for m in self.metrics)


@dataclass(frozen=True)
class MonthlyReview:
    month: str
    to_date: bool
    baseline_months: tuple[str, ...]
    currency: str
    rows: tuple[PoolReview, ...]

    @property
    def flagged(self) -> bool:
        return any(row.flagged for row in self.rows)

    @property
    def flags(self) -> list[tuple[PoolReview, Metric]]:
        return [(row, metric) for row in self.rows for metric in row.metrics if metric.flagged]

    @property
    def service_levels(self) -> list[tuple[PoolReview, ServiceLevel]]:
        """The pools with a queue-wait target, each with its month's measured wait."""
        return [(row, row.service_level) for row in self.rows if row.service_level is not None]

    @property
    def service_level_breaches(self) -> list[tuple[PoolReview, ServiceLevel]]:
        return [(row, level) for row, level in self.service_levels if level.breached]

    def table(self) -> Table:
        rows = tuple(
            (self.month, row.label, metric.label, metric.unit, metric.better, q(metric.value, 2),
             q(metric.baseline, 2), q(metric.deviation_pct), _("yes") if metric.flagged else _("no"))
            for row in self.rows
            for metric in row.metrics
        )
        return Table(
            key="monthly-review",
            title=_("Monthly review %(month)s") % {"month": self.month},
            columns=(
                Column("month", _("Month")),
                Column("pool", _("Pool")),
                Column("metric", _("Metric")),
                Column("unit", _("Unit")),
                Column("better", _("Better when")),
                Column("value", _("Value")),
                Column("baseline", _("Baseline")),
                Column("deviation_pct", _("Off baseline %")),
                Column("flagged", _("Flagged")),
            ),
            rows=rows,
            note=_("Baseline: the mean of %(months)s.") % {"months": ", ".join(self.baseline_months)},
        )


def _mean(values: Sequence[Decimal | None]) -> Decimal | None:
    present = [v for v in values if v is not None]
    return sum(present, Decimal(0)) / len(present) if present else None


def _metric(
    key: str, label: str, unit: str, value: Decimal | None, baseline: Decimal | None, *, better: str
) -> Metric:
    return Metric(
        key=key, label=label, unit=unit, value=value, baseline=baseline,
        deviation_pct=deviation_pct(value=value, baseline=baseline),
        flagged=is_flagged(value=value, baseline=baseline), better=better,
    )


def monthly_review(*, month: str, now: datetime, baseline_months: int = DEFAULT_BASELINE_MONTHS) -> MonthlyReview:
    """The month's metrics per pool and for all pools, each against its baseline, flagged beyond ±10%.

    ValueError for a malformed month or a baseline of fewer than 1 or more than MAX_BASELINE_MONTHS months.
    """
    parse_month(month)
    if not 1 <= baseline_months <= MAX_BASELINE_MONTHS:
        raise ValueError(f"the baseline is 1 to {MAX_BASELINE_MONTHS} months")
    before = tuple(shift_month(month, -k) for k in range(baseline_months, 0, -1))
    figures = month_figures(months=[*before, month], now=now)
    currency = settings.DOCKET_COST_CURRENCY
    targets = {
        p.key: p.queue_wait_target_minutes
        for p in GpuPool.objects.select_related("cluster").filter(queue_wait_target_minutes__isnull=False)
    }
    rows = []
    for key in figures[month]:
        current = figures[month][key]
        past = [figures[m][key] for m in before if figures[m][key].has_usage]
        cost_rate = _mean([p.cost_per_hour for p in past])
        metrics = (
            _metric("utilization", _("Share of pool capacity used"), "%",
                    current.utilization_pct if current.has_usage else None,
                    _mean([p.utilization_pct for p in past]), better=HIGHER),
            _metric("queue_wait", _("Queue wait"), _("minutes"), current.queue_wait_minutes,
                    _mean([p.queue_wait_minutes for p in past]), better=LOWER),
            _metric("cost", _("Cost"), currency, current.cost if current.has_usage else None,
                    cost_rate * current.hours if cost_rate is not None else None, better=LOWER),
        )
        target = targets.get(key)
        measured = current.queue_wait_minutes if current.has_usage else None
        level = ServiceLevel(target_minutes=target, measured_minutes=measured) if target is not None else None
        rows.append(PoolReview(key=key, label=_("All pools") if key == ALL_POOLS else key, metrics=metrics,
                               service_level=level))
    _start, end = month_bounds(month)
    return MonthlyReview(
        month=month, to_date=now < end, baseline_months=before, currency=currency, rows=tuple(rows)
    )


def month_list(*, now: datetime, limit: int = 24) -> list[str]:
    """The months with usage reported, latest first (none after `now`)."""
    zone = weeks.committee_zone()
    months = (
        UsageRecord.objects.filter(period_start__lt=now)
        .annotate(month=TruncMonth("period_start", tzinfo=zone))
        .values_list("month", flat=True)
        .distinct()
        .order_by("-month")[:limit]
    )
    return [month_label(m.astimezone(zone).date()) for m in months]


def monthly_review_page(*, month: str) -> Page | None:
    """The archive page where the committee recorded the month's parameter review, if it was opened."""
    return Page.objects.filter(source_key=f"monthly-review:{month}").select_related("latest_revision").first()
