"""Writes of the elastic pool: the hourly evaluation that records actions.

The policy's thresholds are governed parameters (the one store, governed): the committee's chair changes them through
committee.services.elastic_policy_change, which records the change with governed.services.policy_change_record.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from allocations.elastic import selectors
from allocations.elastic.evaluate import Action, ActionKind, evaluate
from allocations.elastic.selectors import PoolEvaluationInput
from allocations.models import (
    AgentAction,
    AgentActionKind,
    AllocationWindow,
    ElasticAction,
    GpuPool,
    SchedulerClient,
    Team,
)
from core.locks import write_transaction
from governed.models import PolicyChange


@dataclass(frozen=True)
class EvaluationResult:
    policy_version: int
    started: int
    ended: int
    kept: int


def elastic_evaluate(*, now: datetime) -> EvaluationResult:
    """Evaluate the policy in force at `now` (its week's thresholds, governed) on every pool; record the result as
    `ElasticAction` rows.

    Idempotent: an action whose condition still holds with the same GPUs is kept as it is, so running
    again in the same hour (same measurements) writes nothing. An action whose condition stopped, or
    whose GPUs changed, is ended at `now` (the changed one starts again with its new numbers). One
    transaction per pool, which locks the pool's row so two evaluations at once cannot both start it.
    Enqueues nothing.
    """
    policy = selectors.policy_in_force(now=now)
    tz = ZoneInfo(settings.TIME_ZONE)
    started = ended = kept = 0
    for item in selectors.evaluation_inputs(policy=policy, now=now):
        actions = evaluate(
            policy=policy, pool=item.pool_input, windows=item.windows, usage=item.usage, now=now, tz=tz
        )
        s, e, k = _pool_actions_write(item=item, actions=list(actions), policy_version=policy.version, now=now)
        started, ended, kept = started + s, ended + e, kept + k
    return EvaluationResult(policy_version=policy.version, started=started, ended=ended, kept=kept)


@write_transaction
def _pool_actions_write(*, item: PoolEvaluationInput, actions: list[Action], policy_version: int,
                        now: datetime) -> tuple[int, int, int]:
    """Start, keep and end one pool's actions in one transaction, the pool's row locked: (started, ended, kept)."""
    started = ended = kept = 0
    _lock_pool(item.pool.pk)
    in_force = {
        (a.kind, a.pool_id, a.window_id): a
        for a in ElasticAction.objects.filter(pool=item.pool, ended_at__isnull=True)
    }
    wanted = {action.key: action for action in actions}
    for key, row in in_force.items():
        action = wanted.get(key)
        if action is not None and action.gpus == row.gpus:
            kept += 1
            continue
        row.ended_at = max(now, row.started_at)
        row.save(update_fields=["ended_at"])
        ended += 1
    teams = {t.pk: t.name for t in Team.objects.filter(pk__in={a.team_id for a in actions if a.team_id})}
    for key, action in wanted.items():
        previous = in_force.get(key)
        if previous is not None and previous.gpus == action.gpus:
            continue
        ElasticAction.objects.create(
            kind=action.kind.value, pool=item.pool, window_id=action.window_id, team_id=action.team_id,
            gpus=action.gpus, utilization_pct=action.utilization_pct,
            queue_wait_minutes=action.queue_wait_minutes, span_start=action.span_start,
            span_end=action.span_end, policy_version=policy_version, started_at=now,
            explanation=action_explanation(
                action, pool_key=item.pool.key, team_name=teams.get(action.team_id or 0, ""),
                policy_number=policy_version,
            ),
        )
        started += 1
    return started, ended, kept


def _lock_pool(pool_id: int) -> None:
    """Hold the pool's row until the transaction ends: a concurrent evaluation waits, then sees what this wrote."""
    GpuPool.objects.select_for_update(no_key=True).filter(pk=pool_id).first()


def span_text(minutes: int) -> str:
    """A span in words: "5 min", "4 h", "1 h 30 min"."""
    hours, rest = divmod(minutes, 60)
    if not hours:
        return _("%(m)d min") % {"m": rest}
    if not rest:
        return _("%(h)d h") % {"h": hours}
    return _("%(h)d h %(m)d min") % {"h": hours, "m": rest}


def _span(action: Action) -> str:
    return span_text(int((action.span_end - action.span_start).total_seconds()) // 60)


def _pct(value: Decimal | None) -> str:
    return "—" if value is None else f"{value.normalize():f}"


def action_explanation(action: Action, *, pool_key: str, team_name: str, policy_number: int) -> str:
    """The action in words, from its numbers (kept with the row as written)."""
    params = {
        "pool": pool_key, "team": team_name, "window": action.window_id, "gpus": action.gpus,
        "window_gpus": action.window_gpus, "util": _pct(action.utilization_pct), "threshold": action.threshold_pct,
        "span": _span(action), "v": policy_number,
        "wait": _pct(action.queue_wait_minutes), "pool_wait": _pct(action.pool_queue_wait_minutes),
    }
    if action.kind is ActionKind.IDLE:
        text = _(
            "Window #%(window)s of %(team)s on %(pool)s (%(window_gpus)s GPUs) was measured at %(util)s%% mean "
            "utilization over the last %(span)s, under %(threshold)s%% all along (elastic policy v%(v)s): "
            "granted but idle."
        ) % params
        if action.gpus:
            text += " " + _(
                "Its %(gpus)s unused GPUs (%(window_gpus)s × (1 − %(util)s%%), rounded down) are offered to "
                "preemptible work until its use rises."
            ) % params
        else:
            text += " " + _("The policy offers no idle GPUs: it is only flagged.")
        return text
    if action.kind is ActionKind.PROMOTE:
        return _(
            "%(pool)s was %(util)s%% utilized over the last %(span)s, above %(threshold)s%%, and its work waited "
            "%(pool_wait)s min on average; %(team)s's granted work waited %(wait)s min (elastic policy v%(v)s). "
            "The burst reserve, %(gpus)s GPUs, is promoted to it: preemptible work there yields."
        ) % params
    return _(
        "At night, standard window #%(window)s of %(team)s on %(pool)s (%(window_gpus)s GPUs) was measured at "
        "%(util)s%% over the last %(span)s, under %(threshold)s%% (elastic policy v%(v)s): its %(gpus)s spare "
        "GPUs are opened to preemptible work until morning or until its use rises."
    ) % params


# --- the agent's actions (docket_scheduler.elastic_agent) -----------------------------------------

AGENT_FUTURE_SKEW = timedelta(minutes=5)  # the scheduler host's clock may run a little ahead
AGENT_ACTION_FIELDS = ("kind", "window_id", "team_id", "gpus", "acted_at", "utilization_pct", "queue_wait_minutes",
                       "span_minutes", "measured_by", "policy_version", "applied")


class AgentActionConflict(Exception):
    """The idempotency key was used before with different data; nothing was changed."""

    def __init__(self, action: AgentAction) -> None:
        super().__init__(f"idempotency key {action.idempotency_key!r} was used for different data")
        self.action = action


@dataclass(frozen=True)
class AgentActionResult:
    action: AgentAction
    replayed: bool  # the key was seen before with the same data: nothing changed


@write_transaction
def agent_action_record(
    *, client: SchedulerClient, idempotency_key: str, kind: str, pool_slug: str, window_id: int | None,
    team_slug: str | None, gpus: int, acted_at: datetime, utilization_pct: Decimal | None,
    queue_wait_minutes: Decimal | None, span_minutes: int, measured_by: str, policy_version: int, applied: str,
    now: datetime | None = None,
) -> AgentActionResult:
    """Store one action the elastic agent of `client`'s cluster took, once per (cluster, idempotency key).

    The same key with the same data returns the stored action (`replayed`); with other data it raises
    AgentActionConflict. Refused with ValidationError keyed by field, nothing stored: a pool not of the token's
    cluster, a window not on that pool, a team unknown or not the window's, an unknown kind, a time in the future,
    a policy version that does not exist. One transaction.
    """
    now = now or timezone.now()
    cluster = client.cluster
    errors: dict[str, list[str]] = {}
    pool = GpuPool.objects.filter(cluster=cluster, slug=pool_slug).first()
    if pool is None:
        errors["pool"] = [_("No pool %(pool)s on cluster %(cluster)s.") % {"pool": pool_slug, "cluster": cluster.slug}]
    window = AllocationWindow.objects.filter(pk=window_id).first() if window_id is not None else None
    if window_id is not None and (window is None or pool is None or window.pool_id != pool.pk):
        errors["window"] = [_("No window %(id)s on this pool.") % {"id": window_id}]
    team = Team.objects.filter(slug=team_slug).first() if team_slug else None
    if team_slug and team is None:
        errors["team"] = [_("No team %s.") % team_slug]
    elif team is not None and window is not None and window.team_id != team.pk:
        errors["team"] = [_("Window %(id)s is not team %(team)s's.") % {"id": window_id, "team": team_slug}]
    if kind not in AgentActionKind.values:
        errors["kind"] = [_("Not a kind of agent action: %s.") % kind]
    if acted_at > now + AGENT_FUTURE_SKEW:
        errors["acted_at"] = [_("The action cannot lie in the future.")]
    if policy_version != 1 and not PolicyChange.objects.filter(number=policy_version).exists():
        errors["policy_version"] = [_("No version %s of the rules.") % policy_version]
    if errors:
        raise ValidationError(errors)
    assert pool is not None
    values = {
        "kind": kind, "window_id": window_id, "team_id": team.pk if team else (window.team_id if window else None),
        "gpus": gpus, "acted_at": acted_at, "utilization_pct": utilization_pct,
        "queue_wait_minutes": queue_wait_minutes, "span_minutes": span_minutes, "measured_by": measured_by,
        "policy_version": policy_version, "applied": applied,
    }
    existing = AgentAction.objects.filter(cluster=cluster, idempotency_key=idempotency_key).first()
    if existing is not None:
        return _agent_replay(existing, pool=pool, values=values)
    try:
        with transaction.atomic():
            action = AgentAction.objects.create(cluster=cluster, pool=pool, idempotency_key=idempotency_key,
                                                reported_by=client.name, received_at=now, **values)
    except IntegrityError:
        # The same key won a race: answer as it was answered.
        existing = AgentAction.objects.filter(cluster=cluster, idempotency_key=idempotency_key).first()
        if existing is None:
            raise
        return _agent_replay(existing, pool=pool, values=values)
    return AgentActionResult(action=action, replayed=False)


def _agent_replay(existing: AgentAction, *, pool: GpuPool, values: Mapping[str, object]) -> AgentActionResult:
    same = existing.pool_id == pool.pk and all(
        (Decimal(str(values[name])) if isinstance(getattr(existing, name), Decimal) and values[name] is not None
         else values[name]) == getattr(existing, name)
        for name in AGENT_ACTION_FIELDS
    )
    if not same:
        raise AgentActionConflict(existing)
    return AgentActionResult(action=existing, replayed=True)
