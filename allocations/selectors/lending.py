"""GPU-hours a standard window lent to others and they used: the credit its charge subtracts (docs/chargeback.md).

A window lends when the elastic policy offers its idle GPUs to preemptible work: an `ElasticAction` of kind IDLE or
NIGHT_OPEN with GPUs on the window, from `started_at` until `ended_at` (or the window's end), the hourly evaluation's
record (the agent's minute-level lends are the moments between, not the record). Others use lent GPUs through
preemptible windows: the usage the schedulers measured in preemptible windows (UsageRecord.window) of other teams, on
the same pool. Per UTC hour of the pool:

    offered_L   = gpus_L × part_L, where part_L is the part of the hour L's lend covers     (GPU-hours)
    free        = the pool's GPUs not held by any priority or standard window that hour (GPU-hours)
    on_lent     = max(0, preemptible usage of the hour − free)   (preemptible work runs on free GPUs first)
    others_L    = the part of on_lent run by teams other than L's (in proportion to their preemptible usage)
    credit_L    = min(offered_L, others_L × part_L × gpus_L / Σ gpus of the hour's lenders)

so no hour credits more than was offered, nor more than others used beyond the free GPUs, and usage is taken as
even over the hour (a lend of half an hour shares in half of it). A usage record longer than
an hour is spread evenly over its hours (as the dashboards read it). The pure part, `lent_credit_hours`, takes plain
data; `window_lent_credits` reads it for a list of windows.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from django.db.models import Q

from allocations.models import AllocationWindow, ElasticAction, ElasticActionKind, UsageRecord, WindowTier

HOUR = timedelta(hours=1)
GPU_HOURS = Decimal("0.01")


@dataclass(frozen=True)
class Lend:
    window_id: int
    team_id: int
    pool_id: int
    gpus: int
    start: datetime
    end: datetime


@dataclass(frozen=True)
class Use:
    """GPU-hours a team measured in a preemptible window over a period."""

    team_id: int
    pool_id: int
    start: datetime
    end: datetime
    gpu_hours: Decimal


@dataclass(frozen=True)
class Held:
    """GPUs a priority or standard window holds on a pool over its time."""

    pool_id: int
    gpus: int
    start: datetime
    end: datetime


def _hours(start: datetime, end: datetime) -> Iterator[tuple[datetime, Decimal]]:
    """Each UTC hour [start, end) touches, with the fraction of it covered."""
    start, end = start.astimezone(UTC), end.astimezone(UTC)
    hour = start.replace(minute=0, second=0, microsecond=0)
    while hour < end:
        covered = (min(hour + HOUR, end) - max(hour, start)).total_seconds()
        if covered > 0:
            yield hour, Decimal(int(covered)) / 3600
        hour += HOUR


def lent_credit_hours(
    *, lends: Sequence[Lend], uses: Iterable[Use], held: Iterable[Held], pool_gpus: dict[int, int],
) -> dict[int, Decimal]:
    """The GPU-hours each lending window (by id) lent and others used (module docstring), to 0.01 GPU-hour."""
    offered: dict[tuple[int, datetime], list[tuple[Lend, Decimal]]] = defaultdict(list)
    for lend in lends:
        for hour, part in _hours(lend.start, lend.end):
            offered[(lend.pool_id, hour)].append((lend, part))
    if not offered:
        return {}
    used: dict[tuple[int, datetime], dict[int, Decimal]] = defaultdict(lambda: defaultdict(Decimal))
    for use in uses:
        seconds = Decimal(int((use.end - use.start).total_seconds()))
        for hour, part in _hours(use.start, use.end):
            if (use.pool_id, hour) in offered:
                used[(use.pool_id, hour)][use.team_id] += use.gpu_hours * part * 3600 / seconds
    holding: dict[tuple[int, datetime], Decimal] = defaultdict(Decimal)
    for window in held:
        for hour, part in _hours(window.start, window.end):
            if (window.pool_id, hour) in offered:
                holding[(window.pool_id, hour)] += window.gpus * part
    credits: dict[int, Decimal] = defaultdict(Decimal)
    for (pool_id, hour), offers in offered.items():
        by_team = used.get((pool_id, hour), {})
        total_used = sum(by_team.values(), Decimal(0))
        if not total_used:
            continue
        free = max(Decimal(pool_gpus.get(pool_id, 0)) - holding[(pool_id, hour)], Decimal(0))
        on_lent = max(total_used - free, Decimal(0))
        lenders_gpus = sum(lend.gpus for lend, _part in offers)
        for lend, part in offers:
            others = on_lent * (total_used - by_team.get(lend.team_id, Decimal(0))) / total_used
            credits[lend.window_id] += min(lend.gpus * part, others * part * lend.gpus / lenders_gpus)
    return {window_id: hours.quantize(GPU_HOURS) for window_id, hours in credits.items() if hours > 0}


def window_lent_credits(*, window_ids: Iterable[int]) -> dict[int, Decimal]:
    """The GPU-hours each of the standard windows `window_ids` lent and others used, by window id (a window that
    lent nothing, or whose lent GPUs nobody used, is absent). One query when none of them lent, four at most."""
    ids = set(window_ids)
    if not ids:
        return {}
    actions = list(
        ElasticAction.objects.filter(
            window_id__in=ids, window__tier=WindowTier.STANDARD, gpus__gt=0,
            kind__in=[ElasticActionKind.IDLE, ElasticActionKind.NIGHT_OPEN])
        .values_list("window_id", "window__team_id", "pool_id", "gpus", "started_at", "ended_at", "window__start",
                     "window__end", "pool__gpu_count"))
    lends = [
        Lend(window_id=window_id, team_id=team_id, pool_id=pool_id, gpus=gpus, start=max(started, w_start),
             end=min(ended or w_end, w_end))
        for window_id, team_id, pool_id, gpus, started, ended, w_start, w_end, _count in actions
        if max(started, w_start) < min(ended or w_end, w_end)
    ]
    if not lends:
        return {}
    pool_gpus = {pool_id: count for _w, _t, pool_id, _g, _s, _e, _ws, _we, count in actions}
    start, end = min(lend.start for lend in lends), max(lend.end for lend in lends)
    overlapping = Q(pool_id__in=set(pool_gpus), start__lt=end, end__gt=start)
    uses = [
        Use(team_id=team_id, pool_id=pool_id, start=p_start, end=p_end, gpu_hours=hours)
        for team_id, pool_id, p_start, p_end, hours in UsageRecord.objects.filter(
            pool_id__in=set(pool_gpus), window__tier=WindowTier.PREEMPTIBLE, period_start__lt=end,
            period_end__gt=start).values_list("team_id", "pool_id", "period_start", "period_end", "gpu_hours_used")
    ]
    held = [
        Held(pool_id=pool_id, gpus=gpus, start=w_start, end=w_end)
        for pool_id, gpus, w_start, w_end in AllocationWindow.objects.filter(overlapping)
        .filter(withdrawal__isnull=True).exclude(tier=WindowTier.PREEMPTIBLE)
        .values_list("pool_id", "gpu_count", "start", "end")
    ] if uses else []
    return lent_credit_hours(lends=lends, uses=uses, held=held, pool_gpus=pool_gpus)
