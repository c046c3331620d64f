"""Changing the published rubric: one change in the one store of governed parameters (governed), never an edit."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone
from django.utils.translation import gettext as _

from committee import scoring, selectors
from committee.selectors import Rubric, rubric_week_next
from core.locks import write_transaction
from governed import params
from governed.models import ChangeSource
from governed.services import policy_change_record


@write_transaction
def rubric_change(
    *,
    actor: User,
    weights: Mapping[str, int],
    reason: str,
    guidance: Mapping[str, str] | None = None,
    now: datetime | None = None,
) -> Rubric:
    """Change the rubric: its weights (whole percents adding up to 100) and its guidance, from the next cycle to open.

    Only the chair changes the rubric. The change is one change in the store (governed.services.
    policy_change_record), effective from the first week whose cycle is not open yet (`rubric_week_next`). New
    weights are that week's one substantive change: refused, as in the policy lab, when the week already has an
    adopted change (StateConflict naming the next free week). A change of the guidance alone changes no number, so
    it is recorded as exempt from one change a week, with that reason. Guidance not given is carried over. Refused
    (ValidationError, nothing written) when the reason is empty, the weights are invalid, or nothing would change.
    Returns the rubric of that week with the change. After commit the store sends `policy_changed`: the archive
    writes the change's one page.
    """
    now = now or timezone.now()
    if not selectors.user_is_chair(user=actor):
        raise PermissionDenied(_("Only the chair changes the rubric."))
    errors: dict[str, list[str]] = {k: [v] for k, v in scoring.weights_errors(weights).items()}
    reason = (reason or "").strip()
    if not reason:
        errors.setdefault("reason", []).append(_("Say why the rubric changes: the reason is published with it."))
    unknown = set(guidance or {}) - set(scoring.CRITERIA)
    if unknown:
        errors.setdefault("guidance", []).append(
            _("Unknown criteria: %(names)s.") % {"names": ", ".join(sorted(unknown))}
        )
    if errors:
        raise ValidationError(errors)
    week = rubric_week_next(now=now)
    current = selectors.rubric_for_week(week=week)
    new_weights = {c: int(weights[c]) for c in scoring.CRITERIA}
    new_guidance = {**current.guidance, **{k: v.strip() for k, v in (guidance or {}).items() if v and v.strip()}}
    if new_weights == current.weights and new_guidance == current.guidance:
        raise ValidationError(_("Nothing changed: the weights and guidance are those of version %(n)d.")
                              % {"n": current.number})
    changes: dict[str, object] = {}
    if new_weights != current.weights:
        changes.update({f"{params.RUBRIC_PREFIX}{c}": w for c, w in new_weights.items()})
    changes.update({f"{params.RUBRIC_GUIDANCE_PREFIX}{c}": g for c, g in new_guidance.items()
                    if g != current.guidance.get(c)})
    policy_change_record(
        actor=actor, effective_week=week, reason=reason, source=ChangeSource.RUBRIC, changes=changes,
        exempt_reason="" if new_weights != current.weights
        else _("A change of the rubric's guidance alone changes no number."),
    )
    return selectors.rubric_current(now=now)
