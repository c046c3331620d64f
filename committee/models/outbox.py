"""Work a user action starts, written in the same transaction and relayed to Celery."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class OutboxMessage(models.Model):
    """Work that a change asked for, written in the change's own transaction (committee/outbox.py).

    Relayed to Celery after commit when the broker answers, else later by the `relay_outbox`
    beat job. `key` names the work ("notify:request-submitted:42"): asking twice for the same
    work writes one row. `done_at` is set once the work is done, by the task in the same
    transaction as its effect where it can, so a second delivery does nothing.
    """

    key = models.CharField(_("key"), max_length=200, unique=True)
    task_name = models.CharField(_("task"), max_length=200)
    kwargs = models.JSONField(_("arguments"), default=dict, blank=True)
    created_at = models.DateTimeField(_("created"), default=timezone.now)
    relayed_at = models.DateTimeField(_("handed to the broker"), null=True, blank=True)
    relay_attempts = models.PositiveIntegerField(_("relay attempts"), default=0)
    done_at = models.DateTimeField(_("done"), null=True, blank=True)
    done_by = models.CharField(_("done by"), max_length=200, blank=True)
    last_error = models.TextField(_("last error"), blank=True)
    # The request that asked for the work (core/logs.py): the task's log lines carry it too.
    request_id = models.CharField(_("request id"), max_length=128, blank=True)

    class Meta:
        ordering = ["id"]
        verbose_name = _("outbox message")
        verbose_name_plural = _("outbox messages")
        constraints = [
            models.CheckConstraint(condition=~Q(key=""), name="outbox_key_required"),
            models.CheckConstraint(
                condition=Q(done_at__isnull=True) | ~Q(done_by=""), name="outbox_done_says_by_whom"
            ),
        ]
        indexes = [
            # The relay: the messages not done yet, oldest first.
            models.Index(fields=["id"], condition=Q(done_at__isnull=True), name="outbox_not_done_idx"),
        ]

    def __str__(self) -> str:
        return self.key
