"""Changing the published rubric: a change in the one store of governed parameters and a new version, never an edit."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from committee import scoring, selectors, signals, weeks
from committee.models import ReviewCycle, RubricVersion
from committee.services.requests import actor_name
from core.locks import write_transaction
from governed import params
from governed.models import ChangeSource
from governed.services import policy_change_record


def rubric_week_next(*, now: datetime) -> str:
    """The week a rubric change made now applies from: the first week after this one whose cycle is not open yet."""
    week = weeks.week_label(weeks.parse_week(weeks.current_week_label(now)) + timedelta(weeks=1))
    opened = set(ReviewCycle.objects.filter(starts_at__gte=weeks.week_bounds(week)[0]).values_list("week", flat=True))
    while week in opened:
        week = weeks.week_label(weeks.parse_week(week) + timedelta(weeks=1))
    return week


@write_transaction
def rubric_change(
    *,
    actor: User,
    weights: Mapping[str, int],
    reason: str,
    guidance: Mapping[str, str] | None = None,
    now: datetime | None = None,
) -> RubricVersion:
    """Change the rubric: its weights (whole percents adding up to 100) from the next cycle to open, its guidance.

    Only the chair changes the rubric. New weights are a change in the one store of governed parameters
    (governed.services.policy_change_record), effective from the first week whose cycle is not open yet
    (`rubric_week_next`): refused, as in the policy lab, when that week already has an adopted change
    (StateConflict naming the next free week). The new rubric version (its guidance, pinned by the next cycle to
    open) is saved with it. Guidance not given is carried over. Refused (ValidationError, nothing written) when the
    reason is empty, the weights are invalid, or nothing would change. After commit, sends
    `rubric_changed(rubric_version=…)` and the store's `policy_changed`.
    """
    now = now or timezone.now()
    if not selectors.user_is_chair(user=actor):
        raise PermissionDenied(_("Only the chair changes the rubric."))
    errors: dict[str, list[str]] = {k: [v] for k, v in scoring.weights_errors(weights).items()}
    reason = (reason or "").strip()
    if not reason:
        errors.setdefault("reason", []).append(_("Say why the rubric changes: the reason is published with it."))
    # Lock the latest version so two changes at once cannot both become version n + 1.
    current = RubricVersion.objects.select_for_update(no_key=True).order_by("-number").first()
    if current is None:
        current = selectors.rubric_current()
    new_guidance = {**current.guidance(), **{k: v.strip() for k, v in (guidance or {}).items() if v and v.strip()}}
    unknown = set(guidance or {}) - set(scoring.CRITERIA)
    if unknown:
        errors.setdefault("guidance", []).append(
            _("Unknown criteria: %(names)s.") % {"names": ", ".join(sorted(unknown))}
        )
    if errors:
        raise ValidationError(errors)
    new_weights = {c: int(weights[c]) for c in scoring.CRITERIA}
    if new_weights == current.weights() and new_guidance == current.guidance():
        raise ValidationError(_("Nothing changed: the weights and guidance are those of version %(n)d.")
                              % {"n": current.number})
    if new_weights != current.weights():
        policy_change_record(
            actor=actor, effective_week=rubric_week_next(now=now), reason=reason, source=ChangeSource.RUBRIC,
            changes={f"{params.RUBRIC_PREFIX}{c}": w for c, w in new_weights.items()},
        )
    return rubric_version_write(actor=actor, weights=new_weights, guidance=new_guidance, reason=reason,
                                number=current.number + 1)


def rubric_version_write(
    *, actor: User | None, weights: Mapping[str, int], guidance: Mapping[str, str], reason: str, number: int
) -> RubricVersion:
    """Save rubric version `number` (its weights and guidance, pinned by the next cycle to open). No checks: the
    callers check (`rubric_change`; the policy lab's adoption, whose weights the store holds since adoption)."""
    new_weights, new_guidance = weights, guidance
    version = RubricVersion(
        number=number,
        reason=reason,
        author=actor,
        author_name=actor_name(actor),
        **{f"{c}_weight_pct": new_weights[c] for c in scoring.CRITERIA},
        **{f"{c}_guidance": new_guidance[c] for c in scoring.CRITERIA},
    )
    version.full_clean()
    version.save()
    transaction.on_commit(lambda: signals.rubric_changed.send(sender=RubricVersion, rubric_version=version))
    return version
