"""People and the weekly process: memberships, seats, review cycles and GPU requests."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from allocations.models import GpuPool, Team
from committee import scoring


class MembershipRole(models.TextChoices):
    MEMBER = "member", _("Member")
    LEAD = "lead", _("Lead")


class TeamMembership(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="team_memberships")
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(_("role"), max_length=10, choices=MembershipRole.choices, default=MembershipRole.MEMBER)

    class Meta:
        verbose_name = _("team membership")
        verbose_name_plural = _("team memberships")
        constraints = [models.UniqueConstraint(fields=["user", "team"], name="membership_unique_user_team")]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.get_role_display()})"


class SeatRole(models.TextChoices):
    CHAIR = "chair", _("Chair")
    PRODUCT_LEAD = "product_lead", _("Product lead")
    TECH_LEAD = "tech_lead", _("Tech lead")
    FINANCE = "finance", _("Finance")


class CommitteeSeatQuerySet(models.QuerySet["CommitteeSeat"]):
    def active(self, on: object = None) -> CommitteeSeatQuerySet:
        day = on or timezone.localdate()
        return self.filter(Q(active_from__lte=day) & (Q(active_to__isnull=True) | Q(active_to__gte=day)))


class CommitteeSeat(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="committee_seats")
    role = models.CharField(_("role"), max_length=20, choices=SeatRole.choices)
    active_from = models.DateField(_("active from"), default=timezone.localdate)
    active_to = models.DateField(_("active to"), null=True, blank=True)

    objects = CommitteeSeatQuerySet.as_manager()

    class Meta:
        ordering = ["role", "active_from"]
        verbose_name = _("committee seat")
        verbose_name_plural = _("committee seats")
        constraints = [
            models.CheckConstraint(
                condition=Q(active_to__isnull=True) | Q(active_to__gte=F("active_from")),
                name="seat_active_to_after_from",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_role_display()}: {self.user}"


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
    business_impact_guidance = models.TextField(_("business impact guidance"))
    feasibility_guidance = models.TextField(_("feasibility of alternatives guidance"))
    urgency_guidance = models.TextField(_("time urgency guidance"))
    fairness_guidance = models.TextField(_("fairness guidance"))
    reason = models.TextField(_("reason for the change"))
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
    def intake_open(self) -> bool:
        return self.status == CycleStatus.OPEN and timezone.now() < self.intake_closes_at


class AddHours(models.Func):
    """`datetime + n hours` in SQL, for the constraint that a request's window holds its duration."""

    output_field = models.DateTimeField()
    arity = 2

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        # Django stores SQLite datetimes as 'YYYY-MM-DD HH:MM:SS[.ffffff]', which sorts as text.
        template = "datetime(%(expressions)s || ' hours')"
        return self.as_sql(compiler, connection, template=template, arg_joiner=", '+' || ", **extra)

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        template = "(%(expressions)s))"
        return self.as_sql(compiler, connection, template=template, arg_joiner=" + make_interval(hours => ", **extra)


class RequestStatus(models.TextChoices):
    DRAFT = "draft", _("Draft")
    SUBMITTED = "submitted", _("Submitted")
    WITHDRAWN = "withdrawn", _("Withdrawn")
    DECIDED = "decided", _("Decided")


