"""Each pool's measured cost: per effective GPU-hour (its cost over what was used) and the cost of its queue.

Cost per effective GPU-hour = the pool's cost over the span (every GPU-hour of it, used or idle, each week's at the
pool's price per GPU-hour in force that week, the governed `pool.<pool>.price_per_gpu_hour`) ÷ the GPU-hours
measured as used (allocations.UsageRecord); at 50% utilization a used GPU-hour costs twice the list price. The price
shown is the span's mean: the pool's cost ÷ its GPU-hours.

Queue-time cost = Σ over the span's requests on the pool whose impact forecast is a value per week in the
cost currency ("USD/week"): the forecast's value per hour × the measured mean queue wait of the request's team
on the pool over the span (the schedulers' mean per record, weighted by GPU-hours used). A forecast in another
unit ("% churn") has no price and is counted apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.db.models import F, Sum

from allocations.models import GpuPool, UsageRecord
from allocations.selectors import pool_prices_for_weeks
from committee import weeks
from committee.models import ImpactForecast
from reports.dashboards.heatmap import Heatmap, Span

HOURS_PER_WEEK = Decimal(168)


@dataclass(frozen=True)
class PoolCost:
    key: str
    pool_cost: Decimal  # every GPU-hour of the span, used or idle, at the price of its week
    capacity_gpu_hours: Decimal
    used_gpu_hours: Decimal
    mean_queue_wait_minutes: Decimal | None
    queue_cost: Decimal
    forecasts_priced: int
    forecasts_unpriced: int

    @property
    def cost_per_gpu_hour(self) -> Decimal:
        """The span's mean price: the same as the list price unless it changed within the span."""
        return self.pool_cost / self.capacity_gpu_hours if self.capacity_gpu_hours else Decimal(0)

    @property
    def utilization_pct(self) -> Decimal | None:
        return self.used_gpu_hours * 100 / self.capacity_gpu_hours if self.capacity_gpu_hours else None

    @property
    def cost_per_effective_gpu_hour(self) -> Decimal | None:
        return self.pool_cost / self.used_gpu_hours if self.used_gpu_hours else None


def weekly_value_unit() -> str:
    return f"{settings.DOCKET_COST_CURRENCY}/week".lower()


def _capacity_costs(span: Span) -> dict[str, Decimal]:
    """Each pool's GPUs × the span's hours, each week's hours at the pool's price in force that week. Two queries."""
    pools = list(GpuPool.objects.select_related("cluster"))
    week_hours: dict[str, Decimal] = {}
    monday = weeks.parse_week(span.first_week)
    while monday <= weeks.parse_week(span.last_week):
        label = weeks.week_label(monday)
        start, end = weeks.week_bounds(label)
        start, end = max(start, span.start), min(end, span.end)
        week_hours[label] = Decimal(max(int((end - start).total_seconds()), 0)) / 3600
        monday += timedelta(weeks=1)
    prices = pool_prices_for_weeks(pools=pools, weeks=week_hours)
    return {pool.key: sum((pool.gpu_count * hours * prices[(pool.pk, week)] for week, hours in week_hours.items()),
                          Decimal(0)) for pool in pools}


def pool_cost_list(*, heatmap: Heatmap) -> list[PoolCost]:
    """The heatmap's pools with their costs over its span (four queries beyond the heatmap's)."""
    span = heatmap.span
    pool_costs = _capacity_costs(span)
    waits: dict[tuple[str, int], tuple[Decimal, Decimal]] = {}
    rows = (UsageRecord.objects.filter(period_start__gte=span.start, period_start__lt=span.end)
            .values("pool__cluster__slug", "pool__slug", "team_id")
            .annotate(hours=Sum("gpu_hours_used"), weighted=Sum(F("gpu_hours_used") * F("mean_queue_wait_minutes")))
            .order_by())
    for row in rows:
        waits[(f"{row['pool__cluster__slug']}/{row['pool__slug']}", row["team_id"])] = (
            Decimal(row["hours"] or 0), Decimal(row["weighted"] or 0))
    forecasts = (ImpactForecast.objects.filter(request__cycle__starts_at__gte=span.start,
                                               request__cycle__starts_at__lt=span.end)
                 .values_list("request__pool__cluster__slug", "request__pool__slug", "request__team_id",
                              "estimated_value", "value_unit"))
    unit = weekly_value_unit()
    queue_cost: dict[str, Decimal] = {}
    priced: dict[str, int] = {}
    unpriced: dict[str, int] = {}
    for cluster, pool_slug, team, value, value_unit in forecasts:
        key = f"{cluster}/{pool_slug}"
        if value_unit.strip().lower().replace(" ", "") != unit:
            unpriced[key] = unpriced.get(key, 0) + 1
            continue
        priced[key] = priced.get(key, 0) + 1
        hours, weighted = waits.get((key, team), (Decimal(0), Decimal(0)))
        wait_hours = weighted / hours / 60 if hours else Decimal(0)
        queue_cost[key] = queue_cost.get(key, Decimal(0)) + value / HOURS_PER_WEEK * wait_hours
    result = []
    for pool in heatmap.pools:
        pool_hours = sum((h for (k, _t), (h, _w) in waits.items() if k == pool.key), Decimal(0))
        pool_weighted = sum((w for (k, _t), (_h, w) in waits.items() if k == pool.key), Decimal(0))
        result.append(PoolCost(
            key=pool.key, pool_cost=pool_costs.get(pool.key, Decimal(0)), capacity_gpu_hours=pool.capacity_gpu_hours,
            used_gpu_hours=pool.used_gpu_hours,
            mean_queue_wait_minutes=pool_weighted / pool_hours if pool_hours else None,
            queue_cost=queue_cost.get(pool.key, Decimal(0)),
            forecasts_priced=priced.get(pool.key, 0), forecasts_unpriced=unpriced.get(pool.key, 0),
        ))
    return result
