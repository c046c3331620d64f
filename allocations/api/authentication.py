"""Scheduler tokens: `Authorization: Bearer dks_...`, each bound to one cluster.

A scheduler is not a person: a request authenticated this way has an anonymous `user` and the
`SchedulerClient` as `auth`. Endpoints for people (IsAuthenticated) therefore refuse it, and
scheduler endpoints (IsSchedulerClient) refuse everyone else.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from allocations.models import SchedulerClient
from allocations.services import TOKEN_PREFIX, scheduler_client_seen
from core.tokens import token_hash


class SchedulerTokenAuthentication(BaseAuthentication):
    """Bearer tokens that start with `dks_`; any other Authorization header is left to the next class."""

    def authenticate(self, request: Request) -> tuple[AnonymousUser, SchedulerClient] | None:
        parts = get_authorization_header(request).split()
        if len(parts) < 2 or parts[0].lower() != b"bearer" or not parts[1].startswith(TOKEN_PREFIX.encode()):
            return None
        if len(parts) > 2:
            raise exceptions.AuthenticationFailed(_("A bearer token has no spaces."))
        try:
            token = parts[1].decode("ascii")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed(_("The token is not ASCII.")) from None
        digest = token_hash(token)
        client = (
            SchedulerClient.objects.select_related("cluster")
            .filter(Q(token_hash=digest) | Q(previous_token_hash=digest, previous_token_expires_at__gt=timezone.now()),
                    is_active=True)
            .first()
        )
        if client is None:
            raise exceptions.AuthenticationFailed(_("Unknown, revoked or replaced scheduler token."))
        scheduler_client_seen(client=client)
        return AnonymousUser(), client

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="docket"'


class IsSchedulerClient(BasePermission):
    """Only a scheduler token; its cluster is checked by each view against the one asked for."""

    message = _("Only a cluster's scheduler token may use this endpoint.")

    def has_permission(self, request: Request, view: Any) -> bool:
        return isinstance(request.auth, SchedulerClient)


class SchedulerTokenScheme(OpenApiAuthenticationExtension):
    target_class = SchedulerTokenAuthentication
    name = "schedulerToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "http",
            "scheme": "bearer",
            "description": "A cluster's scheduler token (`dks_...`), from `manage.py scheduler_token`.",
        }
