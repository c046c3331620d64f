"""Changing the score quorum or the fair-share settings: a change in the one store, effective from a stated week."""

from __future__ import annotations

from collections.abc import Mapping

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils.translation import gettext as _

from committee import selectors, weeks
from core.locks import write_transaction
from governed import params
from governed.models import ChangeSource, PolicyChange
from governed.params import HALF_LIFE_MAX_WEEKS, QUORUM_MAX, TRAILING_MAX_WEEKS
from governed.services import policy_change_record

# The governed keys (governed.params) by the names the committee's forms and services use.
GOVERNANCE_FIELDS = {
    "score_quorum": params.QUORUM,
    "fairshare_half_life_weeks": params.FAIRSHARE_HALF_LIFE,
    "fairshare_trailing_weeks": params.FAIRSHARE_TRAILING,
}


def governance_errors(values: Mapping[str, float]) -> dict[str, str]:
    """Each out-of-range value by field, in the reader's language; empty when all are fine."""
    errors: dict[str, str] = {}
    quorum = values.get("score_quorum")
    if quorum is not None and not (1 <= quorum <= QUORUM_MAX and float(quorum).is_integer()):
        errors["score_quorum"] = _("The quorum is a whole number of member scores from 1 to %(n)d.") % {"n": QUORUM_MAX}
    half_life = values.get("fairshare_half_life_weeks")
    if half_life is not None and not (0 < half_life <= HALF_LIFE_MAX_WEEKS):
        errors["fairshare_half_life_weeks"] = _("The half-life is above 0 and at most %(n)d weeks.") % {
            "n": HALF_LIFE_MAX_WEEKS}
    trailing = values.get("fairshare_trailing_weeks")
    if trailing is not None and not (1 <= trailing <= TRAILING_MAX_WEEKS and float(trailing).is_integer()):
        errors["fairshare_trailing_weeks"] = _("The trailing window is a whole number of weeks from 1 to %(n)d.") % {
            "n": TRAILING_MAX_WEEKS}
    return errors


@write_transaction
def governance_version_create(
    *, actor: User, effective_week: str, parameters: Mapping[str, float], reason: str,
    source: str = ChangeSource.COMMAND, source_ref: str = "",
) -> PolicyChange:
    """Record a change of the quorum or fair share in the one store (governed), effective from `effective_week`.

    Only the chair. Refused (ValidationError by field, nothing written) for an unknown parameter, a value out of
    range, an empty reason or a malformed week; refused as the store refuses (a week that already has a substantive
    change: StateConflict naming the next free week; nothing changing). Parameters not given keep the values in
    force for that week, so a change effective from a later week is not undone.
    """
    if not selectors.user_is_chair(user=actor):
        raise PermissionDenied(_("Only the chair changes the committee's governance."))
    errors: dict[str, list[str]] = {}
    unknown = set(parameters) - set(GOVERNANCE_FIELDS)
    if unknown:
        errors["parameters"] = [_("Unknown governance parameters: %(names)s.") % {"names": ", ".join(sorted(unknown))}]
    errors.update({k: [v] for k, v in governance_errors(parameters).items()})
    try:
        weeks.parse_week(effective_week)
    except ValueError:
        errors.setdefault("effective_week", []).append(_("A week such as 2027-W01."))
    if not (reason or "").strip():
        errors.setdefault("reason", []).append(_("Say why the rules change: the reason is published with them."))
    if errors:
        raise ValidationError(errors)
    return policy_change_record(
        actor=actor, effective_week=effective_week, reason=reason, source=source, source_ref=source_ref,
        changes={GOVERNANCE_FIELDS[name]: value for name, value in parameters.items()},
    )
