"""Personal API tokens for scripts. Only a hash is stored; the token is shown once."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from committee.models import PersonalToken
from core.tokens import token_hash, token_new

TOKEN_PREFIX = "dkt_"  # noqa: S105 (a label, not a secret)


def personal_token_create(*, user: User, name: str) -> tuple[PersonalToken, str]:
    """A new token for `user`, labelled `name` (unique per user). Returns the row and the token itself.

    The token is not stored, only its SHA-256: whoever creates it must copy it now. It acts with
    exactly the user's permissions, in the API only, for DOCKET_TOKEN_MAX_AGE_DAYS days.
    """
    name = (name or "").strip()
    if not name:
        raise ValidationError({"name": [_("Give the token a name, e.g. the script that uses it.")]})
    token = token_new(prefix=TOKEN_PREFIX)
    try:
        with transaction.atomic():
            row = PersonalToken.objects.create(
                user=user, name=name, token_hash=token_hash(token),
                expires_at=timezone.now() + timedelta(days=settings.DOCKET_TOKEN_MAX_AGE_DAYS),
            )
    except IntegrityError:
        raise ValidationError(
            {"name": [_("You already have a token named “%(name)s”.") % {"name": name}]}
        ) from None
    return row, token


def personal_token_revoke(*, user: User, name: str) -> bool:
    """Delete the user's token named `name`; False if there was none."""
    deleted, _rows = PersonalToken.objects.filter(user=user, name=name).delete()
    return bool(deleted)


def personal_token_revoke_all(*, user: User) -> int:
    """Delete every token of `user` (a lost laptop, a leaked script); the number deleted."""
    deleted, _rows = PersonalToken.objects.filter(user=user).delete()
    return deleted
