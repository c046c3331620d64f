"""The committee's governance parameters as versions with an effective week: the score quorum and fair share.

Version 1 is the deployment's settings (DOCKET_SCORE_QUORUM, DOCKET_FAIRSHARE_HALF_LIFE_WEEKS,
DOCKET_FAIRSHARE_TRAILING_WEEKS): it has no row, so a deployment that never changes them reads its settings
as before. Each adopted change is a row, number 2 onwards, with the ISO week it takes effect from; a cycle
reads the version in force for its own week (committee.selectors.governance_for_week), so a version
effective from a future week never changes the weeks before it.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from committee import limits
from committee.limits import bounded_text

QUORUM_MAX = 50
HALF_LIFE_MAX_WEEKS = 520
TRAILING_MAX_WEEKS = 520


class GovernanceVersion(models.Model):
    number = models.PositiveIntegerField(_("version"), unique=True)
    effective_week = models.CharField(_("effective from week"), max_length=8, unique=True)
    # The effective week's Monday: versions are ordered and looked up by it (a week label sorts badly
    # across years with 53 weeks only by accident).
    effective_monday = models.DateField(_("effective from"), unique=True)
    score_quorum = models.PositiveSmallIntegerField(_("score quorum"))
    fairshare_half_life_weeks = models.FloatField(_("fair-share half-life (weeks)"))
    fairshare_trailing_weeks = models.PositiveSmallIntegerField(_("fair-share trailing window (weeks)"))
    reason = bounded_text(_("reason for the change"), max_length=limits.REASON_MAX_LENGTH)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    author_name = models.CharField(_("changed by"), max_length=150)
    created_at = models.DateTimeField(_("changed"), default=timezone.now)

    class Meta:
        ordering = ["-effective_monday"]
        verbose_name = _("governance version")
        verbose_name_plural = _("governance versions")
        constraints = [
            models.CheckConstraint(condition=Q(number__gt=1), name="governance_number_after_settings"),
            models.CheckConstraint(condition=Q(score_quorum__gte=1) & Q(score_quorum__lte=QUORUM_MAX),
                                   name="governance_quorum_1_50"),
            models.CheckConstraint(
                condition=Q(fairshare_half_life_weeks__gt=0) & Q(fairshare_half_life_weeks__lte=HALF_LIFE_MAX_WEEKS),
                name="governance_half_life_range",
            ),
            models.CheckConstraint(
                condition=Q(fairshare_trailing_weeks__gte=1) & Q(fairshare_trailing_weeks__lte=TRAILING_MAX_WEEKS),
                name="governance_trailing_range",
            ),
            models.CheckConstraint(condition=~Q(reason=""), name="governance_reason_required"),
        ]

    def __str__(self) -> str:
        return f"v{self.number} from {self.effective_week}"

    @classmethod
    def from_settings(cls) -> GovernanceVersion:
        """Version 1: the settings, unsaved."""
        return cls(
            number=1, effective_week="", score_quorum=settings.DOCKET_SCORE_QUORUM,
            fairshare_half_life_weeks=settings.DOCKET_FAIRSHARE_HALF_LIFE_WEEKS,
            fairshare_trailing_weeks=settings.DOCKET_FAIRSHARE_TRAILING_WEEKS,
            reason="", author_name="",
        )
