"""Changing the elastic policy: the chair saves a new version, never an edit (allocations.elastic)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils.translation import gettext as _

from allocations.elastic import services as elastic_services
from allocations.models import ElasticPolicyVersion
from committee import selectors, signals
from committee.services.requests import actor_name


def elastic_policy_change(*, actor: User, parameters: Mapping[str, Any], reason: str) -> ElasticPolicyVersion:
    """Save the next elastic policy version with `parameters` (missing ones carried over) and `reason`.

    Only the chair changes the policy. It applies from the next hourly evaluation; actions in force keep
    the version they started under until they end. Refused (ValidationError, nothing written) when a
    parameter is out of range, the reason is empty or nothing changes. After commit, sends
    `elastic_policy_changed(policy_version=…)` (the archive writes the version's policy page).
    """
    if not selectors.user_is_chair(user=actor):
        raise PermissionDenied(_("Only the chair changes the elastic policy."))
    with transaction.atomic():
        version = elastic_services.elastic_policy_version_create(
            author=actor, author_name=actor_name(actor), parameters=parameters, reason=reason
        )
        transaction.on_commit(
            lambda: signals.elastic_policy_changed.send(sender=ElasticPolicyVersion, policy_version=version)
        )
    return version
