"""Out-of-cycle emergency requests: filed mid-week, approved by the chair and one other member, placed at once.

The GPUs, hours and pool are those of the `GpuRequest` the emergency belongs to (a request of the
running week with `is_emergency` set); this model holds what an emergency adds: the
justification, the approvals, the plan version that placed it and the next weekly review's
after-the-fact decision. See committee/services/emergency.py and docs/emergencies.md.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from allocations.models import AllocationPlan
from committee import limits
from committee.limits import bounded_text
from committee.models.cycles import ReviewCycle
from committee.models.requests import GpuRequest


class EmergencyStatus(models.TextChoices):
    PENDING = "pending", _("Waiting for approval")
    PLACED = "placed", _("Approved and placed")
    REJECTED = "rejected", _("Rejected")


class PostHocOutcome(models.TextChoices):
    ENDORSED = "endorsed", _("Endorsed")
    NOT_ENDORSED = "not_endorsed", _("Not endorsed")


class EmergencyRequest(models.Model):
    request = models.OneToOneField(GpuRequest, on_delete=models.PROTECT, related_name="emergency")
    justification = bounded_text(_("why it cannot wait"), max_length=limits.JUSTIFICATION_MAX_LENGTH)
    status = models.CharField(
        _("status"), max_length=10, choices=EmergencyStatus.choices, default=EmergencyStatus.PENDING
    )
    use_standby = models.BooleanField(
        _("wake the cold standby"), default=False,
        help_text=_("The chair's call: may the emergency also use the pool's cold standby GPUs?"),
    )
    filed_by_name = models.CharField(_("filed by"), max_length=150)
    filed_at = models.DateTimeField(_("filed"), default=timezone.now)
    # The weekly review that takes the after-the-fact decision: the next one at filing time.
    review_cycle = models.ForeignKey(
        ReviewCycle, on_delete=models.PROTECT, null=True, blank=True, related_name="emergencies",
        verbose_name=_("reviewed at"),
    )
    plan = models.ForeignKey(
        AllocationPlan, on_delete=models.PROTECT, null=True, blank=True, related_name="+",
        verbose_name=_("placed by plan version"),
    )
    placed_at = models.DateTimeField(_("placed"), null=True, blank=True)
    standby_gpu_count = models.PositiveIntegerField(_("GPUs taken from the standby"), default=0)
    # An extension of a granted window (committee/services/extension.py): placed from where that window ends.
    extends = models.ForeignKey(
        GpuRequest, on_delete=models.PROTECT, null=True, blank=True, related_name="extensions",
        verbose_name=_("extends"),
    )
    posthoc_outcome = models.CharField(
        _("review's decision"), max_length=12, choices=PostHocOutcome.choices, blank=True
    )
    posthoc_note = bounded_text(_("review's note"), blank=True, max_length=limits.RATIONALE_MAX_LENGTH)
    posthoc_by_name = models.CharField(_("reviewed by"), max_length=150, blank=True)
    posthoc_at = models.DateTimeField(_("reviewed"), null=True, blank=True)

    class Meta:
        ordering = ["-filed_at", "-id"]
        verbose_name = _("emergency request")
        verbose_name_plural = _("emergency requests")
        constraints = [
            models.CheckConstraint(condition=~Q(justification=""), name="emergency_justification_required"),
            models.CheckConstraint(
                condition=~Q(status=EmergencyStatus.PLACED) | Q(plan__isnull=False, placed_at__isnull=False),
                name="emergency_placed_has_plan",
            ),
            models.CheckConstraint(
                condition=Q(posthoc_outcome="") | Q(posthoc_at__isnull=False), name="emergency_posthoc_has_time"
            ),
        ]
        indexes = [
            # The review page: the emergencies its week's review decides after the fact.
            models.Index(fields=["review_cycle", "filed_at"], name="emergency_review_idx"),
        ]

    def __str__(self) -> str:
        return f"emergency: {self.request.title}"


class EmergencyApproval(models.Model):
    """One committee member's approval or rejection of an emergency; names copied for the record."""

    emergency = models.ForeignKey(EmergencyRequest, on_delete=models.CASCADE, related_name="approvals")
    member = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+")
    member_name = models.CharField(_("member"), max_length=150)
    as_chair = models.BooleanField(_("as chair"), default=False)
    approve = models.BooleanField(_("approves"))
    note = bounded_text(_("note"), blank=True, max_length=limits.SCORE_NOTE_MAX_LENGTH)
    at = models.DateTimeField(_("at"), default=timezone.now)

    class Meta:
        ordering = ["at", "id"]
        verbose_name = _("emergency approval")
        verbose_name_plural = _("emergency approvals")
        constraints = [
            models.UniqueConstraint(fields=["emergency", "member"], name="emergency_one_verdict_per_member"),
        ]

    def __str__(self) -> str:
        return f"{self.member_name}: {'approve' if self.approve else 'reject'}"
