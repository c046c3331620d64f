"""Lifecycle events of granted windows and the signed webhooks that carry them (docs/events.md).

A `LifecycleEvent` is recorded once per key (a window's start, its ending notice, a release...); recording it
tells the team (inbox, digest, chat) and writes one `WebhookDelivery` for every active `WebhookSubscription` of
its team or its cluster. Each delivery keeps every `WebhookAttempt`: the subscriber's delivery log.
"""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from allocations.models import Cluster, Team


class LifecycleEventType(models.TextChoices):
    """The CloudEvents `type` of each event, after the reverse-DNS prefix (`org.docket.`)."""

    WINDOW_STARTED = "window.started", _("A window started")
    WINDOW_ENDING = "window.ending", _("A window ends soon")
    WINDOW_IDLE = "window.idle", _("A window was idle for the elastic policy's idle span")
    WINDOW_RELEASED = "window.released", _("GPUs of a window were given back")
    GRANT_EXTENDED = "grant.extended", _("A grant was extended")
    CONTINUATION_CONFIRMED = "grant.continuation_confirmed", _("A grant's next week was confirmed")
    CONTINUATION_WITHHELD = "grant.continuation_withheld", _("A grant's next week was withheld")


class LifecycleEvent(models.Model):
    event_id = models.UUIDField(_("event id"), default=uuid.uuid4, unique=True, editable=False)
    key = models.CharField(_("key"), max_length=200, unique=True)  # what makes it once: "window.started:12:2026-W50"
    type = models.CharField(_("type"), max_length=40, choices=LifecycleEventType.choices)
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="+", verbose_name=_("team"))
    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, related_name="+", verbose_name=_("cluster"))
    request_ref = models.PositiveBigIntegerField(_("request"), null=True, blank=True)
    occurred_at = models.DateTimeField(_("about the instant"))
    recorded_at = models.DateTimeField(_("recorded"), default=timezone.now)
    data = models.JSONField(_("data"), default=dict)

    class Meta:
        ordering = ["recorded_at", "id"]
        verbose_name = _("lifecycle event")
        verbose_name_plural = _("lifecycle events")
        constraints = [
            models.CheckConstraint(condition=Q(type__in=LifecycleEventType.values), name="lifecycle_event_type_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.key}"


class WebhookSubscription(models.Model):
    """Where a team's or a cluster's lifecycle events are posted, signed with `secret` (HMAC-SHA256)."""

    team = models.ForeignKey(Team, on_delete=models.PROTECT, null=True, blank=True, related_name="+",
                             verbose_name=_("team"))
    cluster = models.ForeignKey(Cluster, on_delete=models.PROTECT, null=True, blank=True, related_name="+",
                                verbose_name=_("cluster"))
    url = models.URLField(_("URL"), max_length=500)
    secret = models.CharField(_("signing secret"), max_length=128)
    active = models.BooleanField(_("active"), default=True)
    created_by_name = models.CharField(_("created by"), max_length=150)
    created_at = models.DateTimeField(_("created"), default=timezone.now)

    class Meta:
        ordering = ["id"]
        verbose_name = _("webhook subscription")
        verbose_name_plural = _("webhook subscriptions")
        constraints = [
            models.CheckConstraint(
                condition=Q(team__isnull=False, cluster__isnull=True) | Q(team__isnull=True, cluster__isnull=False),
                name="webhook_team_or_cluster",
            ),
        ]

    def __str__(self) -> str:
        return self.url


class DeliveryState(models.TextChoices):
    PENDING = "pending", _("pending")
    DELIVERED = "delivered", _("delivered")
    FAILED = "failed", _("failed (gave up)")


class WebhookDelivery(models.Model):
    """One event for one subscriber: pending until a POST is answered 2xx, retried with backoff, else given up."""

    subscription = models.ForeignKey(WebhookSubscription, on_delete=models.PROTECT, related_name="deliveries",
                                     verbose_name=_("subscription"))
    event = models.ForeignKey(LifecycleEvent, on_delete=models.PROTECT, related_name="deliveries",
                              verbose_name=_("event"))
    state = models.CharField(_("state"), max_length=10, choices=DeliveryState.choices, default=DeliveryState.PENDING)
    attempts = models.PositiveIntegerField(_("attempts"), default=0)
    next_attempt_at = models.DateTimeField(_("next attempt"), null=True, blank=True)
    delivered_at = models.DateTimeField(_("delivered"), null=True, blank=True)

    class Meta:
        ordering = ["id"]
        verbose_name = _("webhook delivery")
        verbose_name_plural = _("webhook deliveries")
        constraints = [
            models.UniqueConstraint(fields=["subscription", "event"], name="webhook_delivery_once"),
            models.CheckConstraint(condition=Q(state__in=DeliveryState.values), name="webhook_delivery_state_valid"),
        ]
        indexes = [
            # the clock's retry: pending deliveries whose next attempt is due (webhook_retries_enqueue)
            models.Index(fields=["state", "next_attempt_at"], name="webhook_delivery_due_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.event_id} → {self.subscription_id}: {self.state}"


class WebhookAttempt(models.Model):
    """One POST of a delivery, as the receiver answered it: the subscriber's delivery log."""

    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="attempt_log",
                                 verbose_name=_("delivery"))
    number = models.PositiveIntegerField(_("attempt"))
    attempted_at = models.DateTimeField(_("attempted"))
    status_code = models.PositiveIntegerField(_("HTTP status"), null=True, blank=True)
    error = models.CharField(_("error"), max_length=500, blank=True)

    class Meta:
        ordering = ["delivery", "number"]
        verbose_name = _("webhook attempt")
        verbose_name_plural = _("webhook attempts")
        constraints = [models.UniqueConstraint(fields=["delivery", "number"], name="webhook_attempt_once")]

    def __str__(self) -> str:
        return f"{self.delivery_id} #{self.number}: {self.status_code or self.error}"
