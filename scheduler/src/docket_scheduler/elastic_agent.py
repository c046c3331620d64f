"""`docket-elastic-agent`: the committee's elastic policy applied every minute, next to the scheduler.

Docket evaluates the elastic policy once an hour on the hourly usage records (its reconciliation and record,
docs/elastic.md). This agent applies the same thresholds at the speed the policy is written in: every minute it

1. reads the policy in force (`GET /api/v1/elastic/policy/`, ETag) and the cluster's windows
   (`GET /api/v1/windows/`), and keeps both in its state file: when Docket cannot be reached it goes on with the
   last ones it read (and says so);
2. measures each team's GPUs minute by minute over the policy's spans (DCGM through Prometheus, or Slurm's accounting
   where the site has no Prometheus: docket_scheduler.elastic_measure);
3. decides, per pool, which granted windows are idle: a standard window whose every minute of the idle span was
   under the idle threshold lends `gpus × (1 − mean utilization)` (rounded down) to preemptible work; a lent window
   whose last minute reached the threshold, or that is no longer measured or active, is taken back; at the
   committee's night a quiet standard window is opened the same way (night_open, night_close); placed preemptible
   work (an emergency) that holds GPUs of the cold standby wakes it ahead of its start (standby_wake, standby_end);
4. applies it in Slurm: the scavenger QOS's `GrpTRES=gres/gpu:<type>` is the pool's GPUs nobody was granted
   (the pool less its granted windows, burst reserve and cold standby) plus what is lent. A window is lent only
   while its owner's quota QOS (docket-<account>, written by docket-slurm-sync) preempts the scavenger QOS:
   the owner's job takes its GPUs back within seconds, whatever the agent does. On Kueue (`--kueue`) it raises the
   team's ClusterQueue `lendingLimit` instead, within the team's standard GPUs and its quota, and puts the sync's back
   on a reclaim (docket_scheduler.elastic_kueue); the owner's workload reclaims within seconds there too;
5. posts each action to Docket once (`POST /api/v1/elastic/actions/`, one idempotency key per
   action); an action Docket could not be told is kept in the state file and posted at the next tick.

The core, `decide()`, is pure: (policy, windows, minute measurements, what is lent, now) → actions. The clock is an
argument of `tick()`, so a test runs the loop at pinned minutes over a backfilled Prometheus.

Standard library only, like the rest of the package.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from datetime import time as wall_time
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any, TextIO
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from docket_scheduler.base import DesiredWindow, WindowFormatError, parse_whole_number, parse_windows
from docket_scheduler.cli import add_docket_options, docket_client, instant, output, pair, positive_float
from docket_scheduler.client import DocketClient, DocketError
from docket_scheduler.elastic_kueue import KueueLending, KueueLendingError
from docket_scheduler.elastic_measure import (
    SOURCES,
    MeasureError,
    MinuteSource,
    PrometheusMinutes,
    SlurmMinutes,
)
from docket_scheduler.kube_api import KubeClient, KubeError, add_kube_options, kube_config
from docket_scheduler.kueue import API_VERSIONS, flavor_name
from docket_scheduler.prometheus_usage import Prometheus, PrometheusError, accounts_map
from docket_scheduler.slurm_commands import SlurmError, SlurmTools, tool_message
from docket_scheduler.slurm_qos import SCAVENGER_QOS, Qos, burst_description, parse_qos, quota_qos_name

MINUTE = timedelta(minutes=1)
LENDING_TIERS = ("standard",)  # a priority window is a reservation: a QOS limit cannot lend it
KEY_MAX_CHARS = 100


class AgentError(Exception):
    """The agent cannot act this minute (no policy known, the scheduler's tools failed)."""


# --- the policy ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PoolBounds:
    pool: str
    gpu_count: int
    scheduler_label: str
    burst_reserve_gpus: int
    standby_gpus: int


@dataclass(frozen=True)
class AgentPolicy:
    """What the agent applies: the committee's published elastic policy (docs/elastic.md) and each pool's bounds."""

    version: int
    idle_threshold_pct: int
    idle_span_minutes: int
    offer_idle_to_preemptible: bool
    pools: Mapping[str, PoolBounds]
    promote_utilization_pct: int = 80
    promote_queue_wait_minutes: int = 30
    recent_span_minutes: int = 10
    standby_wake_minutes: int = 5
    night_start: wall_time = wall_time(22, 0)  # the committee's wall clock (`time_zone`)
    night_end: wall_time = wall_time(6, 0)
    night_utilization_pct: int = 30
    time_zone: str = "UTC"

    @classmethod
    def from_api(cls, body: Mapping[str, Any]) -> AgentPolicy:
        try:
            parameters = body["parameters"]
            policy = cls(
                version=int(body["version"]),
                idle_threshold_pct=int(parameters["idle_threshold_pct"]),
                idle_span_minutes=int(parameters["idle_span_minutes"]),
                offer_idle_to_preemptible=bool(parameters["offer_idle_to_preemptible"]),
                # A policy kept from an agent before the burst rule: the committee's figures.
                promote_utilization_pct=int(parameters.get("promote_utilization_pct", 80)),
                promote_queue_wait_minutes=int(parameters.get("promote_queue_wait_minutes", 30)),
                recent_span_minutes=int(parameters.get("recent_span_minutes", 10)),
                standby_wake_minutes=int(parameters.get("standby_wake_minutes", 5)),
                night_start=wall_time.fromisoformat(str(parameters.get("night_start", "22:00"))),
                night_end=wall_time.fromisoformat(str(parameters.get("night_end", "06:00"))),
                night_utilization_pct=int(parameters.get("night_utilization_pct", 30)),
                time_zone=str(body.get("time_zone") or "UTC"),
                pools={
                    str(p["pool"]): PoolBounds(str(p["pool"]), int(p["gpu_count"]), str(p["scheduler_label"] or ""),
                                               int(p["burst_reserve_gpus"]), int(p["standby_gpus"]))
                    for p in body["pools"]
                },
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise AgentError(f"the elastic policy from Docket is malformed: {exc!r}") from None
        if (policy.idle_span_minutes < 1 or policy.recent_span_minutes < 1 or policy.promote_queue_wait_minutes < 0
                or policy.standby_wake_minutes < 1
                or not 0 <= policy.idle_threshold_pct <= 100 or not 0 <= policy.promote_utilization_pct <= 100):
            raise AgentError("the elastic policy from Docket has a span under a minute or a threshold beyond 0-100")
        if policy.night_start == policy.night_end or not 0 <= policy.night_utilization_pct <= 100:
            raise AgentError("the elastic policy from Docket has a night that ends when it starts or a night "
                             "threshold beyond 0-100")
        try:
            ZoneInfo(policy.time_zone)
        except (ZoneInfoNotFoundError, ValueError):
            raise AgentError(f"the elastic policy's time zone {policy.time_zone!r} is unknown here") from None
        return policy

    @property
    def measured_minutes(self) -> int:
        """How many minutes the agent reads each tick: the longer of the idle span and the recent span."""
        return max(self.idle_span_minutes, self.recent_span_minutes)


def in_night(now: datetime, policy: AgentPolicy) -> bool:
    """True when `now`, on the committee's wall clock (`policy.time_zone`), lies in [night_start, night_end), across
    midnight or not: Docket's own rule (allocations.elastic.evaluate.in_night). Wall-clock times: on a daylight-saving
    night the night is an hour shorter or longer, as it is for people."""
    local = now.astimezone(ZoneInfo(policy.time_zone)).time().replace(tzinfo=None)
    start, end = policy.night_start, policy.night_end
    if start < end:
        return start <= local < end
    return local >= start or local < end


# --- what the agent remembers between minutes (its state file) ---------------------------------------


@dataclass
class AgentState:
    """The last policy and windows read from Docket, what is lent, and the actions Docket has not been told yet."""

    policy: dict[str, Any] | None = None
    policy_etag: str | None = None
    policy_read_at: str | None = None
    windows: list[dict[str, Any]] = field(default_factory=list)
    windows_read_at: str | None = None
    lent: dict[str, dict[str, Any]] = field(default_factory=dict)  # window id (text) → {"pool", "team", "gpus"}
    # account → {"pool", "team", "window", "gpus"}: the burst reserve raised on the account's quota QOS
    promoted: dict[str, dict[str, Any]] = field(default_factory=dict)
    # window id (text) → {"pool", "team", "gpus"}: a quiet standard window's spare GPUs opened for the night
    opened: dict[str, dict[str, Any]] = field(default_factory=dict)
    # pool → {"window", "team", "gpus"}: the cold standby woken for the pool's placed preemptible work
    standby: dict[str, dict[str, Any]] = field(default_factory=dict)
    unreported: list[dict[str, Any]] = field(default_factory=list)


class StateFile:
    """The agent's state as JSON, replaced atomically (a crash mid-write leaves the previous one)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def load(self) -> AgentState:
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return AgentState()
        except (OSError, ValueError) as exc:
            raise AgentError(f"cannot read the state file {self.path}: {exc}") from None
        known = {name: data[name] for name in AgentState.__dataclass_fields__ if name in data}
        return AgentState(**known)

    def save(self, state: AgentState) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(self.path.name + ".partial")
        partial.write_text(json.dumps(asdict(state), indent=1, sort_keys=True))
        os.chmod(partial, 0o600)
        partial.replace(self.path)


def window_to_state(window: DesiredWindow) -> dict[str, Any]:
    return {**asdict(window), "start": window.start.isoformat(), "end": window.end.isoformat()}


# --- the decision (pure) ---------------------------------------------------------------------------


@dataclass(frozen=True)
class WindowMinutes:
    """A window's utilization minute by minute, oldest first (None: a minute not measured), up to the tick's minute:
    the longer of the idle span and the recent span (`AgentPolicy.measured_minutes`); each rule reads its last
    minutes."""

    window: DesiredWindow
    minutes: Sequence[Decimal | None]


@dataclass(frozen=True)
class AgentAction:
    kind: str  # "lend", "reclaim", "promote", "demote", "standby_wake", "standby_end", "night_open", "night_close"
    pool: str
    window: int
    team: str
    gpus: int
    at: datetime
    utilization_pct: Decimal | None
    span_minutes: int
    reason: str
    queue_wait_minutes: Decimal | None = None  # promote: the waiting job's wait
    measured_by: str = ""  # what the numbers come from; "" for the agent's measurement source

    def key(self, cluster: str) -> str:
        key = f"elastic-{cluster}-{self.pool}-{self.kind}-w{self.window}-{self.at:%Y%m%dT%H%MZ}"
        return key[:KEY_MAX_CHARS]


@dataclass(frozen=True)
class StandbyWake:
    """The pool's cold standby woken for its placed preemptible work (an emergency the chair let use it)."""

    window: int
    team: str
    gpus: int


@dataclass(frozen=True)
class PoolDecision:
    pool: str
    gpu_type: str
    base_gpus: int  # what preemptible work may use without any lending: ungranted GPUs, or what is placed for it
    lent: Mapping[int, int]  # window → GPUs lent after this minute
    actions: Sequence[AgentAction]
    standby: StandbyWake | None = None  # the cold standby woken after this minute
    opened: Mapping[int, int] = field(default_factory=dict)  # window → GPUs opened for the night after this minute

    @property
    def scavenger_gpus(self) -> int:
        return self.base_gpus + sum(self.lent.values()) + sum(self.opened.values())


def minute_of(now: datetime) -> datetime:
    """The start of the minute `now` lies in (UTC): measurements are read up to here."""
    return now.astimezone(UTC).replace(second=0, microsecond=0)


def unused_gpus(gpu_count: int, utilization_pct: Decimal) -> int:
    """gpus × (1 − utilization), rounded down (Docket's own rule, allocations.elastic.evaluate.unused_gpus)."""
    return math.floor(Decimal(gpu_count) * (Decimal(100) - utilization_pct) / Decimal(100))


def placed_for_preemptible(policy: AgentPolicy, pool: str, windows: Sequence[DesiredWindow], now: datetime
                           ) -> tuple[int, int, DesiredWindow | None]:
    """(the GPUs of the pool's preemptible windows active at `now` or starting within the standby's wake minutes,
    the GPUs of them the cold standby holds, the latest of the windows that hold some).

    Docket places preemptible work (an emergency, docs/emergencies.md) on the pool less its granted windows and its
    cold standby; only when the chair lets an emergency use the standby does it place more, and the window says how
    many of its GPUs are the standby's (`standby_gpus`, API 1.3). The agent wakes that many, never more than the
    pool's standby; a Docket before 1.3 says none, so nothing is woken. They count from `standby_wake_minutes` before
    they start: the standby is ready when the window begins ("wakeable within five minutes" before a big launch)."""
    bounds = policy.pools.get(pool)
    if bounds is None:
        return 0, 0, None
    wake = policy.standby_wake_minutes * MINUTE
    soon = sorted((w for w in windows if w.pool == pool and w.tier == "preemptible" and w.start - wake <= now < w.end),
                  key=lambda w: (w.start, w.id))
    placed = sum(w.gpu_count for w in soon)
    holding = [w for w in soon if w.standby_gpus > 0]
    standby = min(bounds.standby_gpus, sum(w.standby_gpus for w in holding))
    return placed, standby, (holding[-1] if holding else None)


def decide(
    *, policy: AgentPolicy, pool: str, windows: Sequence[DesiredWindow], measured: Mapping[int, WindowMinutes],
    lent: Mapping[int, int], now: datetime, owner_preempts: Callable[[DesiredWindow], bool],
    standby: StandbyWake | None = None, opened: Mapping[int, int] | None = None,
) -> PoolDecision:
    """The pool's lending at `now`, and the actions that change it.

    - base: the pool's GPUs less its active granted windows (priority and standard), its burst reserve and its cold
      standby, never below 0; or, when more, the GPUs of its placed preemptible windows (`placed_for_preemptible`:
      active, or starting within the standby's wake minutes), at most the pool less its granted windows and its
      standby, plus the standby they hold;
    - STANDBY_WAKE: those windows hold GPUs of the cold standby (the chair let an emergency use it) and `standby`
      (what was woken before this minute) is not that: the standby's GPUs are added to the base; STANDBY_END when
      they no longer do (the window ended) or hold other GPUs;
    - LEND: an active standard window, not lent, active since the idle span began, whose every minute of the span was
      measured and under the idle threshold, and whose owner's QOS preempts preemptible work
      (`owner_preempts`): gpus × (1 − mean), rounded down, when the policy offers idle GPUs and that is above 0;
    - RECLAIM: a lent window whose last minute was not measured or reached the threshold, that is no longer active,
      or whose owner's QOS stopped preempting.
    - NIGHT_OPEN: while it is night on the committee's wall clock (`in_night`), an active standard window, neither
      lent nor opened, active since the recent span began, whose every minute of the recent span was measured and
      under the night threshold, and whose owner's QOS preempts: gpus × (1 − mean), rounded down, when above 0. A
      window lent as idle is not opened as well (Docket's rule: "unless it already offers them as IDLE");
    - NIGHT_CLOSE: an opened window when the night ends, its last minute was not measured or reached the night
      threshold, it is no longer active, or its owner's QOS stopped preempting.
    Deterministic: the same inputs give the same actions, in window order.
    """
    bounds = policy.pools.get(pool)
    end = minute_of(now)
    start = end - policy.idle_span_minutes * MINUTE
    active = sorted((w for w in windows if w.pool == pool and w.is_active(now)), key=lambda w: w.id)
    granted = sum(w.gpu_count for w in active if w.tier in ("priority", "standard"))
    base = 0 if bounds is None else max(0, bounds.gpu_count - granted - bounds.burst_reserve_gpus
                                        - bounds.standby_gpus)
    placed, woken, waking = placed_for_preemptible(policy, pool, windows, now)
    if bounds is not None:
        base = max(base, min(placed, bounds.gpu_count - granted - bounds.standby_gpus + woken))
    gpu_type = (bounds.scheduler_label if bounds is not None else "") or pool
    threshold = Decimal(policy.idle_threshold_pct)
    after: dict[int, int] = {}
    actions: list[AgentAction] = []
    by_id = {w.id: w for w in active}
    def last_minute(window_id: int) -> Decimal | None:
        found = measured.get(window_id)
        return found.minutes[-1] if found is not None and found.minutes else None

    def quiet_mean(window_id: int, span: int, limit: Decimal) -> Decimal | None:
        """The mean use of the window's last `span` minutes when every one was measured and under `limit`, else None
        (a minute not measured is never quiet)."""
        found = measured.get(window_id)
        minutes = list(found.minutes)[-span:] if found is not None else []
        values = [m for m in minutes if m is not None]
        if len(values) != span or max(values) >= limit:
            return None
        return (sum(values, Decimal(0)) / len(values)).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)

    def why_take_back(window: Any, last: Decimal | None, limit: Decimal, limit_name: str) -> str | None:
        """Why GPUs lent or opened from `window` go back to it now, or None while they may stay out."""
        if window is None:
            return "the window is no longer active"
        if last is None:
            return "its last minute was not measured"
        if last >= limit:
            return f"its use rose to {last}% ({limit_name} {limit}%)"
        if not owner_preempts(window):
            return "its owner's QOS does not preempt preemptible work"
        return None

    for window_id, gpus in sorted(lent.items()):
        window, last = by_id.get(window_id), last_minute(window_id)
        reason = why_take_back(window, last, threshold, "threshold")
        if reason is None:
            after[window_id] = gpus
            continue
        team = window.team if window is not None else ""
        actions.append(AgentAction("reclaim", pool, window_id, team, gpus, end, last, 1, reason))
    night = in_night(now, policy)
    night_threshold = Decimal(policy.night_utilization_pct)
    opened_after: dict[int, int] = {}
    for window_id, gpus in sorted((opened or {}).items()):
        window, last = by_id.get(window_id), last_minute(window_id)
        if window is not None and not night:
            reason = f"the night ended ({policy.night_end:%H:%M} {policy.time_zone})"
        else:
            reason = why_take_back(window, last, night_threshold, "night threshold")
        if reason is None:
            opened_after[window_id] = gpus
            continue
        team = window.team if window is not None else ""
        actions.append(AgentAction("night_close", pool, window_id, team, gpus, end, last, 1, reason))
    for window in active:
        if (window.id in lent or window.id in opened_after or window.tier not in LENDING_TIERS
                or window.start > start):
            continue
        mean = quiet_mean(window.id, policy.idle_span_minutes, threshold)
        if mean is None or not policy.offer_idle_to_preemptible or not owner_preempts(window):
            continue
        gpus = unused_gpus(window.gpu_count, mean)
        if gpus <= 0:
            continue
        after[window.id] = gpus
        actions.append(AgentAction(
            "lend", pool, window.id, window.team, gpus, end, mean, policy.idle_span_minutes,
            f"under {threshold}% for {policy.idle_span_minutes} min (mean {mean}%)",
        ))
    recent_start = end - policy.recent_span_minutes * MINUTE
    for window in active if night else ():
        if (window.id in after or window.id in opened_after or window.tier not in LENDING_TIERS
                or window.start > recent_start):
            continue
        mean = quiet_mean(window.id, policy.recent_span_minutes, night_threshold)
        if mean is None or not owner_preempts(window):
            continue
        gpus = unused_gpus(window.gpu_count, mean)
        if gpus <= 0:
            continue
        opened_after[window.id] = gpus
        actions.append(AgentAction(
            "night_open", pool, window.id, window.team, gpus, end, mean, policy.recent_span_minutes,
            f"night ({policy.night_start:%H:%M}–{policy.night_end:%H:%M} {policy.time_zone}), under "
            f"{night_threshold}% for {policy.recent_span_minutes} min (mean {mean}%)",
        ))
    wake_minutes = policy.standby_wake_minutes
    wanted = StandbyWake(waking.id, waking.team, woken) if waking is not None and woken > 0 else None
    if standby is not None and standby != wanted:
        actions.append(AgentAction(
            "standby_end", pool, standby.window, standby.team, standby.gpus, end, None, wake_minutes,
            "the placed preemptible work no longer needs the cold standby", measured_by="plan"))
    if wanted is not None and standby != wanted and waking is not None and bounds is not None:
        actions.append(AgentAction(
            "standby_wake", pool, wanted.window, wanted.team, wanted.gpus, end, None, wake_minutes,
            f"preemptible windows of {placed} GPUs from {waking.start:%H:%M} UTC hold {woken} of the cold standby's "
            f"{bounds.standby_gpus} (the chair let them use it): ready {wake_minutes} min ahead",
            measured_by="plan"))
    return PoolDecision(pool=pool, gpu_type=gpu_type, base_gpus=base, lent=after, actions=actions, standby=wanted,
                        opened=opened_after)


# --- the burst reserve (pure) ------------------------------------------------------------------------

# The pending reasons of a job held by its own account's quota QOS (docket-<account>'s GrpTRES): granted work that
# waits because the team uses its whole grant, not because the cluster is full.
QUOTA_REASONS = frozenset({"QOSGrpGRES", "QOSGrpTRES"})


@dataclass(frozen=True)
class WaitingJob:
    """A pending job as squeue shows it; `waited_s` is Slurm's own PendingTime (the controller's clock)."""

    job_id: str
    account: str
    qos: str
    reason: str
    waited_s: int


@dataclass(frozen=True)
class Promotion:
    """The burst reserve raised on one account's quota QOS."""

    account: str
    pool: str
    team: str
    window: int
    gpus: int


def pool_mean(minutes: Sequence[Decimal | None], policy: AgentPolicy) -> Decimal | None:
    """The pool's mean utilization over the recent span; None unless every minute of it was measured."""
    if len(minutes) != policy.recent_span_minutes or any(m is None for m in minutes):
        return None
    values = [m for m in minutes if m is not None]
    return (sum(values, Decimal(0)) / len(values)).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)


