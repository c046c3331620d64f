"""Changing the elastic policy: one change in the one store of governed parameters (governed), never an edit."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime, time
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone
from django.utils.translation import gettext as _

from allocations.elastic import selectors as elastic_selectors
from allocations.elastic.evaluate import policy_errors
from allocations.elastic.selectors import ELASTIC_PARAMETERS, ElasticVersion
from committee import limits, selectors, weeks
from core.locks import write_transaction
from governed import params
from governed.models import ChangeSource
from governed.services import policy_change_record


@write_transaction
def elastic_policy_change(
    *, actor: User, parameters: Mapping[str, Any], reason: str, now: datetime | None = None
) -> ElasticVersion:
    """Change the elastic policy: `parameters` (missing ones carried over), with `reason`.

    Only the chair changes the policy. It applies from the next hourly evaluation: one change in the one store of
    governed parameters (governed.services.policy_change_record) effective from the current week, the week of the
    hours it evaluates; the actions it starts name its version. Refused, as every change of the rules, when the
    current week already has a substantive change (StateConflict naming the next free week). Actions in force keep
    the version they started under until they end. Refused (ValidationError keyed by field, nothing written) when a
    parameter is unknown or out of range, the reason is empty or nothing changes. Returns the policy in force after
    it. After commit the store sends `policy_changed`: the archive writes the change's one page.
    """
    if not selectors.user_is_chair(user=actor):
        raise PermissionDenied(_("Only the chair changes the elastic policy."))
    now = now or timezone.now()
    current = elastic_selectors.elastic_policy_current(now=now)
    unknown = set(parameters) - set(ELASTIC_PARAMETERS)
    if unknown:
        raise ValidationError(_("Unknown policy parameters: %(names)s.") % {"names": ", ".join(sorted(unknown))})
    merged = {**current.parameters(), **parameters}
    errors: dict[str, list[str]] = {
        k: [v] for k, v in policy_errors(replace(current.policy, **merged)).items()
    }
    for name in ("night_start", "night_end"):
        if not isinstance(merged[name], time):
            errors.setdefault(name, []).append(_("A time of day, such as 22:00."))
    reason = (reason or "").strip()
    if not reason:
        errors.setdefault("reason", []).append(_("Say why the policy changes: the reason is published with it."))
    elif len(reason) > limits.REASON_MAX_LENGTH:
        errors.setdefault("reason", []).append(_("At most %(n)d characters.") % {"n": limits.REASON_MAX_LENGTH})
    if errors:
        raise ValidationError(errors)
    changed = {name: value for name, value in merged.items() if current.parameters()[name] != value}
    if not changed:
        raise ValidationError(
            _("Nothing changed: these are the parameters of version %(n)d.") % {"n": current.number}
        )
    policy_change_record(
        actor=actor, effective_week=weeks.current_week_label(now), reason=reason, source=ChangeSource.ELASTIC,
        changes={f"{params.ELASTIC_PREFIX}{name}": value for name, value in changed.items()},
    )
    return elastic_selectors.elastic_policy_current(now=now)
