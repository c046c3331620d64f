"""The committee's work on a request: scores, decisions, the fair-share figures frozen at intake close."""

from __future__ import annotations

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from allocations.models import Team
from committee import limits, scoring
from committee.limits import bounded_text
from committee.models.cycles import Criterion, ReviewCycle
from committee.models.requests import Alternative, GpuRequest
from core.texts import text_render


class Score(models.Model):
    """One member's score of one request on one member-scored criterion; revised in place until finalized."""

    request = models.ForeignKey(GpuRequest, on_delete=models.CASCADE, related_name="scores")
    member = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="scores")
    member_name = models.CharField(_("member"), max_length=150)
    criterion = models.CharField(_("criterion"), max_length=20, choices=Criterion.choices)
    value = models.PositiveSmallIntegerField(
        _("score"), validators=[MinValueValidator(scoring.SCORE_MIN), MaxValueValidator(scoring.SCORE_MAX)]
    )
    note = bounded_text(_("note"), blank=True, max_length=limits.SCORE_NOTE_MAX_LENGTH)
    created_at = models.DateTimeField(_("scored"), auto_now_add=True)
    updated_at = models.DateTimeField(_("revised"), auto_now=True)

    class Meta:
        ordering = ["request", "criterion", "member_name"]
        verbose_name = _("score")
        verbose_name_plural = _("scores")
        constraints = [
            models.UniqueConstraint(
                fields=["member", "request", "criterion"], name="score_one_per_member_request_criterion"
            ),
            models.CheckConstraint(
                condition=Q(value__gte=scoring.SCORE_MIN) & Q(value__lte=scoring.SCORE_MAX), name="score_value_0_10"
            ),
            # A computed criterion (fairness) is never scored by a member. Which criteria members score is the one list
            # (committee.scoring.MEMBER_SCORED), which score_record, the only writer, checks: a criterion added to it
            # needs no migration.
            models.CheckConstraint(
                condition=~Q(criterion__in=scoring.COMPUTED), name="score_criterion_not_computed"
            ),
        ]
        # The review page reads a cycle's scores by request id: the foreign key's index serves it.

    def __str__(self) -> str:
        return f"{self.member_name}: {self.criterion} {self.value}"


class DecisionOutcome(models.TextChoices):
    GRANT = "grant", _("Grant")
    PARTIAL = "partial", _("Partial grant")
    ALTERNATIVE = "alternative", _("Grant the alternative")
    DEFER = "defer", _("Defer")
    REJECT = "reject", _("Reject")


# The outcomes that place windows: what the engine is given, what the preview shows, what "decided" GPU-hours
# count on every surface (committee.selectors.placement, reports.dashboards). GPUs × the request's duration,
# `granted_gpu_count` GPUs (a grant's equals the GPUs requested).
PLACING_OUTCOMES = (DecisionOutcome.GRANT, DecisionOutcome.PARTIAL, DecisionOutcome.ALTERNATIVE)


