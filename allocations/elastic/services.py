"""Writes of the elastic pool: the hourly evaluation that records actions.

The policy's thresholds are governed parameters (the one store, governed): the committee's chair changes them through
committee.services.elastic_policy_change, which records the change with governed.services.policy_change_record.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from zoneinfo import ZoneInfo

from django.conf import settings
from django.utils.translation import gettext as _

from allocations.elastic import selectors
from allocations.elastic.evaluate import Action, ActionKind, evaluate
from allocations.elastic.selectors import PoolEvaluationInput
from allocations.models import ElasticAction, GpuPool, Team
from core.locks import write_transaction


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


def _hours(action: Action) -> int:
    return int((action.span_end - action.span_start).total_seconds()) // 3600


def _pct(value: Decimal | None) -> str:
    return "—" if value is None else f"{value.normalize():f}"


def action_explanation(action: Action, *, pool_key: str, team_name: str, policy_number: int) -> str:
    """The action in words, from its numbers (kept with the row as written)."""
    params = {
        "pool": pool_key, "team": team_name, "window": action.window_id, "gpus": action.gpus,
        "window_gpus": action.window_gpus, "util": _pct(action.utilization_pct), "threshold": action.threshold_pct,
        "hours": _hours(action), "v": policy_number,
        "wait": _pct(action.queue_wait_minutes), "pool_wait": _pct(action.pool_queue_wait_minutes),
    }
    if action.kind is ActionKind.IDLE:
        text = _(
            "Window #%(window)s of %(team)s on %(pool)s (%(window_gpus)s GPUs) was measured at %(util)s%% mean "
            "utilization over the last %(hours)s h, under %(threshold)s%% all along (elastic policy v%(v)s): "
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
            "%(pool)s was %(util)s%% utilized over the last %(hours)s h, above %(threshold)s%%, and its work waited "
            "%(pool_wait)s min on average; %(team)s's granted work waited %(wait)s min (elastic policy v%(v)s). "
            "The burst reserve, %(gpus)s GPUs, is promoted to it: preemptible work there yields."
        ) % params
    return _(
        "At night, standard window #%(window)s of %(team)s on %(pool)s (%(window_gpus)s GPUs) was measured at "
        "%(util)s%% over the last %(hours)s h, under %(threshold)s%% (elastic policy v%(v)s): its %(gpus)s spare "
        "GPUs are opened to preemptible work until morning or until its use rises."
    ) % params
