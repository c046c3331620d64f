"""Measured usage: the scheduler side's usage reports, checked and stored once per idempotency key."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Count, Max, Min
from django.utils import timezone
from django.utils.translation import gettext as _

from allocations import usage_fit
from allocations.models import (
    AllocationWindow,
    Cluster,
    ClusterAccount,
    GpuPool,
    SchedulerClient,
    Team,
    UsageRecord,
)
from core.locks import write_transaction

FUTURE_SKEW = timedelta(minutes=5)  # clocks of scheduler hosts may run a little ahead
# Reads that widen the span around a new usage report to the reports chained to it, before counting the
# whole retention window at once instead (a long chain of staggered periods).
CLUSTER_WALK_STEPS = 8
# The most stored reports a new one is checked against (those chained to it by overlapping periods). More is
# implausibly fragmented reporting: collectors report on an hour grid, whose periods touch and do not chain.
# It bounds the check, which runs under the pool's row lock (docs/benchmarks.md, "Usage reports").
USAGE_MAX_CHAINED = 1000


class IdempotencyConflict(Exception):
    """The idempotency key was used before with different data; nothing was changed."""

    def __init__(self, record: UsageRecord) -> None:
        super().__init__(f"idempotency key {record.idempotency_key!r} was used for different data")
        self.record = record


@dataclass(frozen=True)
class UsageResult:
    record: UsageRecord
    replayed: bool  # True when the key was seen before: nothing changed


USAGE_VALUE_FIELDS = (
    "period_start",
    "period_end",
    "gpu_hours_used",
    "mean_utilization_pct",
    "mean_queue_wait_minutes",
)


def _same_usage(record: UsageRecord, *, team: Team | None, window_id: int | None, values: Mapping[str, Any]) -> bool:
    if team is None or record.team_id != team.pk or record.window_id != window_id:
        return False
    for name in USAGE_VALUE_FIELDS:
        stored, given = getattr(record, name), values[name]
        if isinstance(stored, Decimal):
            if stored != Decimal(str(given)):
                return False
        elif stored != given:
            return False
    return True


@write_transaction
def usage_record(
    *,
    client: SchedulerClient,
    team_slug: str,
    pool_slug: str,
    window_id: int | None,
    period_start: datetime,
    period_end: datetime,
    gpu_hours_used: Decimal,
    mean_utilization_pct: Decimal,
    mean_queue_wait_minutes: Decimal,
    idempotency_key: str,
    now: datetime | None = None,
) -> UsageResult:
    """Store what `client`'s scheduler reports a team used on one of its cluster's pools.

    Idempotent on (pool, idempotency_key): the same key with the same data returns the first
    record and changes nothing (`replayed`); with different data it raises
    IdempotencyConflict and changes nothing. A report that cannot be true raises
    ValidationError keyed by field and stores nothing: a pool or window of another cluster, a
    window of another team or pool or not overlapping the period, a team with neither an
    account on the cluster nor a window on the pool, a period that starts before the
    retention horizon (DOCKET_USAGE_MAX_AGE_DAYS) or ends in the future, more GPU-hours than
    the pool holds over the period, or more than it holds together with the pool's other
    reports (`_usage_fits_pool`, docs/adapters.md "Usage reports Docket refuses").

    The pool's row is locked (SELECT ... FOR NO KEY UPDATE: rows that refer to the pool are still
    written meanwhile) from the key's lookup to the insert, so concurrent reports of one pool are
    checked one after the other and cannot together overfill it. One transaction
    (core.locks.write_transaction).
    """
    now = now or timezone.now()
    cluster = client.cluster
    pool = GpuPool.objects.filter(cluster=cluster, slug=pool_slug).first()
    if pool is None:
        raise ValidationError({"pool": _("No pool %(pool)s on cluster %(cluster)s.")
                               % {"pool": pool_slug, "cluster": cluster.slug}})
    team = Team.objects.filter(slug=team_slug).first()
    values = {
        "period_start": period_start,
        "period_end": period_end,
        "gpu_hours_used": gpu_hours_used,
        "mean_utilization_pct": mean_utilization_pct,
        "mean_queue_wait_minutes": mean_queue_wait_minutes,
    }
    pool = GpuPool.objects.select_for_update(no_key=True).get(pk=pool.pk)
    existing = UsageRecord.objects.filter(pool=pool, idempotency_key=idempotency_key).first()
    if existing is not None:
        if _same_usage(existing, team=team, window_id=window_id, values=values):
            return UsageResult(record=existing, replayed=True)
        raise IdempotencyConflict(existing)

    window = _usage_check(cluster=cluster, pool=pool, team=team, team_slug=team_slug, window_id=window_id,
                          period_start=period_start, period_end=period_end, gpu_hours_used=gpu_hours_used,
                          now=now)
    assert team is not None, "_usage_check refuses an unknown team"
    try:
        with transaction.atomic():
            record = UsageRecord.objects.create(
                pool=pool,
                team=team,
                window=window,
                idempotency_key=idempotency_key,
                reported_by=client.name,
                **values,
            )
    except IntegrityError:
        # The same key won a race against us (only where the pool's lock is not taken, e.g.
        # SQLite): answer as it was answered.
        existing = UsageRecord.objects.filter(pool=pool, idempotency_key=idempotency_key).first()
        if existing is None:
            raise
        if _same_usage(existing, team=team, window_id=window_id, values=values):
            return UsageResult(record=existing, replayed=True)
        raise IdempotencyConflict(existing) from None
    return UsageResult(record=record, replayed=False)


def _seconds(span: timedelta) -> Decimal:
    """A duration in seconds, exactly (GPU-hours are compared as GPU-seconds, without rounding)."""
    return Decimal(span.days * 86400 + span.seconds) + Decimal(span.microseconds) / 1_000_000


def _gpu_hours(value: Decimal) -> Decimal:
    return value.quantize(Decimal("0.01"))


def _usage_check(
    *, cluster: Cluster, pool: GpuPool, team: Team | None, team_slug: str, window_id: int | None,
    period_start: datetime, period_end: datetime, gpu_hours_used: Decimal, now: datetime,
) -> AllocationWindow | None:
    """Validate a usage report (ValidationError keyed by field, all problems at once); returns its window."""
    errors: dict[str, list[str]] = {}
    if team is None:
        errors["team"] = [_("No team %s.") % team_slug]
    elif not (ClusterAccount.objects.filter(cluster=cluster, team=team).exists()
              or AllocationWindow.objects.filter(pool=pool, team=team).exists()):
        errors["team"] = [_("Team %(team)s has no account on cluster %(cluster)s and no window on pool %(pool)s.")
                          % {"team": team.slug, "cluster": cluster.slug, "pool": pool.slug}]
    horizon = now - timedelta(days=settings.DOCKET_USAGE_MAX_AGE_DAYS)
    if period_start < horizon:
        errors["period_start"] = [
            _("Usage is accepted for the last %(days)s days only: the period must start at %(horizon)s or later.")
            % {"days": settings.DOCKET_USAGE_MAX_AGE_DAYS, "horizon": horizon.isoformat()}
        ]
    if period_end <= period_start:
        errors["period_end"] = [_("The period must end after it starts.")]
    elif period_end > now + FUTURE_SKEW:
        errors["period_end"] = [_("The period ends in the future.")]
    elif gpu_hours_used * 3600 > pool.gpu_count * _seconds(period_end - period_start):
        errors["gpu_hours_used"] = [
            _("%(pool)s holds %(max)s GPU-hours over this period.")
            % {"pool": pool.slug, "max": _gpu_hours(pool.gpu_count * _seconds(period_end - period_start) / 3600)}
        ]
    if team is not None and "period_start" not in errors:
        hour = period_start.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
        limit = settings.DOCKET_USAGE_MAX_REPORTS_PER_HOUR
        if UsageRecord.objects.filter(team=team, pool=pool, period_start__gte=hour,
                                      period_start__lt=hour + timedelta(hours=1)).count() >= limit:
            errors["period_start"] = [
                _("Team %(team)s already has %(limit)s usage reports on %(pool)s starting between %(start)s and "
                  "%(end)s: at most %(limit)s per team, pool and hour. Report longer periods.")
                % {"team": team.slug, "pool": pool.slug, "limit": limit, "start": hour.isoformat(),
                   "end": (hour + timedelta(hours=1)).isoformat()}
            ]
    window = None
    if window_id is not None:
        window = AllocationWindow.objects.filter(pk=window_id, cluster=cluster).first()
        if window is None:
            errors["window"] = [_("No window %(id)s on cluster %(cluster)s.") % {"id": window_id,
                                                                                 "cluster": cluster.slug}]
        elif window.pool_id != pool.pk or (team is not None and window.team_id != team.pk):
            errors["window"] = [_("Window %s belongs to another team or pool.") % window_id]
        elif not (window.start < period_end and period_start < window.end):
            errors["window"] = [_("Window %s does not overlap the period.") % window_id]
    if errors:
        raise ValidationError(errors)
    overfull = _usage_fits_pool(pool=pool, period_start=period_start, period_end=period_end,
                                gpu_hours_used=gpu_hours_used, horizon=horizon)
    if overfull is not None:
        raise ValidationError({"gpu_hours_used": [
            _("With the reports already stored for %(pool)s between %(start)s and %(end)s, this one makes "
              "%(total)s GPU-hours; the pool holds %(max)s over that span.")
            % {"pool": pool.slug, "start": overfull.start.isoformat(), "end": overfull.end.isoformat(),
               "total": _gpu_hours(overfull.gpu_hours), "max": _gpu_hours(overfull.capacity_gpu_hours)}
        ]})
    return window


def _usage_fits_pool(
    *, pool: GpuPool, period_start: datetime, period_end: datetime, gpu_hours_used: Decimal, horizon: datetime
) -> usage_fit.Overfull | None:
    """The worst span the new report would overfill together with the pool's stored reports, or None.

    Reads the reports chained to the new one by overlapping periods (allocations/usage_fit.py
    says why those are enough) and finds the worst span among them. Reports ending before the
    retention horizon are left out: that can only accept more, never refuse a true report.
    The chain is found by counting first (a count, the earliest start and the latest end of the
    reports overlapping a span, widened until it holds still), so a chain of more than
    USAGE_MAX_CHAINED reports is refused (ValidationError on period_start) before any is read.
    """
    lo, hi = period_start, period_end
    retained = UsageRecord.objects.filter(pool=pool, period_end__gt=horizon)
    for attempt in range(CLUSTER_WALK_STEPS + 1):
        records = retained
        if attempt < CLUSTER_WALK_STEPS:  # else: the whole retention window, at once
            records = records.filter(period_start__lt=hi, period_end__gt=lo)
        # Counted up to one past the cap only, so a long chain costs no more than a short one to refuse.
        if records.values("pk")[: USAGE_MAX_CHAINED + 1].count() > USAGE_MAX_CHAINED:
            raise ValidationError({"period_start": [
                _("This report overlaps a chain of more than %(limit)s reports stored for %(pool)s (between "
                  "%(start)s and %(end)s): such fragmented reporting is refused. Report periods on the hour grid.")
                % {"limit": USAGE_MAX_CHAINED, "pool": pool.slug, "start": lo.isoformat(), "end": hi.isoformat()}
            ]})
        found = records.aggregate(count=Count("pk"), lo=Min("period_start"), hi=Max("period_end"))
        count = found["count"]
        if not count:
            return None  # the report alone fits its period (checked before)
        new_lo, new_hi = min(lo, found["lo"]), max(hi, found["hi"])
        if (new_lo, new_hi) == (lo, hi):
            break
        lo, hi = new_lo, new_hi
    rows = records.values_list("period_start", "period_end", "gpu_hours_used")
    rows_us = [(usage_fit.us(start), usage_fit.us(end), hours) for start, end, hours in rows]
    chained = usage_fit.chained(rows_us, start=usage_fit.us(period_start), end=usage_fit.us(period_end))
    if not chained:
        return None
    return usage_fit.worst_span(chained, start=usage_fit.us(period_start), end=usage_fit.us(period_end),
                                gpu_hours=gpu_hours_used, gpus=pool.gpu_count)