class Decision(models.Model):
    """The committee's decision on one request, with its rationale.

    Names, title and week are copied so the record reads the same after a user or request is gone.
    `priority_rank` and `weighted_total` are frozen when the cycle is finalized: the order in which
    the allocation engine places granted requests.
    """

    request = models.OneToOneField(GpuRequest, on_delete=models.PROTECT, related_name="decision")
    cycle = models.ForeignKey(ReviewCycle, on_delete=models.PROTECT, related_name="decisions")
    outcome = models.CharField(_("decision"), max_length=12, choices=DecisionOutcome.choices)
    requested_gpu_count = models.PositiveIntegerField(_("GPUs requested"))
    granted_gpu_count = models.PositiveIntegerField(_("GPUs granted"), null=True, blank=True)
    # The weeks of a run the grant covers (docs/multi-week-runs.md): its first weeks only, or None for the whole run
    # (`weeks_granted`); the weeks after the first are commitments (allocations.Commitment) once the first is placed.
    granted_weeks = models.PositiveSmallIntegerField(_("weeks granted"), null=True, blank=True)
    # "Grant the alternative": the request's cheaper variant, its words and GPU-hours copied so the
    # record reads the same if the team later edits or deletes the row. The GPUs granted are
    # ceil(alternative_gpu_hours / duration_hours), at most the GPUs requested (docs/alternatives.md).
    alternative = models.ForeignKey(
        Alternative, on_delete=models.SET_NULL, null=True, blank=True, related_name="+",
        verbose_name=_("alternative granted"),
    )
    alternative_description = models.CharField(_("alternative granted"), max_length=300, blank=True)
    alternative_gpu_hours = models.PositiveIntegerField(_("alternative's GPU-hours"), null=True, blank=True)
    rationale = bounded_text(_("rationale"), max_length=limits.RATIONALE_MAX_LENGTH)
    # A rationale Docket wrote (an emergency's approval or rejection) as a code with parameters (core.texts),
    # rendered in the reader's language; `rationale` keeps it as written then. Empty for one a person wrote.
    rationale_text = models.JSONField(_("rationale, as a code"), default=dict, blank=True)
    # A grant of a request below the score quorum: the exception to the rubric the chair stated
    # (committee.selectors.deciding.grant_refusal), shown in the week's record. Empty for every other decision.
    exception_reason = bounded_text(_("exception to the rubric"), max_length=limits.REASON_MAX_LENGTH, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    decided_by_name = models.CharField(_("decided by"), max_length=150)
    decided_at = models.DateTimeField(_("decided"), default=timezone.now)
    team_name = models.CharField(_("team"), max_length=100)
    request_title = models.CharField(_("request"), max_length=200)
    cycle_week = models.CharField(_("ISO week"), max_length=8)
    weighted_total = models.DecimalField(_("weighted total"), max_digits=5, decimal_places=2, null=True, blank=True)
    priority_rank = models.PositiveIntegerField(_("rank"), null=True, blank=True)

    class Meta:
        ordering = ["cycle", "priority_rank", "id"]
        verbose_name = _("decision")
        verbose_name_plural = _("decisions")
        constraints = [
            models.CheckConstraint(condition=~Q(rationale=""), name="decision_rationale_required"),
            models.CheckConstraint(
                condition=(
                    Q(outcome=DecisionOutcome.GRANT, granted_gpu_count=F("requested_gpu_count"))
                    | Q(
                        outcome=DecisionOutcome.PARTIAL,
                        granted_gpu_count__gt=0,
                        granted_gpu_count__lt=F("requested_gpu_count"),
                    )
                    | Q(
                        outcome=DecisionOutcome.ALTERNATIVE,
                        granted_gpu_count__gt=0,
                        granted_gpu_count__lte=F("requested_gpu_count"),
                    )
                    | Q(outcome__in=[DecisionOutcome.DEFER, DecisionOutcome.REJECT], granted_gpu_count__isnull=True)
                ),
                name="decision_granted_gpus_match_outcome",
            ),
            models.CheckConstraint(
                condition=(
                    Q(outcome=DecisionOutcome.ALTERNATIVE, alternative_gpu_hours__gt=0)
                    & ~Q(alternative_description="")
                )
                | (
                    ~Q(outcome=DecisionOutcome.ALTERNATIVE)
                    & Q(alternative_gpu_hours__isnull=True, alternative__isnull=True, alternative_description="")
                ),
                name="decision_alternative_only_when_granted",
            ),
            models.CheckConstraint(
                condition=Q(weighted_total__isnull=True) | Q(weighted_total__gte=0, weighted_total__lte=100),
                name="decision_total_0_100",
            ),
            models.UniqueConstraint(fields=["cycle", "priority_rank"], name="decision_unique_rank_per_cycle"),
            models.CheckConstraint(
                condition=Q(granted_weeks__isnull=True) | Q(granted_weeks__gt=0), name="decision_granted_weeks_positive"
            ),
        ]
        indexes = [
            # Publishing and the archive: a cycle's decisions in priority order.
            models.Index(fields=["cycle", "outcome", "priority_rank"], name="decision_cycle_outcome_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.request_title}: {self.get_outcome_display()}"

    @property
    def weeks_granted(self) -> int:
        """The weeks of the request's run this decision places: none for a deferral or a rejection, else the first
        `granted_weeks` or the whole run. Uses `self.request`."""
        if self.outcome not in PLACING_OUTCOMES:
            return 0
        return self.granted_weeks or self.request.run_weeks

    @property
    def rationale_display(self) -> str:
        """The rationale in the reader's language when Docket wrote it (core.texts); as written otherwise."""
        return text_render(self.rationale_text, fallback=self.rationale)


class FairShareSnapshot(models.Model):
    """A team's decayed GPU use and weight when the cycle's intake closed.

    The review ranks with these, so usage reported during the meeting does not move the ranking
    under the committee's feet, and a finalized week's fairness scores can be recomputed exactly.
    """

    cycle = models.ForeignKey(ReviewCycle, on_delete=models.CASCADE, related_name="fair_shares")
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="+")
    team_name = models.CharField(_("team"), max_length=100)
    weight = models.PositiveIntegerField(_("fair-share weight"))
    total_weight = models.PositiveIntegerField(_("sum of weights"))
    decayed_gpu_hours = models.DecimalField(_("decayed GPU-hours used"), max_digits=14, decimal_places=2)
    total_decayed_gpu_hours = models.DecimalField(_("all teams' decayed GPU-hours"), max_digits=14, decimal_places=2)
    # The team's department when intake closed (0, 0, 0: none, the team stood at the top level): its weight, the top
    # level's weights together, and its teams' decayed usage (committee.scoring.FairShare).
    department_weight = models.PositiveIntegerField(_("department's fair-share weight"), default=0)
    top_total_weight = models.PositiveIntegerField(_("sum of the top level's weights"), default=0)
    department_decayed_gpu_hours = models.DecimalField(
        _("department's decayed GPU-hours"), max_digits=14, decimal_places=2, default=0)
    as_of = models.DateTimeField(_("usage up to"))

    class Meta:
        ordering = ["cycle", "team_name"]
        verbose_name = _("fair-share snapshot")
        verbose_name_plural = _("fair-share snapshots")
        constraints = [
            models.UniqueConstraint(fields=["cycle", "team"], name="fairshare_unique_cycle_team"),
            models.CheckConstraint(
                condition=Q(weight__gt=0) & Q(total_weight__gte=F("weight")), name="fairshare_weight_within_total"
            ),
            models.CheckConstraint(
                condition=Q(decayed_gpu_hours__gte=0) & Q(total_decayed_gpu_hours__gte=F("decayed_gpu_hours")),
                name="fairshare_usage_within_total",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.team_name} in {self.cycle}"

    def share(self) -> scoring.FairShare:
        return scoring.FairShare(
            team_id=self.team_id,
            decayed_gpu_hours=float(self.decayed_gpu_hours),
            total_decayed_gpu_hours=float(self.total_decayed_gpu_hours),
            weight=self.weight,
            total_weight=self.total_weight,
            department_weight=self.department_weight,
            top_total_weight=self.top_total_weight,
            department_decayed_gpu_hours=float(self.department_decayed_gpu_hours),
        )
