"""The elastic policy as a pure function: (policy, a pool's windows, its usage, now) → actions.

No database and no clock (gettext only, for the validation messages): `now` and the committee's
time zone are inputs, so every boundary (the idle span, the night crossing midnight, a
daylight-saving night) is tested with plain data.

Spans are in minutes (the committee's policy: under 25% for 5 minutes, ...). Docket's own evaluation is
the hourly reconciliation: its spans end at the last whole hour that has ended (an evaluation at 10:15
reads up to 10:00, UTC hour grid, like the engine's), so a collector that posts each hour after it ends
has been heard from; a span shorter than an hour is then read from the hourly record that contains it.
The agent next to the scheduler (docket_scheduler.elastic_agent) applies the same thresholds every
minute on minute-level measurements. A window or pool whose span the records do not cover end to end is *not
measured*, and "not measured" is never "idle": nothing is flagged, offered or promoted from it.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta, tzinfo
from decimal import ROUND_FLOOR, ROUND_HALF_UP, Decimal

from django.utils.translation import gettext as _

GRANTED_TIERS = ("priority", "standard")  # a preemptible window already yields; it is never "granted but idle"
MAX_SPAN_MINUTES = 10_080  # a week (governed.params.ELASTIC_SPAN_MAX_MINUTES)
_HOUR = timedelta(hours=1)


class ActionKind(enum.StrEnum):
    IDLE = "idle"  # a granted window measured under the idle threshold for the whole idle span
    PROMOTE = "promote"  # the pool is busy and granted work waits: the burst reserve goes to it
    NIGHT_OPEN = "night_open"  # at night, a standard window's spare GPUs are opened to preemptible work


@dataclass(frozen=True)
class ElasticPolicy:
    """The parameters of one policy version: governed parameters "elastic.<name>" (governed.params), numbered as the
    version of the rules that last set one (allocations.elastic.selectors.policy_in_force)."""

    version: int = 1
    idle_threshold_pct: int = 25
    idle_span_minutes: int = 5
    offer_idle_to_preemptible: bool = True
    promote_utilization_pct: int = 80
    promote_queue_wait_minutes: int = 30
    recent_span_minutes: int = 10
    night_start: time = time(22, 0)
    night_end: time = time(6, 0)
    night_utilization_pct: int = 30
    standby_wake_minutes: int = 5  # the agent (docket-elastic-agent) wakes the cold standby within this

    @property
    def idle_span(self) -> timedelta:
        return timedelta(minutes=self.idle_span_minutes)

    @property
    def recent_span(self) -> timedelta:
        return timedelta(minutes=self.recent_span_minutes)

    @property
    def reach(self) -> timedelta:
        """How far back the rules read."""
        return max(self.idle_span, self.recent_span)


def policy_errors(policy: ElasticPolicy) -> dict[str, str]:
    """What is wrong with a policy, by field name; empty when it is valid."""
    errors: dict[str, str] = {}
    for name in ("idle_threshold_pct", "promote_utilization_pct", "night_utilization_pct"):
        value = getattr(policy, name)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 100:
            errors[name] = _("A percentage is a whole number from 0 to 100.")
    for name in ("idle_span_minutes", "recent_span_minutes", "standby_wake_minutes"):
        value = getattr(policy, name)
        if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_SPAN_MINUTES:
            errors[name] = _("A span is a whole number of minutes from 1 to %(max)d.") % {"max": MAX_SPAN_MINUTES}
    wait = policy.promote_queue_wait_minutes
    if isinstance(wait, bool) or not isinstance(wait, int) or wait < 0:
        errors["promote_queue_wait_minutes"] = _("The queue wait is a whole number of minutes, 0 or more.")
    if policy.night_start == policy.night_end:
        errors["night_end"] = _("The night must end at another time than it starts.")
    return errors


@dataclass(frozen=True)
class PoolInput:
    id: int
    gpu_count: int
    burst_reserve_gpus: int


@dataclass(frozen=True)
class WindowInput:
    id: int
    team_id: int
    tier: str
    gpu_count: int
    start: datetime
    end: datetime


@dataclass(frozen=True)
class UsageInput:
    team_id: int
    window_id: int | None
    period_start: datetime
    period_end: datetime
    gpu_hours_used: Decimal
    mean_utilization_pct: Decimal
    mean_queue_wait_minutes: Decimal


@dataclass(frozen=True)
class Action:
    """One thing the policy does now. `gpus` are the GPUs it moves (0: flagged, nothing offered)."""

    kind: ActionKind
    pool_id: int
    window_id: int | None
    team_id: int | None
    gpus: int
    utilization_pct: Decimal  # measured over [span_start, span_end): the window's, or the pool's for PROMOTE
    queue_wait_minutes: Decimal | None  # PROMOTE: the waiting team's mean wait
    span_start: datetime
    span_end: datetime
    threshold_pct: int
    window_gpus: int | None = None  # the window's GPUs (IDLE, NIGHT_OPEN)
    pool_utilization_pct: Decimal | None = None  # PROMOTE
    pool_queue_wait_minutes: Decimal | None = None  # PROMOTE

    @property
    def key(self) -> tuple[str, int, int | None]:
        """What an action is about: at most one of each key is in force at a time."""
        return (self.kind.value, self.pool_id, self.window_id)


@dataclass(frozen=True)
class Measure:
    utilization_pct: Decimal  # time-weighted mean
    max_utilization_pct: Decimal
    queue_wait_minutes: Decimal  # time-weighted mean


def span_end_of(now: datetime) -> datetime:
    """The end of the last whole hour (UTC) at `now`: measurements are read up to here."""
    return now.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def in_night(now: datetime, *, policy: ElasticPolicy, tz: tzinfo) -> bool:
    """True when `now`, on the committee's wall clock, lies in [night_start, night_end), across midnight or not.

    Wall-clock times: on a daylight-saving night the span is an hour shorter or longer, as it is for people.
    """
    local = now.astimezone(tz).time().replace(tzinfo=None)
    start, end = policy.night_start, policy.night_end
    if start < end:
        return start <= local < end
    return local >= start or local < end


def measure(records: Iterable[UsageInput], *, start: datetime, end: datetime) -> Measure | None:
    """The records' utilization and wait over [start, end), weighted by time; None unless they cover it all."""
    pieces: list[tuple[datetime, datetime, UsageInput]] = []
    for record in records:
        lo, hi = max(record.period_start, start), min(record.period_end, end)
        if lo < hi:
            pieces.append((lo, hi, record))
    if not pieces:
        return None
    pieces.sort(key=lambda piece: piece[0])
    reached = start
    for lo, hi, _record in pieces:
        if lo > reached:
            return None  # a gap: part of the span was not measured
        reached = max(reached, hi)
    if reached < end:
        return None
    seconds = [Decimal(int((hi - lo).total_seconds())) for lo, hi, _r in pieces]
    total = sum(seconds, Decimal(0))
    util = sum((s * r.mean_utilization_pct for s, (_l, _h, r) in zip(seconds, pieces, strict=True)), Decimal(0))
    wait = sum((s * r.mean_queue_wait_minutes for s, (_l, _h, r) in zip(seconds, pieces, strict=True)), Decimal(0))
    return Measure(
        utilization_pct=(util / total).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP),
        max_utilization_pct=max(r.mean_utilization_pct for _l, _h, r in pieces),
        queue_wait_minutes=(wait / total).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP),
    )


