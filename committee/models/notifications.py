"""Notification events, daily digests and opt-outs."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class NotificationKind(models.TextChoices):
    INTAKE_CLOSING = "intake_closing", _("Intake closes soon and my team has not submitted a request")
    REQUEST_SUBMITTED = "request_submitted", _("A request of my team was submitted")
    DECISION_PUBLISHED = "decision_published", _("The decisions on my team's requests are published")
    INTAKE_CLOSED = "intake_closed", _("Intake closed: requests wait for the committee's scores")
    REVIEW_COMING = "review_coming", _("The weekly review is coming up")
    DECISION_CORRECTED = "decision_corrected", _("A decision on my team's request was corrected")
    APPEAL_FILED = "appeal_filed", _("A team appealed a decision")
    APPEAL_DECIDED = "appeal_decided", _("The committee decided my team's appeal")
    EMERGENCY = "emergency", _("An emergency request was filed, approved, placed or rejected")
    QUESTION_ASKED = "question_asked", _("The committee asked my team a question about a request")
    QUESTION_ANSWERED = "question_answered", _("A team answered the committee's question")
    SCORES_STALE = "scores_stale", _("A team changed a request after I scored it")
    DRAFT_AWAITS_LEAD = "draft_awaits_lead", _("A member's draft waits for me, the team's lead, to submit it")
    DRAFT_RETURNED = "draft_returned", _("The team's lead sent my draft back with a note")
    WINDOW_EVENT = "window_event", _("A window of my team starts, ends soon, or was given back or extended")
    BUDGET_ALERT = "budget_alert", _("A department's charges reached 80 or 100 percent of its quarter's budget")
    OUTCOME_DUE = "outcome_due", _("A grant of my team ended: report its realized outcome against the forecast")


class NotificationDigest(models.Model):
    """The one email a person gets on a day (committee time), listing what happened since the last one."""

    recipient = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    day = models.DateField(_("day"))
    email = models.CharField(_("sent to"), max_length=254)
    sent_at = models.DateTimeField(_("sent"))
    notification_count = models.PositiveIntegerField(_("notifications"))

    class Meta:
        ordering = ["-day", "recipient"]
        verbose_name = _("notification digest")
        verbose_name_plural = _("notification digests")
        constraints = [
            models.UniqueConstraint(fields=["recipient", "day"], name="digest_one_per_person_per_day"),
            models.CheckConstraint(condition=Q(notification_count__gt=0), name="digest_not_empty"),
        ]

    def __str__(self) -> str:
        return f"{self.email} {self.day}"


class Notification(models.Model):
    """One thing a person is told about, in their next daily digest.

    Recording the same (recipient, kind, key) again writes nothing. The words are made when the
    digest is written, from `params`, so they follow the reader's language. `skipped` marks a
    notification of a kind the person had opted out of when their digest was written.
    """

    recipient = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notifications", verbose_name=_("recipient")
    )
    kind = models.CharField(_("kind"), max_length=30, choices=NotificationKind.choices)
    key = models.CharField(_("about"), max_length=200)
    params = models.JSONField(_("details"), default=dict, blank=True)
    created_at = models.DateTimeField(_("recorded"), default=timezone.now)
    digest = models.ForeignKey(
        NotificationDigest, on_delete=models.PROTECT, null=True, blank=True, related_name="notifications"
    )
    skipped = models.BooleanField(_("skipped (opted out)"), default=False)
    # Read in the in-app inbox (the digest is the email; the inbox shows every notification, opted out or not).
    read_at = models.DateTimeField(_("read"), null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        verbose_name = _("notification")
        verbose_name_plural = _("notifications")
        constraints = [
            models.UniqueConstraint(fields=["recipient", "kind", "key"], name="notification_once_per_recipient"),
            models.CheckConstraint(
                condition=Q(skipped=False) | Q(digest__isnull=True), name="notification_skipped_not_sent"
            ),
        ]
        indexes = [
            # The digest job: the notifications waiting for a digest, per person.
            models.Index(
                fields=["recipient", "created_at"],
                condition=Q(digest__isnull=True, skipped=False),
                name="notification_waiting_idx",
            ),
            # The navigation's badge on every page: a person's unread notifications.
            models.Index(fields=["recipient"], condition=Q(read_at__isnull=True), name="notification_unread_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.recipient_id} {self.kind} {self.key}"


class NotificationOptOut(models.Model):
    """A person does not want one kind of notification in their digest."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_opt_outs")
    kind = models.CharField(_("kind"), max_length=30, choices=NotificationKind.choices)
    created_at = models.DateTimeField(_("since"), default=timezone.now)

    class Meta:
        verbose_name = _("notification opt-out")
        verbose_name_plural = _("notification opt-outs")
        constraints = [
            models.UniqueConstraint(fields=["user", "kind"], name="optout_once_per_kind"),
            models.CheckConstraint(
                condition=Q(kind__in=[choice.value for choice in NotificationKind]), name="optout_kind_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user_id} without {self.kind}"
