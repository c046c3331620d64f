"""Capacity planning: how bursty each pool's demand is, the burst reserve that implies, and what was turned away.

Per pool, over the trailing weeks (by default the 8 weeks up to and including the current one):

- weekly demand D_w: the GPU-hours asked for in week w's cycle (its submitted or decided requests
  for the pool). Weeks without a cycle (before Docket ran the week) are left out, not counted as 0;
- peak-to-mean ratio R = max_w D_w / mean_w D_w (undefined when the mean is 0);
- the burst reserve R implies: if the standard part of the pool is sized for a usual week (the
  mean), a peak week needs R times as much, so the share of the allocatable capacity to hold back
  for bursts is 1 − 1/R. In the unit of the configured reserve (% of the whole pool, the cold
  standby being never allocated):

      implied reserve % = (1 − 1/R) × (100 − standby %)

  e.g. demand 100, 100, 100, 140: mean 110, peak 140, R = 1.273, 1 − 1/R = 21.4%; with a 10%
  standby, 19.3% of the pool;
- the reserve configured: GpuPool.burst_reserve_pct, and what it is in GPU-hours per week;
- the demand turned away: over the weeks whose plan is published, the GPU-hours of the requests the
  committee did not reject minus the GPU-hours granted (the current plan's windows), never below
  zero per week. A rejection is a judgement of the work, not a lack of GPUs, so it is not counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.db.models import F, Sum
from django.utils.translation import gettext as _

from allocations import selectors as allocation_selectors
from allocations.models import GpuPool
from committee import weeks
from committee.models import CycleStatus, DecisionOutcome, GpuRequest, ReviewCycle
from reports.dashboards.selectors import (
    REQUESTED_STATUSES,
    Column,
    DashboardFilter,
    Table,
    placed_gpu_hours,
    q,
    requested_gpu_hours,
    week_hours,
)

DEFAULT_TRAILING_WEEKS = 8
MAX_TRAILING_WEEKS = 52


@dataclass(frozen=True)
class PeakToMean:
    mean: Decimal
    peak: Decimal
    ratio: Decimal | None  # None when the mean is 0 (no demand at all)


def peak_to_mean(demands: Sequence[Decimal]) -> PeakToMean | None:
    """Mean, peak and their ratio of weekly demands; None for no weeks."""
    if not demands:
        return None
    mean = sum(demands, Decimal(0)) / len(demands)
    peak = max(demands)
    return PeakToMean(mean=mean, peak=peak, ratio=peak / mean if mean else None)


def implied_burst_reserve_pct(*, ratio: Decimal | None, standby_pct: int) -> Decimal | None:
    """(1 − 1/R) × (100 − standby %): the share of the pool to hold back so a peak week fits."""
    if ratio is None or ratio <= 0:
        return None
    return (1 - 1 / ratio) * (100 - standby_pct)


@dataclass(frozen=True)
class WeekDemand:
    week: str
    requested_gpu_hours: Decimal
    not_rejected_gpu_hours: Decimal
    granted_gpu_hours: Decimal
    published: bool

    @property
    def turned_away_gpu_hours(self) -> Decimal:
        if not self.published:
            return Decimal(0)
        return max(Decimal(0), self.not_rejected_gpu_hours - self.granted_gpu_hours)


@dataclass(frozen=True)
class PoolPlan:
    pool: GpuPool
    weeks: tuple[WeekDemand, ...]
    peak_to_mean: PeakToMean | None
    implied_reserve_pct: Decimal | None
    configured_reserve_gpu_hours: Decimal
    peak_week: str | None

    @property
    def label(self) -> str:
        return self.pool.key

    @property
    def turned_away_gpu_hours(self) -> Decimal:
        return sum((w.turned_away_gpu_hours for w in self.weeks), Decimal(0))

    @property
    def turned_away_pct(self) -> Decimal | None:
        asked = sum((w.requested_gpu_hours for w in self.weeks if w.published), Decimal(0))
        return self.turned_away_gpu_hours * 100 / asked if asked else None

    @property
    def reserve_gap_pct(self) -> Decimal | None:
        """Implied minus configured reserve, in points of the pool: positive means the reserve is short."""
        if self.implied_reserve_pct is None:
            return None
        return self.implied_reserve_pct - self.pool.burst_reserve_pct


@dataclass(frozen=True)
class CapacityPlan:
    weeks: tuple[str, ...]
    counted_weeks: tuple[str, ...]
    pools: tuple[PoolPlan, ...]

    def table(self) -> Table:
        rows = tuple(
            (
                plan.label,
                len(plan.weeks),
                q(plan.peak_to_mean.mean) if plan.peak_to_mean else None,
                q(plan.peak_to_mean.peak) if plan.peak_to_mean else None,
                plan.peak_week or "",
                q(plan.peak_to_mean.ratio, 3) if plan.peak_to_mean and plan.peak_to_mean.ratio else None,
                q(plan.implied_reserve_pct),
                plan.pool.burst_reserve_pct,
                q(plan.configured_reserve_gpu_hours),
                q(plan.turned_away_gpu_hours),
                q(plan.turned_away_pct),
            )
            for plan in self.pools
        )
        return Table(
            key="capacity-planning",
            title=_("Capacity planning"),
            columns=(
                Column("pool", _("Pool")),
                Column("weeks", _("Weeks counted")),
                Column("mean_weekly_demand_gpu_hours", _("Mean weekly demand GPU-h")),
                Column("peak_weekly_demand_gpu_hours", _("Peak weekly demand GPU-h")),
                Column("peak_week", _("Peak week")),
                Column("peak_to_mean", _("Peak-to-mean")),
                Column("implied_reserve_pct", _("Implied burst reserve %")),
                Column("configured_reserve_pct", _("Configured burst reserve %")),
                Column("configured_reserve_gpu_hours", _("Configured reserve GPU-h / week")),
                Column("turned_away_gpu_hours", _("Turned away GPU-h")),
                # "% of" is a percent sign, not a format directive:
                # xgettext:no-python-format
                Column("turned_away_pct", _("Turned away % of demand")),
            ),
            rows=rows,
            note=_("Implied reserve % = (1 − 1/R) × (100 − standby %), R = peak ÷ mean weekly demand."),
        )


def capacity_plan(*, now: datetime, trailing_weeks: int = DEFAULT_TRAILING_WEEKS) -> CapacityPlan:
    """Every pool's plan over the `trailing_weeks` weeks up to and including the week of `now`. Five queries."""
    if not 1 <= trailing_weeks <= MAX_TRAILING_WEEKS:
        raise ValueError(f"trailing weeks are 1 to {MAX_TRAILING_WEEKS}")
    current = weeks.parse_week(weeks.current_week_label(now))
    span = tuple(weeks.week_label(current - timedelta(weeks=k)) for k in range(trailing_weeks - 1, -1, -1))
    cycles = dict(ReviewCycle.objects.filter(week__in=span).values_list("week", "status"))
    counted = tuple(week for week in span if week in cycles)
    filters = DashboardFilter(weeks=span)
    requested = requested_gpu_hours(filters=filters)
    not_rejected = {
        (row["cycle__week"], row["pool_id"]): Decimal(row["hours"])
        for row in GpuRequest.objects.filter(cycle__week__in=counted, status__in=REQUESTED_STATUSES)
        .exclude(decision__outcome=DecisionOutcome.REJECT)
        .values("cycle__week", "pool_id")
        .annotate(hours=Sum(F("gpu_count") * F("duration_hours")))
        .order_by()
    }
    granted: dict[tuple[str, int], Decimal] = {}
    for (week, _team, pool_id), hours in placed_gpu_hours(filters=filters).items():
        granted[(week, pool_id)] = granted.get((week, pool_id), Decimal(0)) + hours
    plans = []
    for pool in allocation_selectors.pool_reserves_now(filters.pools()):
        demand = tuple(
            WeekDemand(
                week=week,
                requested_gpu_hours=requested.get((week, pool.pk), Decimal(0)),
                not_rejected_gpu_hours=not_rejected.get((week, pool.pk), Decimal(0)),
                granted_gpu_hours=granted.get((week, pool.pk), Decimal(0)),
                published=cycles[week] == CycleStatus.PUBLISHED,
            )
            for week in counted
        )
        ptm = peak_to_mean([w.requested_gpu_hours for w in demand])
        peak_week = max(demand, key=lambda w: w.requested_gpu_hours).week if demand else None
        plans.append(
            PoolPlan(
                pool=pool,
                weeks=demand,
                peak_to_mean=ptm,
                implied_reserve_pct=implied_burst_reserve_pct(
                    ratio=ptm.ratio if ptm else None, standby_pct=pool.standby_pct
                ),
                configured_reserve_gpu_hours=pool.gpu_count * week_hours(span[-1]) * pool.burst_reserve_pct / 100,
                peak_week=peak_week,
            )
        )
    return CapacityPlan(weeks=span, counted_weeks=counted, pools=tuple(plans))