def decide_burst(
    *, policy: AgentPolicy, pool: str, windows: Sequence[DesiredWindow], waiting: Sequence[WaitingJob],
    pool_minutes: Sequence[Decimal | None], promoted: Mapping[str, Promotion], now: datetime,
) -> tuple[dict[str, Promotion], list[AgentAction]]:
    """The pool's burst promotion at `now`, and the actions that change it (docs/elastic.md, "The agent's burst").

    - PROMOTE: the pool is hot (its GPUs' mean utilization over the recent span, every minute measured, above the
      promotion threshold), nobody holds its burst reserve, and a job of an account holding an active standard window
      of the pool waits in that account's quota QOS for the quota (QUOTA_REASONS) longer than the queue-wait
      threshold: that account's quota is raised by the pool's burst reserve (the longest wait first; one account a
      pool, as Docket's hourly rule gives the reserve to one team);
    - DEMOTE: the pool is no longer hot (or not measured), or the window ended. A job already running on the burst
      keeps running: Slurm applies a lowered GrpTRES to the next job, not to those started.
    At the thresholds exactly nothing happens. Deterministic.
    """
    bounds = policy.pools.get(pool)
    end = minute_of(now)
    active = sorted((w for w in windows if w.pool == pool and w.is_active(now) and w.tier == "standard"
                     and w.account), key=lambda w: w.id)
    mean = pool_mean(pool_minutes, policy)
    hot = mean if mean is not None and mean > policy.promote_utilization_pct else None
    after: dict[str, Promotion] = {}
    actions: list[AgentAction] = []
    span = policy.recent_span_minutes
    for account, held in sorted(promoted.items()):
        if held.pool != pool:
            continue
        still = any(w.id == held.window for w in active)
        if hot is not None and still:
            after[account] = held
            continue
        reason = ("the window is no longer active" if not still else
                  "the pool was not measured every minute of the recent span" if mean is None
                  else f"the pool's use over {span} min fell to {mean}% (threshold {policy.promote_utilization_pct}%)")
        actions.append(AgentAction("demote", pool, held.window, held.team, held.gpus, end, mean, span, reason))
    reserve = bounds.burst_reserve_gpus if bounds is not None else 0
    if bounds is not None:  # what placed preemptible work (an emergency) holds of the reserve is not for a burst
        placed, _standby, _window = placed_for_preemptible(policy, pool, windows, now)
        granted = sum(w.gpu_count for w in windows
                      if w.pool == pool and w.tier in ("priority", "standard") and w.is_active(now))
        ungranted = max(0, bounds.gpu_count - granted - bounds.burst_reserve_gpus - bounds.standby_gpus)
        reserve -= min(reserve, max(0, placed - ungranted))
    if after or hot is None or reserve <= 0:
        return after, actions
    by_account: dict[str, DesiredWindow] = {}
    for window in active:
        by_account.setdefault((window.account or "").lower(), window)
    threshold_s = policy.promote_queue_wait_minutes * 60
    candidates = sorted(
        (-job.waited_s, job.job_id, job) for job in waiting
        if job.account.lower() in by_account and job.reason in QUOTA_REASONS and job.waited_s > threshold_s
        and job.qos.lower() == quota_qos_name(job.account)
    )
    if not candidates:
        return after, actions
    job = candidates[0][2]
    window = by_account[job.account.lower()]
    wait = (Decimal(job.waited_s) / 60).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)
    promotion = Promotion(job.account.lower(), pool, window.team, window.id, reserve)
    after[promotion.account] = promotion
    actions.append(AgentAction(
        "promote", pool, window.id, window.team, reserve, end, hot, span,
        f"job {job.job_id} waited {wait} min for its quota (threshold {policy.promote_queue_wait_minutes} min) in a "
        f"pool at {hot}% over {span} min (threshold {policy.promote_utilization_pct}%)",
        queue_wait_minutes=wait,
    ))
    return after, actions


