"""Personal tokens: `Authorization: Token dkt_...`, acting as the person who created them."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth.models import User
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.request import Request

from committee.models import PersonalToken
from core.tokens import token_hash

KEYWORD = b"token"
# Writing last_used_at on every call would turn each read into a write; a minute is precise enough.
LAST_USED_PRECISION = timedelta(minutes=1)


class PersonalTokenAuthentication(BaseAuthentication):
    """A person's token for scripts (`manage.py personal_token`). Other Authorization schemes pass through."""

    def authenticate(self, request: Request) -> tuple[User, PersonalToken] | None:
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != KEYWORD:
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed(_("Send the header as 'Authorization: Token <token>'."))
        try:
            token = parts[1].decode("ascii")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed(_("The token is not ASCII.")) from None
        row = PersonalToken.objects.select_related("user").filter(token_hash=token_hash(token)).first()
        if row is None or not row.user.is_active:
            raise exceptions.AuthenticationFailed(_("Unknown or revoked token."))
        now = timezone.now()
        if row.expires_at <= now:
            raise exceptions.AuthenticationFailed(
                _("This token expired on %(date)s. Create a new one (profile page or manage.py personal_token).")
                % {"date": row.expires_at.strftime("%Y-%m-%d %H:%M UTC")}
            )
        if row.last_used_at is None or now - row.last_used_at > LAST_USED_PRECISION:
            PersonalToken.objects.filter(pk=row.pk).update(last_used_at=now)
        return row.user, row

    def authenticate_header(self, request: Request) -> str:
        return "Token"


class PersonalTokenScheme(OpenApiAuthenticationExtension):
    target_class = PersonalTokenAuthentication
    name = "personalToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "A personal token from `manage.py personal_token`, sent as `Token dkt_...`.",
        }
