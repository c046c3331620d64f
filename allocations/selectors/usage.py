"""Measured usage: what the schedulers reported, per team and week (fair share) and per team and pool (the usage
report's pre-fill)."""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from django.db.models import (
    Case,
    Count,
    DecimalField,
    F,
    Q,
    Sum,
    Value,
    When,
)
from django.utils import timezone

from allocations.models import (
    AllocationWindow,
    GpuPool,
    Team,
    UsageRecord,
)


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