# --- measuring (docket_scheduler.elastic_measure) ---------------------------------------------------


def window_minutes(windows: Sequence[DesiredWindow], by_team: Mapping[str, Sequence[Decimal | None]]
                   ) -> dict[int, WindowMinutes]:
    """Each window's utilization per minute: its team's GPUs' summed utilization over the window's GPUs (the share of
    the grant busy), capped at 100. A team with two active windows in the pool is not attributed (not measured)."""
    per_team: dict[tuple[str, str], list[DesiredWindow]] = {}
    for window in windows:
        per_team.setdefault((window.team, window.pool), []).append(window)
    out: dict[int, WindowMinutes] = {}
    for (team, _pool), held in per_team.items():
        if len(held) != 1 or team not in by_team:
            continue
        window = held[0]
        out[window.id] = WindowMinutes(window, [
            None if m is None else min(Decimal(100), (m / window.gpu_count).quantize(Decimal("0.1")))
            for m in by_team[team]
        ])
    return out


# --- applying (Slurm) ---------------------------------------------------------------------------------


@dataclass
class SlurmLending:
    """The scavenger QOS's GPU limit per GPU type, and whether each owner's quota QOS preempts it."""

    tools: SlurmTools = field(default_factory=SlurmTools)
    scavenger: str = SCAVENGER_QOS
    squeue: str = "squeue"
    qos: dict[str, Qos] = field(default_factory=dict)  # as the last read() found them

    @property
    def what(self) -> str:
        return f"scavenger QOS {self.scavenger}"

    def read(self) -> tuple[dict[str, str], dict[str, frozenset[str]]]:
        """(the scavenger QOS's GrpTRES, every QOS's Preempt list); every QOS is kept in `qos`."""
        shown = self.tools.run_sacctmgr(["-P", "-n", "show", "qos", "format=name,grptres,preempt,description"])
        if shown.returncode != 0:
            raise AgentError(f"sacctmgr show qos failed: {tool_message(shown)}")
        qos = self.qos = parse_qos(shown.stdout)
        scavenger = qos.get(self.scavenger)
        if scavenger is None:
            raise AgentError(f"no QOS {self.scavenger}: docket-slurm-sync creates it with the first preemptible or "
                             "standard window")
        return dict(scavenger.grp_tres), {name: q.preempt for name, q in qos.items()}

    def waiting(self) -> list[WaitingJob]:
        """The pending jobs, with Slurm's own PendingTime (its clock, not the agent's)."""
        fields = ("JobID", "Account", "QOS", "Reason", "PendingTime")
        argv = ["-h", "-t", "PENDING", "-O", ",".join(f"{name}:200|" for name in fields)]
        try:
            shown = self.tools.run(self.squeue, argv)
        except SlurmError as exc:
            raise AgentError(str(exc)) from None
        if shown.returncode != 0:
            raise AgentError(f"squeue failed: {tool_message(shown)}")
        jobs = []
        for line in shown.stdout.splitlines():
            parts = [part.strip() for part in line.split("|")]
            if len(parts) < len(fields) or not parts[0]:
                continue
            waited = parse_whole_number(parts[4])
            if waited is not None:
                jobs.append(WaitingJob(parts[0], parts[1], parts[2], parts[3], waited))
        return jobs

    def burst(self, promoted: Mapping[str, Promotion], *, lease_until: datetime, dry_run: bool) -> list[str]:
        """Raise each promoted account's quota QOS by its burst (its base, the sync's GrpTRES, kept), with a lease
        until `lease_until` in its Description so docket-slurm-sync keeps the raise that long; lower every other
        quota QOS the agent raised back to its base. The command lines run."""
        lines = []
        for name, qos in sorted(self.qos.items()):
            account = qos.quota_account
            if account is None or qos.gpus is None:
                continue
            held = qos.burst
            base = qos.gpus - (held.gpus if held is not None else 0)
            promotion = promoted.get(account)
            if promotion is not None:
                gpus, description = base + promotion.gpus, burst_description(qos.base_description, promotion.gpus,
                                                                                lease_until)
            elif held is not None:
                gpus, description = base, qos.base_description
            else:
                continue
            if gpus == qos.gpus and description.lower() == qos.description.lower():
                continue
            argv = ["modify", "qos", "where", f"name={name}", "set", f"GrpTRES=gres/gpu={gpus}",
                    f"Description={description}"]
            lines.append(self._run(argv, dry_run=dry_run))
        return lines

    def _run(self, argv: list[str], *, dry_run: bool) -> str:
        line = "sacctmgr -i " + " ".join(arg if " " not in arg else repr(arg) for arg in argv)
        if dry_run:
            return line
        try:
            result = self.tools.run_sacctmgr(["-i", *argv])
        except SlurmError as exc:
            raise AgentError(str(exc)) from None
        if result.returncode != 0:
            raise AgentError(f"{line}: {tool_message(result)}")
        return line

    def owner_preempts(self, preempts: Mapping[str, frozenset[str]]) -> Callable[[DesiredWindow], bool]:
        def check(window: DesiredWindow) -> bool:
            return window.account is not None and self.scavenger in preempts.get(quota_qos_name(window.account), ())

        return check

    def apply(self, limits: Mapping[str, int], current: Mapping[str, str], *, dry_run: bool) -> str | None:
        """Set `gres/gpu:<type>=N` for each type in `limits` on the scavenger QOS; the command line, None if it
        already holds them."""
        wanted = {f"gres/gpu:{gpu_type}": str(n) for gpu_type, n in sorted(limits.items())}
        if all(current.get(k) == v for k, v in wanted.items()):
            return None
        tres = ",".join(f"{k}={v}" for k, v in wanted.items())
        return self._run(["modify", "qos", "where", f"name={self.scavenger}", "set", f"GrpTRES={tres}"],
                         dry_run=dry_run)