def _pool_utilization(records: Sequence[UsageInput], *, start: datetime, end: datetime) -> Decimal | None:
    """The pool's GPUs in use, how busy: utilization weighted by the GPU-hours each record used in the span."""
    weight = Decimal(0)
    busy = Decimal(0)
    for record in records:
        lo, hi = max(record.period_start, start), min(record.period_end, end)
        if lo >= hi:
            continue
        length = Decimal((record.period_end - record.period_start).total_seconds())
        fraction = Decimal((hi - lo).total_seconds()) / length
        hours = record.gpu_hours_used * fraction
        weight += hours
        busy += hours * record.mean_utilization_pct
    if weight == 0:
        return None
    return (busy / weight).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)


def unused_gpus(gpu_count: int, utilization_pct: Decimal) -> int:
    """gpus × (1 − utilization), rounded down."""
    value = Decimal(gpu_count) * (Decimal(100) - utilization_pct) / Decimal(100)
    return int(value.to_integral_value(rounding=ROUND_FLOOR))


def evaluate(
    *,
    policy: ElasticPolicy,
    pool: PoolInput,
    windows: Sequence[WindowInput],
    usage: Sequence[UsageInput],
    now: datetime,
    tz: tzinfo,
) -> list[Action]:
    """The actions the policy takes on one pool at `now`, in a stable order (kind, window id).

    `windows` are the pool's live windows (any that are not active at `now` are ignored); `usage`
    its records around the spans (records of other periods are ignored). Rules (docs/elastic.md):

    - IDLE: a priority or standard window active since the idle span began, whose own records
      cover the span and each stayed under the idle threshold; offers gpus × (1 − mean
      utilization), rounded down, when the policy offers idle GPUs (else it is only flagged).
    - PROMOTE: over the recent span, the pool's utilization is above the promotion threshold,
      its queue wait above the wait threshold, and a team holding an active priority or standard
      window waited longer than that: the pool's burst reserve goes to that team's work (the
      priority tier first, then the longest wait).
    - NIGHT_OPEN: while it is night in `tz`, a standard window whose records cover the recent
      span under the night threshold opens its spare GPUs to preemptible work, unless it already
      offers them as IDLE.
    """
    end = span_end_of(now)
    idle_start = end - policy.idle_span
    recent_start = end - policy.recent_span
    active = [w for w in windows if w.start <= now < w.end]
    by_window: dict[int, list[UsageInput]] = {}
    for record in usage:
        if record.window_id is not None:
            by_window.setdefault(record.window_id, []).append(record)

    actions: list[Action] = []
    offering: set[int] = set()
    for window in sorted(active, key=lambda w: w.id):
        if window.tier not in GRANTED_TIERS or window.start > idle_start:
            continue
        found = measure(by_window.get(window.id, ()), start=idle_start, end=end)
        if found is None or found.max_utilization_pct >= policy.idle_threshold_pct:
            continue
        gpus = unused_gpus(window.gpu_count, found.utilization_pct) if policy.offer_idle_to_preemptible else 0
        if gpus:
            offering.add(window.id)
        actions.append(Action(
            kind=ActionKind.IDLE, pool_id=pool.id, window_id=window.id, team_id=window.team_id, gpus=gpus,
            utilization_pct=found.utilization_pct, queue_wait_minutes=None, span_start=idle_start, span_end=end,
            threshold_pct=policy.idle_threshold_pct, window_gpus=window.gpu_count,
        ))

    promotion = _promotion(policy=policy, pool=pool, active=active, usage=usage, start=recent_start, end=end)
    if promotion is not None:
        actions.append(promotion)

    if in_night(now, policy=policy, tz=tz):
        for window in sorted(active, key=lambda w: w.id):
            if window.tier != "standard" or window.id in offering or window.start > recent_start:
                continue
            found = measure(by_window.get(window.id, ()), start=recent_start, end=end)
            if found is None or found.max_utilization_pct >= policy.night_utilization_pct:
                continue
            gpus = unused_gpus(window.gpu_count, found.utilization_pct)
            if gpus:
                actions.append(Action(
                    kind=ActionKind.NIGHT_OPEN, pool_id=pool.id, window_id=window.id, team_id=window.team_id,
                    gpus=gpus, utilization_pct=found.utilization_pct, queue_wait_minutes=None,
                    span_start=recent_start, span_end=end, threshold_pct=policy.night_utilization_pct,
                    window_gpus=window.gpu_count,
                ))
    return actions


