"""Measured usage: what the schedulers reported, per team and week (fair share) and per team and pool (the usage
report's pre-fill)."""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from django.db.models import (
    BooleanField,
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
    WindowTier,
)
from allocations.selectors.prices import pool_keys_by_id
from core.datetimes import format_isoweek
from governed.params import BILLING_WEIGHT, FAIRSHARE_LENT_FACTOR, POOL_PREFIX, billing_weight, defaults, value_text
from governed.selectors import policy_values_for_weeks


def usage_counted_factors(
    *, keys: Iterable[tuple[int, str]]
) -> dict[tuple[int, str], tuple[Decimal, Decimal]]:
    """For each (pool id, ISO week): the pool's billing weight (A100-equivalents of one of its GPU-hours) and the
    fair-share factor of usage on lent GPUs, in force that week (governed.params). Two queries, whatever the count.

    A GPU-hour counts for fair share as weight × 1, or weight × the lent factor when it ran in a preemptible window
    (GPUs the owner did not need, lent through the elastic policy or the engine's preemptible tier)."""
    keys = set(keys)
    if not keys:
        return {}
    pool_keys = pool_keys_by_id(pool_ids={pool_id for pool_id, _week in keys})
    weeks = sorted({week for _pool, week in keys})
    weight_keys = tuple(f"{POOL_PREFIX}{key}.{BILLING_WEIGHT}" for key in pool_keys.values())
    in_force = policy_values_for_weeks(weeks=weeks, keys=(*weight_keys, FAIRSHARE_LENT_FACTOR))
    declared_lent = Decimal(value_text(defaults()[FAIRSHARE_LENT_FACTOR]))
    out: dict[tuple[int, str], tuple[Decimal, Decimal]] = {}
    for pool_id, week in keys:
        values = in_force.get(week, {})
        lent = values.get(FAIRSHARE_LENT_FACTOR)
        out[(pool_id, week)] = (
            billing_weight(values, pool_keys.get(pool_id, "")),
            declared_lent if lent is None else Decimal(value_text(lent)),
        )
    return out


def usage_gpu_hours_by_team_per_week(*, until: datetime, weeks: int) -> list[dict[int, Decimal]]:
    """GPU-hours used per team id in each of the `weeks` whole weeks before `until`, latest week first, as fair
    share counts them: in the common unit (A100-equivalent GPU-hours, each pool's billing weight), and usage in a
    preemptible window (lent GPUs) at the policy's lent-usage factor (default 0), both in force in the ISO week the
    record's period starts in (usage_counted_factors).

    A record counts in the week its period starts in: index 0 holds [until − 1 week, until). Weeks
    step on the local clock (settings.TIME_ZONE), so across a change of summer time every week still
    begins at `until`'s local time of day and lasts 167 or 169 hours. Three queries.
    """
    local_until = until.astimezone(timezone.get_default_timezone())
    # Aware arithmetic within one zone is wall-clock arithmetic: each bound keeps the local time of day.
    bounds = [(local_until - timedelta(weeks=k)).astimezone(UTC) for k in range(weeks, -1, -1)]  # oldest first
    rows = list(
        UsageRecord.objects.filter(period_start__gte=bounds[0], period_start__lt=bounds[-1])
        .annotate(lent=Case(When(window__tier=WindowTier.PREEMPTIBLE, then=Value(True)), default=Value(False),
                            output_field=BooleanField()))
        .values("team_id", "pool_id", "lent", "period_start")
        .annotate(total=Sum("gpu_hours_used"))
        .order_by()
    )
    factors = usage_counted_factors(keys={(row["pool_id"], format_isoweek(row["period_start"])) for row in rows})
    buckets: list[dict[int, Decimal]] = [{} for _week in range(weeks)]
    for row in rows:
        weight, lent_factor = factors[(row["pool_id"], format_isoweek(row["period_start"]))]
        counted = row["total"] * weight * (lent_factor if row["lent"] else 1)
        index = weeks - bisect.bisect_right(bounds, row["period_start"])
        bucket = buckets[index]
        bucket[row["team_id"]] = bucket.get(row["team_id"], Decimal(0)) + counted
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
