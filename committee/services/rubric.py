"""Changing the published rubric: a new version, never an edit."""

from __future__ import annotations

from collections.abc import Mapping

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils.translation import gettext as _

from committee import scoring, selectors, signals
from committee.models import RubricVersion
from committee.services.requests import actor_name
from core.locks import write_transaction


@write_transaction
def rubric_change(
    *,
    actor: User,
    weights: Mapping[str, int],
    reason: str,
    guidance: Mapping[str, str] | None = None,
) -> RubricVersion:
    """Save a new rubric version with the given weights (whole percents adding up to 100) and reason.

    Only the chair changes the rubric. Cycles keep the version they pinned when they opened, so
    the change applies from the next cycle to open. Guidance not given is carried over. Refused
    (ValidationError, nothing written) when the reason is empty, the weights are invalid, or
    nothing would change. After commit, sends `rubric_changed(rubric_version=…)`.
    """
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
    version = RubricVersion(
        number=current.number + 1,
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
