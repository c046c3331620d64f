"""Changing the elastic policy: a change in the one store and a new version, never an edit (allocations.elastic)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from allocations.elastic import selectors as elastic_selectors
from allocations.elastic import services as elastic_services
from allocations.models import ElasticPolicyVersion
from committee import selectors, signals, weeks
from committee.services.requests import actor_name
from governed import params
from governed.models import ChangeSource
from governed.services import policy_change_record


def elastic_policy_change(
    *, actor: User, parameters: Mapping[str, Any], reason: str, now: datetime | None = None
) -> ElasticPolicyVersion:
    """Change the elastic policy: `parameters` (missing ones carried over), with `reason`.

    Only the chair changes the policy. It applies from the next hourly evaluation: a change in the one store of
    governed parameters (governed.services.policy_change_record) effective from the current week, the week of the
    hours it evaluates, and the next elastic policy version (which the actions it starts name). Refused, as every
    change of the rules, when the current week already has a substantive change (StateConflict naming the next free
    week). Actions in force keep the version they started under until they end. Refused (ValidationError, nothing
    written) when a parameter is out of range, the reason is empty or nothing changes. After commit, sends
    `elastic_policy_changed(policy_version=…)` (the archive writes the version's policy page).
    """
    if not selectors.user_is_chair(user=actor):
        raise PermissionDenied(_("Only the chair changes the elastic policy."))
    now = now or timezone.now()
    with transaction.atomic():
        before = elastic_selectors.elastic_policy_current().parameters()
        version = elastic_services.elastic_policy_version_create(
            author=actor, author_name=actor_name(actor), parameters=parameters, reason=reason
        )
        policy_change_record(
            actor=actor, effective_week=weeks.current_week_label(now), reason=reason, source=ChangeSource.ELASTIC,
            source_ref=f"elastic:{version.number}",
            changes={f"{params.ELASTIC_PREFIX}{name}": value for name, value in version.parameters().items()
                     if before.get(name) != value},
        )
        transaction.on_commit(
            lambda: signals.elastic_policy_changed.send(sender=ElasticPolicyVersion, policy_version=version)
        )
    return version