def _promotion(
    *, policy: ElasticPolicy, pool: PoolInput, active: Sequence[WindowInput], usage: Sequence[UsageInput],
    start: datetime, end: datetime,
) -> Action | None:
    if pool.burst_reserve_gpus <= 0:
        return None
    in_span = [r for r in usage if r.period_start < end and r.period_end > start]
    overall = measure(in_span, start=start, end=end)
    utilization = _pool_utilization(in_span, start=start, end=end)
    if overall is None or utilization is None:
        return None
    if utilization <= policy.promote_utilization_pct or overall.queue_wait_minutes <= policy.promote_queue_wait_minutes:
        return None
    rank = {"priority": 0, "standard": 1}
    team_tier: dict[int, int] = {}
    for window in active:
        if window.tier in rank:
            team_tier[window.team_id] = min(team_tier.get(window.team_id, 9), rank[window.tier])
    waiting: list[tuple[int, Decimal, int]] = []
    for team_id, tier_rank in team_tier.items():
        found = measure([r for r in in_span if r.team_id == team_id], start=start, end=end)
        if found is not None and found.queue_wait_minutes > policy.promote_queue_wait_minutes:
            waiting.append((tier_rank, -found.queue_wait_minutes, team_id))
    if not waiting:
        return None
    _rank, minus_wait, team_id = min(waiting)
    return Action(
        kind=ActionKind.PROMOTE, pool_id=pool.id, window_id=None, team_id=team_id, gpus=pool.burst_reserve_gpus,
        utilization_pct=utilization, queue_wait_minutes=-minus_wait, span_start=start, span_end=end,
        threshold_pct=policy.promote_utilization_pct, pool_utilization_pct=utilization,
        pool_queue_wait_minutes=overall.queue_wait_minutes,
    )


