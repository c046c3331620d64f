"""The weekly cycle and the rubric version it is scored with."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from committee import limits, scoring
from committee.limits import bounded_text


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


def rubric_version_current_pk() -> int:
    """A new cycle pins the latest rubric version; in an empty database that is the charter's version 1.

    Version 1 is also written by a data migration; creating it here too keeps a flushed database
    (a transactional test, a restored dump without it) from failing to open a cycle.
    """
    latest = RubricVersion.objects.order_by("-number").values_list("pk", flat=True).first()
    if latest is not None:
        return latest
    version, _created = RubricVersion.objects.get_or_create(
        number=1,
        defaults={
            **{f"{c}_weight_pct": w for c, w in scoring.DEFAULT_WEIGHTS.items()},
            **{f"{c}_guidance": g for c, g in scoring.DEFAULT_GUIDANCE.items()},
            "reason": "The committee's charter.",
            "author_name": "Docket",
        },
    )
    return version.pk


class RubricVersion(models.Model):
    """One version of the published rubric. Versions are never edited: a change is a new version.

    The four criteria are fixed by the charter, so each has its own weight and guidance column and
    the database itself holds the rule that the weights are whole percents adding up to 100.
    """

    number = models.PositiveIntegerField(_("version"), unique=True)
    business_impact_weight_pct = models.PositiveSmallIntegerField(_("business impact weight %"))
    feasibility_weight_pct = models.PositiveSmallIntegerField(_("feasibility of alternatives weight %"))
    urgency_weight_pct = models.PositiveSmallIntegerField(_("time urgency weight %"))
    fairness_weight_pct = models.PositiveSmallIntegerField(_("fairness weight %"))
    business_impact_guidance = bounded_text(_("business impact guidance"), max_length=limits.GUIDANCE_MAX_LENGTH)
    feasibility_guidance = bounded_text(
        _("feasibility of alternatives guidance"), max_length=limits.GUIDANCE_MAX_LENGTH
    )
    urgency_guidance = bounded_text(_("time urgency guidance"), max_length=limits.GUIDANCE_MAX_LENGTH)
    fairness_guidance = bounded_text(_("fairness guidance"), max_length=limits.GUIDANCE_MAX_LENGTH)
    reason = bounded_text(_("reason for the change"), max_length=limits.REASON_MAX_LENGTH)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    author_name = models.CharField(_("changed by"), max_length=150)
    created_at = models.DateTimeField(_("changed"), default=timezone.now)

    class Meta:
        ordering = ["-number"]
        verbose_name = _("rubric version")
        verbose_name_plural = _("rubric versions")
        constraints = [
            models.CheckConstraint(condition=Q(number__gt=0), name="rubric_number_positive"),
            *[
                models.CheckConstraint(
                    condition=Q(**{f"{c}_weight_pct__gte": 0, f"{c}_weight_pct__lte": 100}),
                    name=f"rubric_{c}_weight_0_100",
                )
                for c in scoring.CRITERIA
            ],
            models.CheckConstraint(
                condition=Q(
                    business_impact_weight_pct=100
                    - F("feasibility_weight_pct")
                    - F("urgency_weight_pct")
                    - F("fairness_weight_pct")
                ),
                name="rubric_weights_sum_100",
                violation_error_message=_("The weights must add up to 100%."),
            ),
            models.CheckConstraint(condition=~Q(reason=""), name="rubric_reason_required"),
        ]

    def __str__(self) -> str:
        return f"v{self.number} ({self.weights_label})"

    def weights(self) -> dict[str, int]:
        return {c: getattr(self, f"{c}_weight_pct") for c in scoring.CRITERIA}

    def guidance(self) -> dict[str, str]:
        return {c: getattr(self, f"{c}_guidance") for c in scoring.CRITERIA}

    @property
    def weights_label(self) -> str:
        return "/".join(str(w) for w in self.weights().values())


class ReviewCycle(models.Model):
    """One week of the committee's cycle; `week` is the ISO week of the allocation, e.g. 2026-W49."""

    week = models.CharField(_("ISO week"), max_length=8, unique=True)
    starts_at = models.DateTimeField(_("week starts"))
    ends_at = models.DateTimeField(_("week ends"))
    intake_closes_at = models.DateTimeField(_("intake closes"))
    review_at = models.DateTimeField(_("review meeting"))
    status = models.CharField(_("status"), max_length=12, choices=CycleStatus.choices, default=CycleStatus.OPEN)
    rubric = models.ForeignKey(
        RubricVersion,
        on_delete=models.PROTECT,
        related_name="cycles",
        default=rubric_version_current_pk,
        verbose_name=_("rubric version"),
        help_text=_("Pinned when the cycle opens: a rubric change applies from the next cycle."),
    )
    intake_closed_at = models.DateTimeField(_("intake closed"), null=True, blank=True)
    finalized_at = models.DateTimeField(_("finalized"), null=True, blank=True)
    finalized_by_name = models.CharField(_("finalized by"), max_length=150, blank=True)

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