# --- one minute --------------------------------------------------------------------------------------


@dataclass
class TickResult:
    policy_version: int
    policy_from_docket: bool  # False: Docket could not be reached, the last policy read was used
    actions: list[AgentAction]
    applied: list[str]
    reported: int
    unreported: int


@dataclass
class Agent:
    docket: DocketClient
    measure: MinuteSource  # DCGM through Prometheus, or Slurm's accounting (docket_scheduler.elastic_measure)
    lending: SlurmLending
    state_file: StateFile
    team_map: Mapping[str, str] = field(default_factory=dict)  # label value → team slug
    team_accounts: bool = False  # also map each team's Slurm account (from the windows) to the team
    dry_run: bool = False
    out: TextIO = field(default_factory=lambda: sys.stdout)
    burst_lease: timedelta = 5 * MINUTE  # how long docket-slurm-sync keeps a burst raise the agent stops renewing
    # On Kueue: the lending is the teams' ClusterQueues' (no Slurm is read or changed; no burst, no standby wake)
    kueue: KueueLending | None = None

    def tick(self, now: datetime) -> TickResult:
        """One minute: read Docket (or keep the last known), measure, decide, apply, report."""
        state = self.state_file.load()
        from_docket = self._read_docket(state, now)
        if state.policy is None:
            raise AgentError("no elastic policy known: Docket has not been reached yet")
        policy = AgentPolicy.from_api(state.policy)
        try:
            windows = parse_windows(state.windows)
        except WindowFormatError as exc:
            raise AgentError(f"the windows kept in the state file are malformed: {exc}") from None
        current: Mapping[str, str] = {}
        if self.kueue is not None:
            try:
                self.kueue.read()
            except KueueLendingError as exc:
                raise AgentError(str(exc)) from None
            owner_preempts = self.kueue.owner_preempts()
        else:
            current, preempts = self.lending.read()
            owner_preempts = self.lending.owner_preempts(preempts)
        on_kueue: dict[str, dict[str, int]] = {}  # team → flavor → GPUs lent or opened
        # Slurm's accounting names each job's account: a team's account is its label there.
        accounts = self.team_accounts or self.measure.name == "slurm"
        mapping = {**({a.lower(): t for a, t in accounts_map(windows).items()} if accounts else {}), **self.team_map}
        end = minute_of(now)
        start = end - policy.measured_minutes * MINUTE
        limits: dict[str, int] = {}
        actions: list[AgentAction] = []
        after: dict[str, dict[str, Any]] = {}
        wake = policy.standby_wake_minutes * MINUTE
        standby_after: dict[str, dict[str, Any]] = {}
        opened_after: dict[str, dict[str, Any]] = {}
        for pool in sorted(policy.pools):
            # Active windows, and those starting within the standby's wake minutes (decide() lends only active ones).
            pool_windows = [w for w in windows if w.pool == pool and w.start - wake <= now < w.end]
            lent = {int(k): int(v["gpus"]) for k, v in state.lent.items() if v.get("pool") == pool}
            opened = {int(k): int(v["gpus"]) for k, v in state.opened.items() if v.get("pool") == pool}
            held = state.standby.get(pool) if self.kueue is None else None
            standby = StandbyWake(int(held["window"]), str(held["team"]), int(held["gpus"])) if held else None
            if not pool_windows and not lent and not opened and standby is None:
                continue
            try:
                by_label = self.measure.team_minutes(pool=pool, gpu_types=self._gpu_types(policy, pool),
                                                     start=start, end=end)
            except MeasureError as exc:
                print(f"pool {pool}: not measured this minute ({exc}); what is lent is taken back", file=self.out)
                by_label = {}
            by_team: dict[str, list[Decimal | None]] = {}
            for value, minutes in by_label.items():
                team = mapping.get(value)
                if team is not None:
                    by_team[team] = minutes
            decision = decide(policy=policy, pool=pool, windows=pool_windows,
                              measured=window_minutes(pool_windows, by_team),
                              lent=lent, now=now, owner_preempts=owner_preempts, standby=standby, opened=opened)
            limits[decision.gpu_type] = decision.scavenger_gpus
            if decision.standby is not None and self.kueue is None:
                standby_after[pool] = asdict(decision.standby)
            teams = {w.id: w.team for w in pool_windows}
            flavors = {w.id: flavor_name(w) for w in pool_windows} if self.kueue is not None else {}
            for window_id, gpus in decision.lent.items():
                after[str(window_id)] = {"pool": pool, "team": teams.get(window_id, ""), "gpus": gpus}
            for window_id, gpus in decision.opened.items():
                opened_after[str(window_id)] = {"pool": pool, "team": teams.get(window_id, ""), "gpus": gpus}
            for window_id, gpus in [*decision.lent.items(), *decision.opened.items()]:
                if window_id in flavors:
                    held_by = on_kueue.setdefault(teams[window_id], {})
                    held_by[flavors[window_id]] = held_by.get(flavors[window_id], 0) + gpus
            # On Kueue the sync gives placed preemptible work its quota: the agent has no standby to wake.
            actions.extend(a for a in decision.actions
                           if self.kueue is None or a.kind not in ("standby_wake", "standby_end"))
        if self.kueue is not None:
            try:
                command = self.kueue.apply(on_kueue, dry_run=self.dry_run)
            except KueueLendingError as exc:
                raise AgentError(str(exc)) from None
        else:
            command = self.lending.apply(limits, current, dry_run=self.dry_run) if limits else None
        applied = [command] if command else []
        promoted, burst_actions, burst_lines = self._burst(policy, windows, state, now)
        actions.extend(burst_actions)
        applied.extend(burst_lines)
        for line in applied:
            print(("would run " if self.dry_run else "") + line, file=self.out)
        for action in actions:
            print(f"{action.kind} window {action.window} of {action.team} on {action.pool}: {action.gpus} GPUs, "
                  f"{action.reason}", file=self.out)
        if self.dry_run:
            return TickResult(policy.version, from_docket, actions, applied, 0, len(state.unreported))
        state.lent = after
        state.standby = standby_after
        state.opened = opened_after
        state.promoted = {account: asdict(p) for account, p in promoted.items()}
        burst_line = "; ".join(burst_lines) or None
        state.unreported.extend(
            self._body(a, policy.version, burst_line if a.kind in ("promote", "demote") else command,
                       what="the quota QOS" if a.kind in ("promote", "demote") else None)
            for a in actions)
        self.state_file.save(state)  # what is lent is remembered before Docket is told
        reported = self._report(state)
        self.state_file.save(state)
        return TickResult(policy.version, from_docket, actions, applied, reported, len(state.unreported))

    def _burst(self, policy: AgentPolicy, windows: Sequence[DesiredWindow], state: AgentState, now: datetime
               ) -> tuple[dict[str, Promotion], list[AgentAction], list[str]]:
        """The burst reserve: per pool, decide_burst() on Slurm's waiting jobs and the pool's minutes; then the
        quota QOS raised or lowered (a lease of `burst_lease` past this minute). A failing squeue or sacctmgr costs
        the burst this minute, never the lending decided before it."""
        promoted = {account: Promotion(**held) for account, held in state.promoted.items()}
        pools = sorted(p for p, b in policy.pools.items() if b.burst_reserve_gpus > 0)
        if self.kueue is not None:  # Kueue's cohort lends a hot team idle quota by itself: no burst to raise
            return {}, [], []
        if not pools:
            return promoted, [], []
        try:
            waiting = self.lending.waiting()
        except AgentError as exc:  # the lending stands: only the burst waits for squeue
            print(f"no waiting jobs read this minute ({exc}); no new burst", file=self.out)
            waiting = []
        end = minute_of(now)
        start = end - policy.recent_span_minutes * MINUTE
        after: dict[str, Promotion] = {}
        actions: list[AgentAction] = []
        for pool in pools:
            pool_windows = [w for w in windows if w.pool == pool]
            held = {a: p for a, p in promoted.items() if p.pool == pool}
            if not held and not any(w.tier == "standard" and w.is_active(now) for w in pool_windows):
                continue
            try:
                minutes = self.measure.pool_minutes(pool=pool, gpu_types=self._gpu_types(policy, pool),
                                                    gpu_count=policy.pools[pool].gpu_count, start=start, end=end)
            except MeasureError as exc:
                print(f"pool {pool}: its use not measured this minute ({exc}); no burst", file=self.out)
                minutes = [None] * policy.recent_span_minutes
            kept, pool_actions = decide_burst(policy=policy, pool=pool, windows=pool_windows, waiting=waiting,
                                              pool_minutes=minutes, promoted=held, now=now)
            after.update(kept)
            actions.extend(pool_actions)
        try:
            lines = self.lending.burst(after, lease_until=end + self.burst_lease, dry_run=self.dry_run)
        except AgentError as exc:  # nothing changed in Slurm: what was held stays held, nothing to report
            print(f"the burst not applied this minute: {exc}", file=self.out)
            return promoted, [], []
        for line in lines:
            print(("would run " if self.dry_run else "") + line, file=self.out)
        return after, actions, lines

    @staticmethod
    def _gpu_types(policy: AgentPolicy, pool: str) -> frozenset[str]:
        """The GPU types a job of `pool` asks for in Slurm: its label, and untyped GPUs when it is the only pool."""
        bounds = policy.pools[pool]
        return frozenset({bounds.scheduler_label or pool, *([""] if len(policy.pools) == 1 else [])})

    def _read_docket(self, state: AgentState, now: datetime) -> bool:
        try:
            policy = self.docket.fetch_elastic_policy(etag=state.policy_etag)
            snapshot = self.docket.fetch_windows(ends_after=now)
        except DocketError as exc:
            when = state.policy_read_at or "never"
            print(f"Docket not reached ({exc}); keeping the policy read at {when}", file=self.out)
            return False
        if policy is not None:
            state.policy, state.policy_etag = policy
        state.policy_read_at = now.isoformat()
        if snapshot is not None:
            state.windows = [window_to_state(w) for w in snapshot.windows]
            state.windows_read_at = now.isoformat()
        return True

    def _body(self, action: AgentAction, version: int, command: str | None, *, what: str | None = None
              ) -> dict[str, Any]:
        return {
            "idempotency_key": action.key(self.docket.cluster),
            "kind": action.kind,
            "pool": action.pool,
            "window": action.window,
            "team": action.team or None,
            "gpus": action.gpus,
            "acted_at": action.at.isoformat().replace("+00:00", "Z"),
            "utilization_pct": None if action.utilization_pct is None else str(action.utilization_pct),
            "queue_wait_minutes": None if action.queue_wait_minutes is None else str(action.queue_wait_minutes),
            "span_minutes": action.span_minutes,
            "measured_by": action.measured_by or (
                self.measure.name if action.queue_wait_minutes is None or self.measure.name == "slurm"
                else f"{self.measure.name}+slurm"),
            "policy_version": version,
            "applied": (command or f"{what or (self.kueue or self.lending).what} already held it")
            + f"; {action.reason}",
        }

    def _report(self, state: AgentState) -> int:
        """Post every action Docket has not been told, oldest first; stop at the first that does not go through."""
        reported = 0
        while state.unreported:
            try:
                self.docket.post_elastic_action(state.unreported[0])
            except DocketError as exc:
                if exc.status in (400, 409):
                    print(f"Docket refused an action, dropped: {exc}", file=self.out)
                    state.unreported.pop(0)
                    continue
                print(f"{len(state.unreported)} actions not reported yet: {exc}", file=self.out)
                break
            state.unreported.pop(0)
            reported += 1
        return reported


