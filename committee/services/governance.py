"""Changing the score quorum or the fair-share settings: a new governance version effective from a stated week."""

from __future__ import annotations

from collections.abc import Mapping

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils.translation import gettext as _

from committee import selectors, weeks
from committee.models import GovernanceVersion
from committee.models.governance import HALF_LIFE_MAX_WEEKS, QUORUM_MAX, TRAILING_MAX_WEEKS
from committee.services.requests import actor_name
from core.locks import write_transaction

GOVERNANCE_FIELDS = ("score_quorum", "fairshare_half_life_weeks", "fairshare_trailing_weeks")


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
    *, actor: User, effective_week: str, parameters: Mapping[str, float], reason: str
) -> GovernanceVersion:
    """Save the next governance version, effective from `effective_week`; parameters not given are carried over.

    Carried over from the version in force for that week, so an earlier-adopted later version is not undone.
    Only the chair. Refused (ValidationError, nothing written) for an unknown parameter, a value out of range, an
    empty reason, a week that already has a version, or nothing changing. Versions in force for later weeks keep
    their own values.
    """
    if not selectors.user_is_chair(user=actor):
        raise PermissionDenied(_("Only the chair changes the committee's governance."))
    errors: dict[str, list[str]] = {}
    unknown = set(parameters) - set(GOVERNANCE_FIELDS)
    if unknown:
        errors["parameters"] = [_("Unknown governance parameters: %(names)s.") % {"names": ", ".join(sorted(unknown))}]
    errors.update({k: [v] for k, v in governance_errors(parameters).items()})
    try:
        monday = weeks.parse_week(effective_week)
    except ValueError:
        errors.setdefault("effective_week", []).append(_("A week such as 2027-W01."))
        monday = None
    reason = (reason or "").strip()
    if not reason:
        errors.setdefault("reason", []).append(_("Say why the rules change: the reason is published with them."))
    # One writer at a time: the version numbers and the effective weeks stay unique without a retry.
    list(GovernanceVersion.objects.select_for_update(no_key=True).order_by("number").values_list("pk", flat=True))
    if monday is not None and GovernanceVersion.objects.filter(effective_monday=monday).exists():
        errors.setdefault("effective_week", []).append(
            _("Week %(week)s already has a governance version.") % {"week": effective_week})
    if errors or monday is None:
        raise ValidationError(errors)
    current = selectors.governance_for_week(week=effective_week)
    values = {name: getattr(current, name) for name in GOVERNANCE_FIELDS}
    new = {**values, **parameters}
    if new == values:
        raise ValidationError(_("Nothing changed: these are the rules of version %(n)d.") % {"n": current.number})
    last = GovernanceVersion.objects.order_by("-number").values_list("number", flat=True).first() or 1
    version = GovernanceVersion(
        number=last + 1, effective_week=weeks.week_label(monday),
        effective_monday=monday, reason=reason, author=actor, author_name=actor_name(actor),
        score_quorum=int(new["score_quorum"]), fairshare_half_life_weeks=float(new["fairshare_half_life_weeks"]),
        fairshare_trailing_weeks=int(new["fairshare_trailing_weeks"]),
    )
    version.full_clean()
    version.save()
    return version