class GpuRequest(models.Model):
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="gpu_requests", verbose_name=_("team"))
    cycle = models.ForeignKey(ReviewCycle, on_delete=models.PROTECT, related_name="requests", verbose_name=_("cycle"))
    pool = models.ForeignKey(GpuPool, on_delete=models.PROTECT, related_name="gpu_requests", verbose_name=_("GPU pool"))
    title = models.CharField(_("title"), max_length=200)
    gpu_count = models.PositiveIntegerField(_("GPUs"), validators=[MinValueValidator(1)])
    min_gpu_count = models.PositiveIntegerField(
        _("minimum acceptable GPUs"),
        validators=[MinValueValidator(1)],
        help_text=_("The fewest GPUs the work can still run on."),
    )
    duration_hours = models.PositiveIntegerField(_("duration (hours)"), validators=[MinValueValidator(1)])
    earliest_start = models.DateTimeField(_("earliest start"))
    latest_end = models.DateTimeField(_("latest end"))
    preemptible_ok = models.BooleanField(
        _("preemptible is fine"), default=False, help_text=_("The job checkpoints and can be preempted.")
    )
    baseline_gpu_hours = models.PositiveIntegerField(
        _("baseline plan (GPU-hours)"),
        validators=[MinValueValidator(1)],
        null=True,
        blank=True,
        help_text=_("GPU-hours the team's original plan needed, before any efficiency change it adopted."),
    )
    deadline = models.DateTimeField(_("deadline"), null=True, blank=True)
    slip_consequence = models.TextField(_("what slips if the deadline is missed"), blank=True)
    status = models.CharField(_("status"), max_length=10, choices=RequestStatus.choices, default=RequestStatus.DRAFT)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, related_name="+", verbose_name=_("created by")
    )
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)
    submitted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("submitted by"),
    )
    submitted_at = models.DateTimeField(_("submitted"), null=True, blank=True)

    class Meta:
        ordering = ["cycle", "team__name", "id"]
        verbose_name = _("GPU request")
        verbose_name_plural = _("GPU requests")
        constraints = [
            models.CheckConstraint(condition=Q(gpu_count__gt=0), name="request_gpu_count_positive"),
            models.CheckConstraint(condition=Q(min_gpu_count__gt=0), name="request_min_gpu_count_positive"),
            models.CheckConstraint(condition=Q(min_gpu_count__lte=F("gpu_count")), name="request_min_not_above_count"),
            models.CheckConstraint(condition=Q(duration_hours__gt=0), name="request_duration_positive"),
            models.CheckConstraint(condition=Q(latest_end__gt=F("earliest_start")), name="request_end_after_start"),
            models.CheckConstraint(
                condition=Q(latest_end__gte=AddHours(F("earliest_start"), F("duration_hours"))),
                name="request_window_holds_duration",
            ),
            models.CheckConstraint(
                condition=Q(baseline_gpu_hours__isnull=True) | Q(baseline_gpu_hours__gt=0),
                name="request_baseline_positive",
            ),
            models.CheckConstraint(
                condition=Q(status__in=[RequestStatus.DRAFT, RequestStatus.WITHDRAWN])
                | Q(submitted_at__isnull=False),
                name="request_submitted_has_time",
            ),
            models.UniqueConstraint(
                fields=["team", "pool", "cycle"],
                condition=~Q(status=RequestStatus.WITHDRAWN),
                name="request_one_active_per_team_pool_cycle",
                violation_error_message=_("Your team already has an active request for this pool in this cycle."),
            ),
        ]
        indexes = [
            # The team portal: a team's requests, newest cycle first.
            models.Index(fields=["team", "cycle"], name="request_team_cycle_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.team} · {self.title} ({self.cycle})"

    @property
    def requested_gpu_hours(self) -> int:
        return self.gpu_count * self.duration_hours

    def clean(self) -> None:
        from django.core.exceptions import ValidationError

        errors: dict[str, list[str]] = {}
        if self.gpu_count and self.min_gpu_count and self.min_gpu_count > self.gpu_count:
            errors.setdefault("min_gpu_count", []).append(
                str(_("The minimum cannot be more than the GPUs requested."))
            )
        if self.pool_id and self.gpu_count and self.gpu_count > self.pool.gpu_count:
            errors.setdefault("gpu_count", []).append(
                str(
                    _("The pool %(pool)s has only %(count)d GPUs.")
                    % {"pool": self.pool.slug, "count": self.pool.gpu_count}
                )
            )
        if self.earliest_start and self.latest_end:
            if self.latest_end <= self.earliest_start:
                errors.setdefault("latest_end", []).append(str(_("The latest end must be after the earliest start.")))
            elif self.duration_hours:
                span_hours = (self.latest_end - self.earliest_start).total_seconds() / 3600
                if span_hours < self.duration_hours:
                    errors.setdefault("duration_hours", []).append(
                        str(
                            _("From earliest start to latest end there are %(span)g hours, fewer than %(hours)d.")
                            % {"span": round(span_hours, 1), "hours": self.duration_hours}
                        )
                    )
        if errors:
            raise ValidationError(errors)


class UsageReport(models.Model):
    """The team's own account of last week's GPU use, filed with the request."""

    request = models.OneToOneField(GpuRequest, on_delete=models.CASCADE, related_name="usage_report")
    gpu_hours_granted = models.DecimalField(
        _("GPU-hours granted last week"), max_digits=10, decimal_places=1, validators=[MinValueValidator(0)]
    )
    gpu_hours_used = models.DecimalField(
        _("GPU-hours used last week"), max_digits=10, decimal_places=1, validators=[MinValueValidator(0)]
    )
    mean_utilization_pct = models.DecimalField(
        _("mean utilization %"),
        max_digits=5,
        decimal_places=1,
        validators=[MinValueValidator(0), MaxValueValidator(100)],
    )
    notes = models.TextField(_("notes"), blank=True)

    class Meta:
        verbose_name = _("usage report")
        constraints = [
            models.CheckConstraint(condition=Q(gpu_hours_granted__gte=0), name="usage_granted_not_negative"),
            models.CheckConstraint(condition=Q(gpu_hours_used__gte=0), name="usage_used_not_negative"),
            models.CheckConstraint(
                condition=Q(mean_utilization_pct__gte=0) & Q(mean_utilization_pct__lte=100),
                name="usage_utilization_0_100",
            ),
        ]

    def __str__(self) -> str:
        return f"usage for {self.request_id}"


class ImpactKind(models.TextChoices):
    REVENUE = "revenue", _("Revenue")
    RETENTION = "retention", _("Retention")
    RISK_REDUCTION = "risk_reduction", _("Risk reduction")
    OTHER = "other", _("Other")


class Confidence(models.TextChoices):
    LOW = "low", _("Low")
    MEDIUM = "medium", _("Medium")
    HIGH = "high", _("High")


class ImpactForecast(models.Model):
    request = models.OneToOneField(GpuRequest, on_delete=models.CASCADE, related_name="impact_forecast")
    kind = models.CharField(_("kind of impact"), max_length=20, choices=ImpactKind.choices)
    estimated_value = models.DecimalField(
        _("estimated value"), max_digits=14, decimal_places=2, validators=[MinValueValidator(0)]
    )
    value_unit = models.CharField(_("unit"), max_length=40, help_text=_("e.g. USD/week, % churn, incidents avoided"))
    confidence = models.CharField(_("confidence"), max_length=10, choices=Confidence.choices)
    narrative = models.TextField(_("narrative"))

    class Meta:
        verbose_name = _("impact forecast")
        constraints = [
            models.CheckConstraint(condition=Q(estimated_value__gte=0), name="forecast_value_not_negative"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()}: {self.estimated_value} {self.value_unit}"


class Alternative(models.Model):
    """A cheaper way to do the work (distilled model, mixed precision, smaller batch…)."""

    request = models.ForeignKey(GpuRequest, on_delete=models.CASCADE, related_name="alternatives")
    description = models.CharField(_("description"), max_length=300)
    gpu_hours = models.PositiveIntegerField(_("GPU-hours it would need"), validators=[MinValueValidator(1)])
    quality_change = models.CharField(_("expected quality change"), max_length=100, blank=True)
    cost_estimate = models.DecimalField(
        _("cost estimate"), max_digits=12, decimal_places=2, null=True, blank=True, validators=[MinValueValidator(0)]
    )
    feasible = models.BooleanField(_("feasible for us"), default=False)

    class Meta:
        ordering = ["id"]
        verbose_name = _("alternative")
        verbose_name_plural = _("alternatives")
        constraints = [
            models.CheckConstraint(condition=Q(gpu_hours__gt=0), name="alternative_gpu_hours_positive"),
            models.CheckConstraint(
                condition=Q(cost_estimate__isnull=True) | Q(cost_estimate__gte=0), name="alternative_cost_not_negative"
            ),
        ]

    def __str__(self) -> str:
        return self.description


class RequestEvent(models.Model):
    """Append-only history of a request. Names are copied so the row reads the same after a user is gone."""

    request = models.ForeignKey(GpuRequest, on_delete=models.CASCADE, related_name="events")
    at = models.DateTimeField(default=timezone.now)
    actor_name = models.CharField(max_length=150)
    action = models.CharField(max_length=30)
    detail = models.TextField(blank=True)

    class Meta:
        ordering = ["at", "id"]
        indexes = [
            # The request page's history list.
            models.Index(fields=["request", "at"], name="requestevent_request_at_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.actor_name} {self.action}"


class Score(models.Model):
    """One member's score of one request on one member-scored criterion; revised in place until finalized."""

    request = models.ForeignKey(GpuRequest, on_delete=models.CASCADE, related_name="scores")
    member = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="scores")
    member_name = models.CharField(_("member"), max_length=150)
    criterion = models.CharField(_("criterion"), max_length=20, choices=Criterion.choices)
    value = models.PositiveSmallIntegerField(
        _("score"), validators=[MinValueValidator(scoring.SCORE_MIN), MaxValueValidator(scoring.SCORE_MAX)]
    )
    note = models.TextField(_("note"), blank=True)
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
            models.CheckConstraint(
                condition=Q(criterion__in=scoring.MEMBER_SCORED), name="score_criterion_member_scored"
            ),
        ]
        # The review page reads a cycle's scores by request id: the foreign key's index serves it.

    def __str__(self) -> str:
        return f"{self.member_name}: {self.criterion} {self.value}"


class DecisionOutcome(models.TextChoices):
    GRANT = "grant", _("Grant")
    PARTIAL = "partial", _("Partial grant")
    DEFER = "defer", _("Defer")
    REJECT = "reject", _("Reject")


class Decision(models.Model):
    """The committee's decision on one request, with its rationale.

    Names, title and week are copied so the record reads the same after a user or request is gone.
    `priority_rank` and `weighted_total` are frozen when the cycle is finalized: the order in which
    the allocation engine places granted requests.
    """

    request = models.OneToOneField(GpuRequest, on_delete=models.PROTECT, related_name="decision")
    cycle = models.ForeignKey(ReviewCycle, on_delete=models.PROTECT, related_name="decisions")
    outcome = models.CharField(_("decision"), max_length=10, choices=DecisionOutcome.choices)
    requested_gpu_count = models.PositiveIntegerField(_("GPUs requested"))
    granted_gpu_count = models.PositiveIntegerField(_("GPUs granted"), null=True, blank=True)
    rationale = models.TextField(_("rationale"))
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
                    | Q(outcome__in=[DecisionOutcome.DEFER, DecisionOutcome.REJECT], granted_gpu_count__isnull=True)
                ),
                name="decision_granted_gpus_match_outcome",
            ),
            models.CheckConstraint(
                condition=Q(weighted_total__isnull=True) | Q(weighted_total__gte=0, weighted_total__lte=100),
                name="decision_total_0_100",
            ),
            models.UniqueConstraint(fields=["cycle", "priority_rank"], name="decision_unique_rank_per_cycle"),
        ]
        indexes = [
            # Publishing and the archive: a cycle's decisions in priority order.
            models.Index(fields=["cycle", "outcome", "priority_rank"], name="decision_cycle_outcome_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.request_title}: {self.get_outcome_display()}"


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
        )


class PersonalToken(models.Model):
    """A person's API token for scripts. Only a SHA-256 of the token is stored; it is shown once."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="personal_tokens")
    name = models.CharField(_("name"), max_length=100)
    # Unique, hence indexed: every token request looks the hash up.
    token_hash = models.CharField(_("token hash"), max_length=64, unique=True)
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    last_used_at = models.DateTimeField(_("last used"), null=True, blank=True)

    class Meta:
        ordering = ["user", "name"]
        verbose_name = _("personal token")
        verbose_name_plural = _("personal tokens")
        constraints = [
            models.UniqueConstraint(fields=["user", "name"], name="personaltoken_unique_name_per_user"),
            models.CheckConstraint(condition=~Q(name=""), name="personaltoken_name_required"),
        ]

    def __str__(self) -> str:
        return f"{self.user}: {self.name}"


# --- The clock's side: the outbox and notifications ----------------------------------------------


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


class NotificationKind(models.TextChoices):
    INTAKE_CLOSING = "intake_closing", _("Intake closes soon and my team has not submitted a request")
    REQUEST_SUBMITTED = "request_submitted", _("A request of my team was submitted")
    DECISION_PUBLISHED = "decision_published", _("The decisions on my team's requests are published")
    INTAKE_CLOSED = "intake_closed", _("Intake closed: requests wait for the committee's scores")
    REVIEW_COMING = "review_coming", _("The weekly review is coming up")


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