# --- the program -------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="docket-elastic-agent",
        description="Apply the committee's elastic policy every minute: lend idle granted GPUs to preemptible work "
                    "through the Slurm scavenger QOS (or, with --kueue, the teams' ClusterQueue lendingLimit), take "
                    "them back when their owner needs them, report each "
                    "action to Docket.",
    )
    add_docket_options(parser)
    parser.add_argument("--measure", choices=SOURCES, default="prometheus",
                        help="where each minute's utilization comes from: DCGM through Prometheus (prometheus), or, "
                             "where the site has no Prometheus, Slurm's accounting (slurm: sacct, GPUs allocated)")
    parser.add_argument("--prometheus", help="Prometheus's URL (DCGM exporter's series); needed with --measure "
                                             "prometheus")
    parser.add_argument("--sacct", default="sacct", help="the sacct to run with --measure slurm")
    parser.add_argument("--label", default="namespace",
                        help="the series label that names a GPU's team (namespace, or a Slurm account label)")
    parser.add_argument("--team-map", type=pair("VALUE=TEAM"), action="append", default=[],
                        help="a label value and the Docket team it is (repeatable)")
    parser.add_argument("--team-accounts", action="store_true",
                        help="also map each team's Slurm account (from Docket's windows) to the team")
    parser.add_argument("--selector", type=pair("POOL=MATCHERS"), action="append", default=[],
                        help='a pool and the PromQL label matchers of its GPUs, e.g. a100=modelName=~".*A100.*"')
    parser.add_argument("--state-file", type=Path, required=True,
                        help="the agent's memory: the last policy and windows read, what is lent, actions not "
                             "reported yet (e.g. /var/lib/docket-scheduler/elastic-atlas.json)")
    parser.add_argument("--scavenger-qos", default=SCAVENGER_QOS, help=f"the preemptible QOS ({SCAVENGER_QOS})")
    parser.add_argument("--sacctmgr", default="sacctmgr", help="the sacctmgr to run")
    parser.add_argument("--interval", type=positive_float, default=60.0, metavar="SECONDS",
                        help="seconds between ticks (60)")
    parser.add_argument("--kueue", action="store_true",
                        help="lend on Kueue: raise each team's ClusterQueue lendingLimit (as docket-kueue-sync "
                             "applied it) instead of the Slurm scavenger QOS; the API server from --kubeconfig or "
                             "--in-cluster")
    add_kube_options(parser)
    parser.add_argument("--api-version", choices=API_VERSIONS, default="v1beta2",
                        help="with --kueue: the Kueue API version the sync applies (v1beta2)")
    parser.add_argument("--once", action="store_true", help="one tick, then exit")
    parser.add_argument("--now", type=instant, default=None, help=argparse.SUPPRESS)  # tests: the pinned minute
    parser.add_argument("--dry-run", action="store_true", help="print what would change; change and report nothing")
    return parser


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None,
         clock: Callable[[], datetime] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    out = output(out)
    client = docket_client(parser, args)
    measure: MinuteSource
    if args.measure == "slurm":
        measure = SlurmMinutes(sacct=args.sacct, timeout_s=args.timeout)
    else:
        if not args.prometheus:
            parser.error("--prometheus is needed with --measure prometheus (or measure with --measure slurm)")
        try:
            measure = PrometheusMinutes(Prometheus(args.prometheus, timeout_s=args.timeout), label=args.label,
                                        selectors=dict(args.selector))
        except PrometheusError as exc:
            parser.error(str(exc))
    kueue = None
    if args.kueue:
        try:
            config = kube_config(args)
        except KubeError as exc:
            parser.error(str(exc))
        print(f"Kubernetes API server {config.server} from {config.source}", file=out)
        kueue = KueueLending(KubeClient(config, timeout_s=args.timeout), cluster=args.cluster,
                             api_version=args.api_version)
    agent = Agent(
        docket=client, measure=measure,
        lending=SlurmLending(tools=SlurmTools(sacctmgr=args.sacctmgr), scavenger=args.scavenger_qos),
        state_file=StateFile(args.state_file), team_map=dict(args.team_map), team_accounts=args.team_accounts,
        dry_run=args.dry_run, out=out, kueue=kueue,
    )
    pinned = args.now
    read_clock = clock or (lambda: pinned or datetime.now(UTC))
    try:
        return _loop(agent, args, read_clock, out)
    except KeyboardInterrupt:
        return 130


def _loop(agent: Agent, args: argparse.Namespace, read_clock: Callable[[], datetime], out: TextIO) -> int:
    while True:
        try:
            result = agent.tick(read_clock())
        except AgentError as exc:
            print(f"elastic agent: {exc}", file=out)
            if args.once:
                return 2
        else:
            print(f"policy v{result.policy_version}{'' if result.policy_from_docket else ' (kept: Docket not reached)'}"
                  f": {len(result.actions)} actions, {result.reported} reported, {result.unreported} to report",
                  file=out)
            if args.once:
                return 0 if result.policy_from_docket and not result.unreported else 1
        time.sleep(args.interval)


if __name__ == "__main__":
    sys.exit(main())

