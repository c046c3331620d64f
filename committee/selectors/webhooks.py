"""Webhook subscriptions and their delivery log, as their owner reads them (docs/events.md)."""

from __future__ import annotations

from django.db.models import Prefetch, Q, QuerySet

from committee.models import MembershipRole, TeamMembership, WebhookAttempt, WebhookDelivery, WebhookSubscription
from committee.selectors.people import Viewer, user_is_chair


def webhook_subscriptions_for_viewer(*, viewer: Viewer) -> QuerySet[WebhookSubscription]:
    """The subscriptions `viewer` manages: those of the teams it leads, and every cluster's for the chair."""
    if not viewer.is_authenticated:
        return WebhookSubscription.objects.none()
    led = TeamMembership.objects.filter(user=viewer, role=MembershipRole.LEAD).values("team_id")
    scope = Q(team_id__in=led)
    if user_is_chair(user=viewer):
        scope |= Q(cluster__isnull=False)
    return WebhookSubscription.objects.filter(scope).select_related("team", "cluster").order_by("id")


def webhook_delivery_log(*, subscription: WebhookSubscription, limit: int = 100) -> list[WebhookDelivery]:
    """The subscription's latest deliveries, newest first, each with its event and its attempts. Three queries."""
    return list(
        WebhookDelivery.objects.filter(subscription=subscription).select_related("event")
        .prefetch_related(Prefetch("attempt_log", queryset=WebhookAttempt.objects.order_by("number")))
        .order_by("-id")[:limit]
    )
