"""Reads of the elastic pool: the policy in force, what the schedulers are offered, the pages' history."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db.models import Count, Max, Q, QuerySet
from django.utils import timezone

from allocations import engine, selectors
from allocations.elastic.evaluate import (
    ActionKind,
    ElasticPolicy,
    PoolInput,
    ReplayTotals,
    UsageInput,
    WindowInput,
    replay,
    span_end_of,
)
from allocations.models import (
    AgentAction,
    AllocationWindow,
    Cluster,
    ElasticAction,
    ElasticActionKind,
    GpuPool,
    UsageRecord,
)
from core.datetimes import format_isoweek
from governed import params
from governed.models import PolicyChange
from governed.params import ELASTIC_PREFIX
from governed.selectors import policy_changes, policy_value_typed, policy_values_versioned

POOL_HISTORY_LIMIT = 500


# The policy's parameters: ElasticPolicy's fields, each a governed parameter "elastic.<name>" (governed.params).
ELASTIC_PARAMETERS: tuple[str, ...] = tuple(f.name for f in fields(ElasticPolicy) if f.name != "version")


@dataclass(frozen=True)
class ElasticVersion:
    """The elastic policy in force from a week, read from the one store of governed parameters (governed): its
    thresholds, numbered as the version of the rules (the store's change) that last set one of them; who set them,
    when and why."""

    policy: ElasticPolicy
    effective_week: str = ""  # "" for version 1, in force since always
    reason: str = ""
    author_name: str = ""
    created_at: datetime | None = None

    @property
    def number(self) -> int:
        return self.policy.version

    def parameters(self) -> dict[str, object]:
        return {name: getattr(self.policy, name) for name in ELASTIC_PARAMETERS}


def _policy(values: Mapping[str, object], number: int) -> ElasticPolicy:
    return ElasticPolicy(version=number, **{  # type: ignore[arg-type]
        name: values[ELASTIC_PREFIX + name] for name in ELASTIC_PARAMETERS if ELASTIC_PREFIX + name in values})


def policy_in_force(*, now: datetime) -> ElasticPolicy:
    """The thresholds in force in the week of the evaluated hour `now` (the one store, governed), numbered as the
    version of the rules that last set one of them: what the hourly evaluation applies and its actions name. One
    query."""
    values, number = policy_values_versioned(week=format_isoweek(now), prefix=ELASTIC_PREFIX)
    return _policy(values, number)


def elastic_policy_current(*, now: datetime | None = None) -> ElasticVersion:
    """The policy in force now, with who set it, when and why. Two queries."""
    policy = policy_in_force(now=now or timezone.now())
    change = PolicyChange.objects.filter(number=policy.version).first()
    if change is None:
        return ElasticVersion(policy=policy)
    return ElasticVersion(policy=policy, effective_week=change.effective_week, reason=change.reason,
                          author_name=change.author_name, created_at=change.created_at)


def elastic_policy_history() -> list[tuple[ElasticVersion, ElasticVersion | None]]:
    """Every change of the elastic policy in the store, newest first, each with the policy before it (None for the
    first). Two queries."""
    changes = sorted(policy_changes(prefix=ELASTIC_PREFIX),
                     key=lambda c: (c.effective_monday is not None, c.effective_monday or date.min, c.number))
    state: dict[str, object] = {k: v for k, v in params.defaults().items() if k.startswith(ELASTIC_PREFIX)}
    out: list[ElasticVersion] = []
    for change in changes:
        for value in change.values.all():
            if value.key.startswith(ELASTIC_PREFIX):
                state[value.key] = policy_value_typed(key=value.key, raw=value.value)
        out.append(ElasticVersion(policy=_policy(state, change.number), effective_week=change.effective_week,
                                  reason=change.reason, author_name=change.author_name, created_at=change.created_at))
    if not changes or changes[0].number != 1:
        # Version 1 as declared where its rows are missing (a flushed database): the first change is told against it.
        first = {k: v for k, v in params.defaults().items() if k.startswith(ELASTIC_PREFIX)}
        out.insert(0, ElasticVersion(policy=_policy(first, 1)))
    out.reverse()
    return [(v, out[i + 1] if i + 1 < len(out) else None) for i, v in enumerate(out)]


@dataclass(frozen=True)
class PoolEvaluationInput:
    pool: GpuPool
    pool_input: PoolInput
    windows: list[WindowInput]
    usage: list[UsageInput]


def evaluation_inputs(*, policy: ElasticPolicy, now: datetime) -> list[PoolEvaluationInput]:
    """Per pool: its live windows active at `now` (current plans) and its usage over the policy's spans.

    A query per cluster for the windows and one for its pools' reserves (the evaluated hour's week), a query per
    pool for the usage.
    """
    end = span_end_of(now)
    start = end - policy.reach
    out: list[PoolEvaluationInput] = []
    for cluster in Cluster.objects.order_by("slug"):
        snapshot = selectors.window_snapshot(cluster=cluster, ends_after=now)
        rows = list(
            snapshot.windows.filter(start__lte=now)
            .order_by("id")
            .values_list("id", "pool_id", "team_id", "tier", "gpu_count", "start", "end")
        )
        pools = selectors.pool_reserves_for_week(
            week=format_isoweek(now),
            pools=GpuPool.objects.filter(cluster=cluster).select_related("cluster").order_by("slug"))
        for pool in pools:
            burst, _standby = engine.reserved_gpus(selectors.pool_capacity(pool=pool))
            windows = [
                WindowInput(id=wid, team_id=team, tier=tier, gpu_count=gpus, start=w_start, end=w_end)
                for wid, pool_id, team, tier, gpus, w_start, w_end in rows
                if pool_id == pool.pk
            ]
            usage = [
                UsageInput(
                    team_id=r.team_id, window_id=r.window_id, period_start=r.period_start, period_end=r.period_end,
                    gpu_hours_used=r.gpu_hours_used, mean_utilization_pct=r.mean_utilization_pct,
                    mean_queue_wait_minutes=r.mean_queue_wait_minutes,
                )
                for r in UsageRecord.objects.filter(pool=pool, period_end__gt=start, period_start__lt=end).order_by()
            ] if windows else []
            out.append(PoolEvaluationInput(
                pool=pool, pool_input=PoolInput(id=pool.pk, gpu_count=pool.gpu_count, burst_reserve_gpus=burst),
                windows=windows, usage=usage,
            ))
    return out


def idle_grants(
    *,
    team_ids: Iterable[int] | None = None,
    window_ids: Iterable[int] | None = None,
    request_refs: Iterable[int] | None = None,
) -> list[ElasticAction]:
    """The "granted but idle" actions in force, of the teams, windows or requests given (any that match). One query.

    With none of the three given: every one in force (the committee's view).
    """
    actions = ElasticAction.objects.filter(kind=ElasticActionKind.IDLE, ended_at__isnull=True)
    scope = Q()
    given = False
    for lookup, values in (("team_id__in", team_ids), ("window_id__in", window_ids),
                           ("window__request_ref__in", request_refs)):
        if values is not None:
            scope |= Q(**{lookup: list(values)})
            given = True
    if given:
        actions = actions.filter(scope)
    return list(actions.select_related("window", "team", "pool__cluster").order_by("pool_id", "window_id"))


def pool_elastic_history(*, pool: GpuPool, limit: int = POOL_HISTORY_LIMIT) -> QuerySet[ElasticAction]:
    """The pool's elastic actions, newest first, with their window, team and policy version."""
    return (
        ElasticAction.objects.filter(pool=pool)
        .select_related("window", "team")
        .order_by("-started_at", "-id")[:limit]
    )


def pool_list_with_elastic() -> list[tuple[GpuPool, int, int]]:
    """Every pool with its actions in force and in all: (pool, in force, total). One query."""
    pools = (
        GpuPool.objects.select_related("cluster")
        .annotate(
            in_force=Count("elastic_actions", filter=Q(elastic_actions__ended_at__isnull=True)),
            total=Count("elastic_actions"),
        )
        .order_by("cluster__name", "slug")
    )
    return [(pool, pool.in_force, pool.total) for pool in pools]


def replay_inputs(
    *, since: datetime, until: datetime, policies: Iterable[ElasticPolicy]
) -> list[tuple[PoolInput, list[WindowInput], list[UsageInput]]]:
    """Every pool with the windows the current plans hold over [since, until) and the usage the policies read there.

    Windows as the plans stand now (a window a later version withdrew is left out). Four queries.
    """
    reach = max((p.reach for p in policies), default=timedelta(hours=1))
    pools = selectors.pool_reserves_for_week(
        week=format_isoweek(until), pools=GpuPool.objects.select_related("cluster").order_by("cluster__name", "slug"))
    windows: dict[int, list[WindowInput]] = {}
    for wid, pool_id, team, tier, gpus, start, end in (
        AllocationWindow.objects.filter(withdrawal__isnull=True, start__lt=until, end__gt=since)
        .order_by("id")
        .values_list("id", "pool_id", "team_id", "tier", "gpu_count", "start", "end")
    ):
        windows.setdefault(pool_id, []).append(
            WindowInput(id=wid, team_id=team, tier=tier, gpu_count=gpus, start=start, end=end)
        )
    usage: dict[int, list[UsageInput]] = {}
    for r in UsageRecord.objects.filter(
        period_end__gt=since - reach, period_start__lt=until
    ).order_by():
        usage.setdefault(r.pool_id, []).append(UsageInput(
            team_id=r.team_id, window_id=r.window_id, period_start=r.period_start, period_end=r.period_end,
            gpu_hours_used=r.gpu_hours_used, mean_utilization_pct=r.mean_utilization_pct,
            mean_queue_wait_minutes=r.mean_queue_wait_minutes,
        ))
    return [
        (
            PoolInput(id=pool.pk, gpu_count=pool.gpu_count,
                      burst_reserve_gpus=engine.reserved_gpus(selectors.pool_capacity(pool=pool))[0]),
            windows.get(pool.pk, []),
            usage.get(pool.pk, []),
        )
        for pool in pools
    ]


REPLAY_DAYS = 7


def policy_replay(
    *, policies: dict[str, ElasticPolicy], now: datetime, days: int = REPLAY_DAYS
) -> dict[str, ReplayTotals]:
    """What each policy would have done over the last `days` days, hour by hour (evaluate.replay). Four queries."""
    until = now  # the replay's last evaluation is the latest quarter past an hour that has come
    since = span_end_of(now) - timedelta(days=days)
    inputs = replay_inputs(since=since, until=until, policies=policies.values())
    tz = ZoneInfo(settings.TIME_ZONE)
    return {
        name: replay(policy=policy, pools=inputs, since=since, until=until, tz=tz) for name, policy in policies.items()
    }


ReplayRow = tuple[str, tuple[int, int, int], tuple[int, int, int]]


@dataclass(frozen=True)
class ReplayTable:
    rows: list[ReplayRow]
    # The usage read was hourly while a policy's span is shorter: each span was read from the hour containing it.
    hourly_only: bool


def policy_replay_rows(*, current: ElasticPolicy, proposed: ElasticPolicy, now: datetime) -> ReplayTable:
    """Per kind of action: (label, (windows, hours, GPU-hours) in force, the same proposed), over REPLAY_DAYS; and
    whether the replay only had usage coarser than the policies' spans (hourly records for minute spans)."""
    totals = policy_replay(policies={"current": current, "proposed": proposed}, now=now)

    def numbers(name: str, kind: ActionKind) -> tuple[int, int, int]:
        found = totals[name]
        return found.windows[kind], found.action_hours[kind], found.gpu_hours[kind]

    return ReplayTable(
        rows=[
            (str(label), numbers("current", ActionKind(value)), numbers("proposed", ActionKind(value)))
            for value, label in ElasticActionKind.choices
        ],
        hourly_only=totals["current"].hourly_only(current) or totals["proposed"].hourly_only(proposed),
    )


# --- what the agent next to the scheduler reads and what it reported ----------------------------------


def published_policy(*, cluster: Cluster, now: datetime) -> dict[str, object]:
    """The elastic policy in force at `now` as the agent of `cluster` reads it (`GET /api/v1/elastic/policy/`):
    the thresholds and spans, the version, the committee's time zone (the night rule's wall clock) and per pool the
    bounds it acts within (its GPUs, burst reserve and cold standby in force this week). Three queries."""
    version = elastic_policy_current(now=now)
    pools = selectors.pool_reserves_for_week(
        week=format_isoweek(now), pools=GpuPool.objects.filter(cluster=cluster).order_by("slug"))
    parameters: dict[str, object] = {}
    for name, value in version.parameters().items():
        parameters[name] = value.strftime("%H:%M") if isinstance(value, time) else value
    return {
        "cluster": cluster.slug,
        "version": version.number,
        "effective_week": version.effective_week or None,
        "time_zone": settings.TIME_ZONE,
        "parameters": parameters,
        "pools": [
            {"pool": pool.slug, "gpu_count": pool.gpu_count, "scheduler_label": pool.scheduler_label,
             "burst_reserve_gpus": burst, "standby_gpus": standby}
            for pool in pools
            for burst, standby in [engine.reserved_gpus(selectors.pool_capacity(pool=pool))]
        ],
    }


def agent_actions_last_received(*, acted_from: datetime, acted_before: datetime) -> datetime | None:
    """When Docket received the latest of the agents' actions acted in [acted_from, acted_before) (a week's), None
    when no agent acted then. An agent cut off from Docket reports its actions when it reaches it again, so an action
    of a week can arrive after the week. One query."""
    found: datetime | None = AgentAction.objects.filter(acted_at__gte=acted_from, acted_at__lt=acted_before).aggregate(
        last=Max("received_at"))["last"]
    return found


def agent_actions(
    *, pool: GpuPool | None = None, window_ids: Iterable[int] | None = None,
    request_refs: Iterable[int] | None = None, acted_from: datetime | None = None,
    acted_before: datetime | None = None, oldest_first: bool = False, limit: int = POOL_HISTORY_LIMIT,
) -> list[AgentAction]:
    """What the agents reported, newest first (oldest first when asked): of a pool, of the windows given, or of
    the windows placed for the requests given; acted in [acted_from, acted_before) when given (a week's, for its
    decision record). One query."""
    actions = AgentAction.objects.select_related("window", "team", "pool__cluster")
    if acted_from is not None:
        actions = actions.filter(acted_at__gte=acted_from)
    if acted_before is not None:
        actions = actions.filter(acted_at__lt=acted_before)
    if pool is not None:
        actions = actions.filter(pool=pool)
    if window_ids is not None:
        actions = actions.filter(window_id__in=list(window_ids))
    if request_refs is not None:
        actions = actions.filter(window__request_ref__in=list(request_refs))
    order = ("acted_at", "id") if oldest_first else ("-acted_at", "-id")
    return list(actions.order_by(*order)[:limit])
