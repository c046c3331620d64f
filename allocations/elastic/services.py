"""Writes of the elastic pool: a new policy version, and the hourly evaluation that records actions.

The committee's chair changes the policy through committee.services.elastic_policy_change (which
checks the role and archives the change); this app only validates and writes the version.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime, time
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

from allocations.elastic import selectors
from allocations.elastic.evaluate import Action, ActionKind, evaluate, policy_errors
from allocations.elastic.selectors import PoolEvaluationInput
from allocations.models import ElasticAction, ElasticPolicyVersion, GpuPool, Team
from core.audit import fit
from core.locks import write_transaction

REASON_MAX_LENGTH = 5000  # as committee.limits.REASON_MAX_LENGTH (a rubric change's reason)


@write_transaction
def elastic_policy_version_create(
    *, author: User | None, author_name: str, parameters: Mapping[str, Any], reason: str
) -> ElasticPolicyVersion:
    """Save version n + 1 of the elastic policy with `parameters` (missing ones carried over) and `reason`.

    No role check here (the caller's job). Refused (ValidationError keyed by field, nothing written)
    when a parameter is out of range, the reason is empty, or nothing would change.
    """
    current = ElasticPolicyVersion.objects.select_for_update(no_key=True).order_by("-number").first()
    if current is None:
        current = selectors.elastic_policy_current()
    unknown = set(parameters) - set(ElasticPolicyVersion.PARAMETERS)
    if unknown:
        raise ValidationError(_("Unknown policy parameters: %(names)s.") % {"names": ", ".join(sorted(unknown))})
    merged = {**current.parameters(), **parameters}
    errors: dict[str, list[str]] = {k: [v] for k, v in policy_errors(replace(
        selectors.policy_input(current), **merged
    )).items()}
    for name in ("night_start", "night_end"):
        if not isinstance(merged[name], time):
            errors.setdefault(name, []).append(_("A time of day, such as 22:00."))
    reason = (reason or "").strip()
    if not reason:
        errors.setdefault("reason", []).append(_("Say why the policy changes: the reason is published with it."))
    elif len(reason) > REASON_MAX_LENGTH:
        errors.setdefault("reason", []).append(
            _("At most %(n)d characters.") % {"n": REASON_MAX_LENGTH}
        )
    if errors:
        raise ValidationError(errors)
    if merged == current.parameters():
        raise ValidationError(
            _("Nothing changed: these are the parameters of version %(n)d.") % {"n": current.number}
        )
    version = ElasticPolicyVersion(
        number=current.number + 1, reason=reason, author=author, author_name=fit(author_name), **merged
    )
    version.full_clean()
    version.save()
    return version


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
    version = selectors.elastic_policy_current()
    policy = selectors.policy_in_force(version=version, now=now)
    tz = ZoneInfo(settings.TIME_ZONE)
    started = ended = kept = 0
    for item in selectors.evaluation_inputs(policy=policy, now=now):
        actions = evaluate(
            policy=policy, pool=item.pool_input, windows=item.windows, usage=item.usage, now=now, tz=tz
        )
        s, e, k = _pool_actions_write(item=item, actions=list(actions), version=version, now=now)
        started, ended, kept = started + s, ended + e, kept + k
    return EvaluationResult(policy_version=version.number, started=started, ended=ended, kept=kept)


@write_transaction
def _pool_actions_write(*, item: PoolEvaluationInput, actions: list[Action], version: ElasticPolicyVersion,
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
            span_end=action.span_end, policy=version, started_at=now,
            explanation=action_explanation(
                action, pool_key=item.pool.key, team_name=teams.get(action.team_id or 0, ""),
                policy_number=version.number,
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
