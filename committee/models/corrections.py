"""Changes to a decision after the week is finalized: the chair's corrections and the teams' appeals.

Both are append-only history. A correction keeps the decision's values before and after, so a
decision's old outcome, GPUs and rationale are never lost; an appeal keeps the team's statement
and the committee's answer. Names and titles are copied, so the rows read the same after a user
or a request is gone.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from committee import limits
from committee.limits import bounded_text
from committee.models.cycles import ReviewCycle
from committee.models.requests import GpuRequest
from committee.models.review import Decision, DecisionOutcome


class AppealStatus(models.TextChoices):
    OPEN = "open", _("Waiting for an answer")
    UPHELD = "upheld", _("Decision upheld")
    AMENDED = "amended", _("Decision amended")


class Appeal(models.Model):
    """A team's appeal of its request's outcome, filed within the appeal window after the week is published.

    At most one open appeal per request (a database constraint). Decided by a committee member who
    is not a member of the team: upheld (the decision stands, with a reason) or amended (the decision
    is corrected: `DecisionCorrection.appeal` points here).
    """

    request = models.ForeignKey(GpuRequest, on_delete=models.PROTECT, related_name="appeals")
    cycle = models.ForeignKey(ReviewCycle, on_delete=models.PROTECT, related_name="appeals")
    team_name = models.CharField(_("team"), max_length=100)
    request_title = models.CharField(_("request"), max_length=200)
    statement = bounded_text(_("statement"), max_length=limits.STATEMENT_MAX_LENGTH)
    filed_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    filed_by_name = models.CharField(_("filed by"), max_length=150)
    filed_at = models.DateTimeField(_("filed"), default=timezone.now)
    status = models.CharField(_("status"), max_length=10, choices=AppealStatus.choices, default=AppealStatus.OPEN)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    decided_by_name = models.CharField(_("decided by"), max_length=150, blank=True)
    decided_at = models.DateTimeField(_("decided"), null=True, blank=True)
    decision_reason = bounded_text(_("reason"), blank=True, max_length=limits.REASON_MAX_LENGTH)

    class Meta:
        ordering = ["filed_at", "id"]
        verbose_name = _("appeal")
        verbose_name_plural = _("appeals")
        constraints = [
            models.UniqueConstraint(
                fields=["request"],
                condition=Q(status=AppealStatus.OPEN),
                name="appeal_one_open_per_request",
                violation_error_message=_("This request already has an open appeal."),
            ),
            models.CheckConstraint(condition=~Q(statement=""), name="appeal_statement_required"),
            models.CheckConstraint(
                condition=Q(status=AppealStatus.OPEN, decided_at__isnull=True)
                | (~Q(status=AppealStatus.OPEN) & Q(decided_at__isnull=False) & ~Q(decision_reason="")),
                name="appeal_decided_has_time_and_reason",
            ),
        ]
        indexes = [
            # The committee's appeals list: a week's appeals, open first.
            models.Index(fields=["cycle", "status"], name="appeal_cycle_status_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.team_name} · {self.request_title}: {self.get_status_display()}"


class DecisionCorrection(models.Model):
    """One change of a decision after its week was finalized: the values before and after, why, who, when.

    `plan_version` is the plan version the correction published (a correction after publish), or
    None (a correction between finalize and publish only changes the decision). `appeal` is set when
    the correction is an appeal's amendment.
    """

    decision = models.ForeignKey(Decision, on_delete=models.PROTECT, related_name="corrections")
    cycle = models.ForeignKey(ReviewCycle, on_delete=models.PROTECT, related_name="corrections")
    appeal = models.OneToOneField(
        Appeal, on_delete=models.PROTECT, null=True, blank=True, related_name="correction"
    )
    team_name = models.CharField(_("team"), max_length=100)
    request_title = models.CharField(_("request"), max_length=200)
    previous_outcome = models.CharField(_("previous decision"), max_length=12, choices=DecisionOutcome.choices)
    previous_granted_gpu_count = models.PositiveIntegerField(_("previous GPUs granted"), null=True, blank=True)
    previous_rationale = bounded_text(_("previous rationale"), max_length=limits.RATIONALE_MAX_LENGTH)
    previous_decided_by_name = models.CharField(_("previously decided by"), max_length=150)
    outcome = models.CharField(_("new decision"), max_length=12, choices=DecisionOutcome.choices)
    granted_gpu_count = models.PositiveIntegerField(_("new GPUs granted"), null=True, blank=True)
    rationale = bounded_text(_("new rationale"), max_length=limits.RATIONALE_MAX_LENGTH)
    # The alternative granted before and by the correction ("grant the alternative"), copied as the decision keeps it.
    previous_alternative_description = models.CharField(_("previous alternative granted"), max_length=300,
                                                        blank=True)
    alternative_description = models.CharField(_("alternative granted"), max_length=300, blank=True)
    alternative_gpu_hours = models.PositiveIntegerField(_("alternative's GPU-hours"), null=True, blank=True)
    # A grant of a request below the score quorum: the exception to the rubric the chair stated.
    exception_reason = bounded_text(_("exception to the rubric"), max_length=limits.REASON_MAX_LENGTH, blank=True)
    reason = bounded_text(_("reason for the correction"), max_length=limits.REASON_MAX_LENGTH)
    corrected_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+"
    )
    corrected_by_name = models.CharField(_("corrected by"), max_length=150)
    corrected_at = models.DateTimeField(_("corrected"), default=timezone.now)
    plan_version = models.PositiveIntegerField(_("plan version"), null=True, blank=True)

    class Meta:
        ordering = ["corrected_at", "id"]
        verbose_name = _("decision correction")
        verbose_name_plural = _("decision corrections")
        constraints = [
            models.CheckConstraint(condition=~Q(reason=""), name="correction_reason_required"),
            models.CheckConstraint(condition=~Q(rationale=""), name="correction_rationale_required"),
        ]
        indexes = [
            # The week's record and the request page: a cycle's corrections in order.
            models.Index(fields=["cycle", "corrected_at"], name="correction_cycle_at_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.request_title}: {self.previous_outcome} → {self.outcome}"
