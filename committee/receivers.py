"""Receivers of Django's own signals that the committee answers (its app config connects them)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib.auth.models import User

from committee.services.tokens import personal_token_revoke_all
from committee.services.webhooks import webhook_retries_enqueue


def user_deactivated_revoke_tokens(sender: type[User], instance: User, raw: bool = False, **kwargs: Any) -> None:
    """A person turned inactive (in the admin, or by the identity provider) loses every personal API token.

    Their sessions stop at once without this (the authentication backends refuse an inactive user);
    the tokens are deleted too, so that turning the account on again does not bring old tokens back.
    """
    if raw or instance.pk is None or instance.is_active:
        return
    if User.objects.filter(pk=instance.pk, is_active=True).exists():
        # In the save's own transaction: a save that fails keeps the tokens, one that commits loses them.
        personal_token_revoke_all(user=instance)


def on_clock_ticked_retry_webhooks(sender: Any, *, now: datetime, **kwargs: Any) -> None:
    """At every tick of the weekly clock (committee.signals.clock_ticked): hand the webhook deliveries whose next
    attempt is due to the outbox (committee/services/webhooks.py)."""
    webhook_retries_enqueue(now=now)
