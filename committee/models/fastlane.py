"""Fast-lane requests: a small request of the running week, granted on submission in the pool's fast-lane reserve.

The GPUs, hours and pool are those of the `GpuRequest` (of the running week, `is_fast_lane` set while it is in the
fast lane); this model holds what the fast lane adds: which check refused it and why, the plan version that placed
it, the next weekly review that lists it and the chair's revocation. See committee/services/fastlane.py and
docs/fast-lane.md.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from allocations.models import AllocationPlan
from committee import limits
from committee.limits import bounded_text
from committee.models.cycles import ReviewCycle
from committee.models.requests import GpuRequest
from core.texts import text_render


class FastLaneStatus(models.TextChoices):
    GRANTED = "granted", _("Granted in the fast lane")
    REFUSED = "refused", _("Refused the fast lane")
    REVOKED = "revoked", _("Revoked by the review")


class FastLaneCheck(models.TextChoices):
    """The checks, in the order they run; a refusal names the first that failed."""

    CEILING = "ceiling", _("GPU-hours within the ceiling")
    BUDGET = "budget", _("Department's budget")
    FAIR_SHARE = "fair_share", _("Team's fair share")
    ROOM = "room", _("Room in the fast-lane reserve")


class FastLaneRequest(models.Model):
    request = models.OneToOneField(GpuRequest, on_delete=models.PROTECT, related_name="fast_lane")
    status = models.CharField(_("status"), max_length=10, choices=FastLaneStatus.choices)
    filed_at = models.DateTimeField(_("filed"), default=timezone.now)
    filed_week = models.CharField(_("week filed in"), max_length=8)
    # A refusal: the check that failed and why, as a stored text (core.texts) and as written then.
    failed_check = models.CharField(_("failed check"), max_length=10, choices=FastLaneCheck.choices, blank=True)
    reason_text = models.JSONField(_("reason (stored text)"), default=dict, blank=True)
    reason = bounded_text(_("reason"), blank=True, max_length=limits.RATIONALE_MAX_LENGTH)
    plan = models.ForeignKey(
        AllocationPlan, on_delete=models.PROTECT, null=True, blank=True, related_name="+",
        verbose_name=_("placed by plan version"),
    )
    # The weekly review that lists the grant: the next one at filing time.
    review_cycle = models.ForeignKey(
        ReviewCycle, on_delete=models.PROTECT, null=True, blank=True, related_name="fast_lane_requests",
        verbose_name=_("listed at"),
    )
    revoked_at = models.DateTimeField(_("revoked"), null=True, blank=True)
    revoked_by_name = models.CharField(_("revoked by"), max_length=150, blank=True)
    revoke_reason = bounded_text(_("why revoked"), blank=True, max_length=limits.RATIONALE_MAX_LENGTH)

    class Meta:
        ordering = ["-filed_at", "-id"]
        verbose_name = _("fast-lane request")
        verbose_name_plural = _("fast-lane requests")
        constraints = [
            models.CheckConstraint(condition=~Q(status=FastLaneStatus.GRANTED) | Q(plan__isnull=False),
                                   name="fast_lane_granted_has_plan"),
            models.CheckConstraint(condition=~Q(status=FastLaneStatus.REFUSED) | ~Q(failed_check=""),
                                   name="fast_lane_refused_names_check"),
            models.CheckConstraint(condition=~Q(status=FastLaneStatus.REVOKED)
                                   | (Q(revoked_at__isnull=False) & ~Q(revoke_reason="")),
                                   name="fast_lane_revoked_has_reason"),
        ]
        indexes = [models.Index(fields=["review_cycle", "filed_at"], name="fast_lane_review_idx")]

    def __str__(self) -> str:
        return f"fast lane: {self.request.title}"

    @property
    def reason_display(self) -> str:
        """Why it was refused, in the reader's language (the stored text), else as written then."""
        return text_render(self.reason_text, fallback=self.reason)