@dataclass(frozen=True)
class ReplayTotals:
    """What a policy would have done over a past span, per kind of action."""

    action_hours: dict[ActionKind, int]  # hours with an action of the kind in force (summed over windows/pools)
    gpu_hours: dict[ActionKind, int]  # GPUs moved × hours
    windows: dict[ActionKind, int]  # distinct windows (pools for PROMOTE) acted on
    # The shortest usage record read, in minutes (None: no usage): 60 or more while the policy's spans are shorter
    # means the replay only had hourly usage, and read each span from the hour that contains it.
    finest_usage_minutes: int | None = None

    def hourly_only(self, policy: ElasticPolicy) -> bool:
        shortest = min(policy.idle_span_minutes, policy.recent_span_minutes)
        return self.finest_usage_minutes is not None and self.finest_usage_minutes > shortest


def replay(
    *,
    policy: ElasticPolicy,
    pools: Sequence[tuple[PoolInput, Sequence[WindowInput], Sequence[UsageInput]]],
    since: datetime,
    until: datetime,
    tz: tzinfo,
) -> ReplayTotals:
    """Evaluate `policy` at a quarter past every hour of [since, until), as the hourly job would have.

    Pure, like `evaluate`: the replay reads the same measurements, so a chair can compare thresholds
    over past weeks before adopting them.
    """
    hours = dict.fromkeys(ActionKind, 0)
    gpu_hours = dict.fromkeys(ActionKind, 0)
    subjects: dict[ActionKind, set[tuple[int, int | None]]] = {kind: set() for kind in ActionKind}
    tick = span_end_of(since) + timedelta(minutes=15)
    while tick < until:
        for pool, windows, usage in pools:
            for action in evaluate(policy=policy, pool=pool, windows=windows, usage=usage, now=tick, tz=tz):
                hours[action.kind] += 1
                gpu_hours[action.kind] += action.gpus
                subjects[action.kind].add((action.pool_id, action.window_id))
        tick += _HOUR
    lengths = [int((r.period_end - r.period_start).total_seconds()) // 60 for _p, _w, usage in pools for r in usage]
    return ReplayTotals(
        action_hours=hours, gpu_hours=gpu_hours, windows={kind: len(found) for kind, found in subjects.items()},
        finest_usage_minutes=min(lengths, default=None),
    )
