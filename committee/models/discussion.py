"""The conversation around a request: committee comments, questions to the team, stale scores, conflicts.

Comments are the committee's own (never shown to the team); a question is asked by a member and
answered by the team on its request page. A score is stale when the team changed the request
after the member scored it; a member who declared a conflict of interest on a request is recused
from it (their scores leave the totals) until they withdraw the declaration.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from committee.limits import bounded_text
from committee.models.requests import GpuRequest

COMMENT_MAX_LENGTH = 4000  # a committee member's comment on a request
QUESTION_MAX_LENGTH = 2000  # a question to the team
ANSWER_MAX_LENGTH = 4000  # the team's answer
CONFLICT_REASON_MAX_LENGTH = 1000  # why a member declares a conflict of interest


class RequestComment(models.Model):
    """A committee member's note on a request, for the committee only. Names are copied (audit)."""

    request = models.ForeignKey(GpuRequest, on_delete=models.CASCADE, related_name="committee_comments")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    author_name = models.CharField(_("by"), max_length=150)
    body = bounded_text(_("comment"), max_length=COMMENT_MAX_LENGTH)
    created_at = models.DateTimeField(_("written"), default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]
        verbose_name = _("committee comment")
        verbose_name_plural = _("committee comments")
        constraints = [models.CheckConstraint(condition=~Q(body=""), name="comment_body_required")]
        # The review reads a cycle's comments by request id: the foreign key's index serves it.

    def __str__(self) -> str:
        return f"{self.author_name} on {self.request_id}"


class QuestionStatus(models.TextChoices):
    OPEN = "open", _("Open")
    ANSWERED = "answered", _("Answered")


class RequestQuestion(models.Model):
    """A committee member's question to the request's team and, once given, the team's answer."""

    request = models.ForeignKey(GpuRequest, on_delete=models.CASCADE, related_name="questions")
    asked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    asked_by_name = models.CharField(_("asked by"), max_length=150)
    body = bounded_text(_("question"), max_length=QUESTION_MAX_LENGTH)
    asked_at = models.DateTimeField(_("asked"), default=timezone.now)
    status = models.CharField(_("status"), max_length=10, choices=QuestionStatus.choices, default=QuestionStatus.OPEN)
    answer = bounded_text(_("answer"), max_length=ANSWER_MAX_LENGTH, blank=True)
    answered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    answered_by_name = models.CharField(_("answered by"), max_length=150, blank=True)
    answered_at = models.DateTimeField(_("answered"), null=True, blank=True)

    class Meta:
        ordering = ["asked_at", "id"]
        verbose_name = _("question to the team")
        verbose_name_plural = _("questions to the team")
        constraints = [
            models.CheckConstraint(condition=~Q(body=""), name="question_body_required"),
            models.CheckConstraint(
                condition=Q(status=QuestionStatus.OPEN, answer="", answered_at__isnull=True)
                | (Q(status=QuestionStatus.ANSWERED, answered_at__isnull=False) & ~Q(answer="")),
                name="question_answered_has_answer",
            ),
        ]
        indexes = [
            # The review's "open questions" count and the edit-in-review check: a request's open questions.
            models.Index(fields=["request", "status"], name="question_request_status_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.asked_by_name} to {self.request_id}: {self.status}"


class ScoreStaleness(models.Model):
    """A member's scores of a request predate a change the team made to it; `changes` says what changed.

    `changes` is a list of {"field": key, "old": text, "new": text} (committee.selectors.discussion
    names each key). Removed when the member re-scores the request or confirms the scores still hold.
    """

    request = models.ForeignKey(GpuRequest, on_delete=models.CASCADE, related_name="stale_scores")
    member = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    member_name = models.CharField(_("member"), max_length=150)
    changes = models.JSONField(_("what changed"), default=list)
    marked_at = models.DateTimeField(_("marked stale"), default=timezone.now)

    class Meta:
        ordering = ["request", "member_name"]
        verbose_name = _("stale score")
        verbose_name_plural = _("stale scores")
        constraints = [models.UniqueConstraint(fields=["request", "member"], name="stale_one_per_member_request")]

    def __str__(self) -> str:
        return f"{self.member_name} on {self.request_id}: stale"


class ConflictDeclaration(models.Model):
    """A member's declared conflict of interest on a request: recused from scoring and deciding it.

    A withdrawn declaration stays as a row with `withdrawn_at` (the record shows both); at most one
    declaration in force per member and request.
    """

    request = models.ForeignKey(GpuRequest, on_delete=models.CASCADE, related_name="conflicts")
    member = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    member_name = models.CharField(_("member"), max_length=150)
    reason = bounded_text(_("reason"), max_length=CONFLICT_REASON_MAX_LENGTH, blank=True)
    declared_at = models.DateTimeField(_("declared"), default=timezone.now)
    withdrawn_at = models.DateTimeField(_("withdrawn"), null=True, blank=True)

    class Meta:
        ordering = ["declared_at", "id"]
        verbose_name = _("conflict of interest")
        verbose_name_plural = _("conflicts of interest")
        constraints = [
            models.UniqueConstraint(
                fields=["request", "member"], condition=Q(withdrawn_at__isnull=True), name="conflict_one_in_force"
            ),
            models.CheckConstraint(
                condition=Q(withdrawn_at__isnull=True) | Q(withdrawn_at__gte=models.F("declared_at")),
                name="conflict_withdrawn_after_declared",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.member_name} recused from {self.request_id}"


WAIVER_REASON_MAX_LENGTH = 1000  # why the chair waives a likely conflict


class ConflictWaiver(models.Model):
    """The chair's waiver of a likely conflict of interest found from the organisation (committee.selectors.conflicts)
    for one member and one request: with it the member scores and decides the request again.

    `conflict` keeps the words of the conflict as it was found when waived (the organisation may change later).
    A withdrawn waiver stays as a row with `withdrawn_at` (the member is recused again; the decision record lists
    both); at most one waiver in force per member and request.
    """

    request = models.ForeignKey(GpuRequest, on_delete=models.CASCADE, related_name="conflict_waivers")
    member = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    member_name = models.CharField(_("member"), max_length=150)
    conflict = models.CharField(_("conflict found"), max_length=300)
    reason = bounded_text(_("reason"), max_length=WAIVER_REASON_MAX_LENGTH)
    waived_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    waived_by_name = models.CharField(_("waived by"), max_length=150)
    waived_at = models.DateTimeField(_("waived"), default=timezone.now)
    withdrawn_at = models.DateTimeField(_("withdrawn"), null=True, blank=True)
    withdrawn_by_name = models.CharField(_("withdrawn by"), max_length=150, blank=True)

    class Meta:
        ordering = ["waived_at", "id"]
        verbose_name = _("conflict waiver")
        verbose_name_plural = _("conflict waivers")
        constraints = [
            models.UniqueConstraint(
                fields=["request", "member"], condition=Q(withdrawn_at__isnull=True), name="waiver_one_in_force"
            ),
            models.CheckConstraint(condition=~Q(reason=""), name="waiver_reason_required"),
            models.CheckConstraint(
                condition=Q(withdrawn_at__isnull=True) | Q(withdrawn_at__gte=models.F("waived_at")),
                name="waiver_withdrawn_after_waived",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.member_name} waived on {self.request_id}"
