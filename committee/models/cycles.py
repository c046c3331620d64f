"""The weekly cycle and the rubric's criteria.

The rubric a week is scored with (each criterion's weight and guidance) is not a row here: it is in the one store of
governed parameters, by week (committee.selectors.rubric_for_week).
"""

from __future__ import annotations

from django.db import models
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from committee import scoring


class CycleStatus(models.TextChoices):
    OPEN = "open", _("Open for intake")
    IN_REVIEW = "in_review", _("In review")
    FINALIZED = "finalized", _("Finalized")
    PUBLISHED = "published", _("Published")


class Criterion(models.TextChoices):
    """The charter's four criteria; fairness is computed, the others are scored by members."""

    BUSINESS_IMPACT = scoring.BUSINESS_IMPACT, _("Business impact")
    FEASIBILITY = scoring.FEASIBILITY, _("Feasibility of alternatives")
    URGENCY = scoring.URGENCY, _("Time urgency")
    FAIRNESS = scoring.FAIRNESS, _("Fairness")


def criterion_label(criterion: str) -> str:
    """A criterion's label in the reader's language; for a key the choices do not know, the key made readable."""
    if criterion in Criterion.values:
        return str(Criterion(criterion).label)
    return criterion.replace("_", " ").capitalize()


class ReviewCycle(models.Model):
    """One week of the committee's cycle; `week` is the ISO week of the allocation, e.g. 2026-W49."""

    week = models.CharField(_("ISO week"), max_length=8, unique=True)
    starts_at = models.DateTimeField(_("week starts"))
    ends_at = models.DateTimeField(_("week ends"))
    intake_closes_at = models.DateTimeField(_("intake closes"))
    review_at = models.DateTimeField(_("review meeting"))
    status = models.CharField(_("status"), max_length=12, choices=CycleStatus.choices, default=CycleStatus.OPEN)
    intake_closed_at = models.DateTimeField(_("intake closed"), null=True, blank=True)
    finalized_at = models.DateTimeField(_("finalized"), null=True, blank=True)
    finalized_by_name = models.CharField(_("finalized by"), max_length=150, blank=True)
    # Moves on every change of what ranks the week (a score, a recusal, a decision; services.cycle_ranking_changed),
    # in the transaction that makes it: the cached ranking (committee.selectors.ranking) is kept by this number.
    ranking_version = models.PositiveIntegerField(_("ranking version"), default=0, editable=False)

    class Meta:
        ordering = ["-starts_at"]
        verbose_name = _("review cycle")
        verbose_name_plural = _("review cycles")
        constraints = [
            models.CheckConstraint(condition=Q(week__regex=r"^\d{4}-W\d{2}$"), name="cycle_week_format"),
            models.CheckConstraint(condition=Q(ends_at__gt=F("starts_at")), name="cycle_ends_after_start"),
            models.CheckConstraint(
                condition=Q(review_at__gte=F("intake_closes_at")), name="cycle_review_after_intake_closes"
            ),
        ]

    def __str__(self) -> str:
        return self.week

    @property
    def hours(self) -> int:
        """Whole hours of the allocation week: 168, or 167/169 across a daylight-saving change."""
        return int((self.ends_at - self.starts_at).total_seconds()) // 3600

    @property
    def intake_open(self) -> bool:
        return self.status == CycleStatus.OPEN and timezone.now() < self.intake_closes_at
