"""A team's GPU request and its evidence: usage report, impact forecast, alternatives, history."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import F, Q
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from allocations.models import GpuPool, Team
from committee import limits
from committee.limits import bounded_text
from committee.models.cycles import ReviewCycle
from core.texts import text_render


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
    # A run over several consecutive weeks (docs/multi-week-runs.md): this week's window ends at the week's end and
    # each following week the run keeps its GPUs (the same, or that week's of weekly_gpu_counts) from its first hour
    # to its last, held before that week's new requests (allocations.commitments). 1: this week only. At most the
    # policy's grants.max_weeks.
    run_weeks = models.PositiveSmallIntegerField(
        _("weeks"), default=1, validators=[MinValueValidator(1)],
        help_text=_("1 for this week only. A run over more weeks continues without a gap from the end of this "
                    "week to the end of its last week, with the same GPUs unless you give GPUs per week; its window "
                    "must reach the end of this week."),
    )
    # GPUs per week of a run (docs/multi-week-runs.md): empty for one shape (gpu_count in every week), else one
    # count a week of the run, the first equal to gpu_count, each from 1 to the pool's GPUs
    # (committee.selectors.run_weeks_problems). Each later week's commitment is placed with its week's count.
    weekly_gpu_counts = models.JSONField(
        _("GPUs per week"), default=list, blank=True,
        help_text=_("Only for a run whose GPUs change from week to week: one count a week, separated by commas, "
                    "the first this week's GPUs (e.g. 8, 8, 4). Empty: the same GPUs every week."),
    )
    baseline_gpu_hours = models.PositiveIntegerField(
        _("baseline plan (GPU-hours)"),
        validators=[MinValueValidator(1)],
        null=True,
        blank=True,
        help_text=_("GPU-hours the team's original plan needed, before any efficiency change it adopted."),
    )
    deadline = models.DateTimeField(_("deadline"), null=True, blank=True)
    slip_consequence = bounded_text(
        _("what slips if the deadline is missed"), blank=True, max_length=limits.SLIP_CONSEQUENCE_MAX_LENGTH
    )
    status = models.CharField(_("status"), max_length=10, choices=RequestStatus.choices, default=RequestStatus.DRAFT)
    # An out-of-cycle emergency request (committee/services/emergency.py): filed into the running
    # week, beside the team's weekly request for the same pool; its details are in `emergency`.
    is_emergency = models.BooleanField(_("emergency"), default=False)
    # A fast-lane request (committee/services/fastlane.py): filed into the running week beside the team's weekly
    # request for the same pool, granted on submission; refused, it goes to the next review as a normal request.
    is_fast_lane = models.BooleanField(_("fast lane"), default=False)
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
    # A deferred request the team carried into a later week's intake (request_carry): the draft it made
    # points back at it, and each page shows the other.
    # A run's extension by more weeks (committee.services.runs.run_extension_file): a continuing request of the week
    # right after the run's last week, its window that whole week, reviewed like any other; granted and placed, it
    # continues the run from Monday 00:00 and its later weeks are commitments. Its page and review row link back.
    extends_run = models.ForeignKey(
        "self", on_delete=models.PROTECT, null=True, blank=True, related_name="run_extensions",
        verbose_name=_("extends the run"),
    )
    carried_from = models.ForeignKey(
        "self", on_delete=models.SET_NULL, null=True, blank=True, related_name="carried_into",
        verbose_name=_("carried from"),
    )

    class Meta:
        ordering = ["cycle", "team__name", "id"]
        verbose_name = _("GPU request")
        verbose_name_plural = _("GPU requests")
        constraints = [
            models.CheckConstraint(condition=Q(gpu_count__gt=0), name="request_gpu_count_positive"),
            models.CheckConstraint(condition=Q(min_gpu_count__gt=0), name="request_min_gpu_count_positive"),
            models.CheckConstraint(condition=Q(min_gpu_count__lte=F("gpu_count")), name="request_min_not_above_count"),
            models.CheckConstraint(condition=Q(duration_hours__gt=0), name="request_duration_positive"),
            models.CheckConstraint(condition=Q(run_weeks__gt=0), name="request_run_weeks_positive"),
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
                condition=~Q(status=RequestStatus.WITHDRAWN) & Q(is_emergency=False) & Q(is_fast_lane=False),
                name="request_one_active_per_team_pool_cycle",
                violation_error_message=_("Your team already has an active request for this pool in this cycle."),
            ),
            # A deferred request is carried into a week once (request_carry).
            models.UniqueConstraint(
                fields=["carried_from", "cycle"], condition=Q(carried_from__isnull=False),
                name="request_carried_once_per_week",
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

    @property
    def run_gpu_counts(self) -> list[int]:
        """The GPUs asked in each week of the run, its first week first (one shape: gpu_count every week)."""
        if self.weekly_gpu_counts:
            return [int(count) for count in self.weekly_gpu_counts]
        return [self.gpu_count] * self.run_weeks

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
    notes = bounded_text(_("notes"), blank=True, max_length=limits.USAGE_NOTES_MAX_LENGTH)

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
    value_unit = models.CharField(
        _("unit"),
        max_length=40,
        # "% churn" is a percent sign, not a format directive:
        # xgettext:no-python-format
        help_text=_("e.g. USD/week, % churn, incidents avoided"),
    )
    confidence = models.CharField(_("confidence"), max_length=10, choices=Confidence.choices)
    narrative = bounded_text(_("narrative"), max_length=limits.NARRATIVE_MAX_LENGTH)

    class Meta:
        verbose_name = _("impact forecast")
        constraints = [
            models.CheckConstraint(condition=Q(estimated_value__gte=0), name="forecast_value_not_negative"),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()}: {self.estimated_value} {self.value_unit}"


class RequestPoolOption(models.Model):
    """Another pool the request may run on ("either pool"), with its conversion: the GPUs and hours on that pool's
    model. The engine places the request on whichever of its pools keeps strict priority and places the most
    (docs/engine.md, "Either pool"); `position` is the team's order of preference after the request's own pool."""

    request = models.ForeignKey(GpuRequest, on_delete=models.CASCADE, related_name="pool_options")
    position = models.PositiveSmallIntegerField(_("order"))
    pool = models.ForeignKey(GpuPool, on_delete=models.PROTECT, related_name="+", verbose_name=_("GPU pool"))
    gpu_count = models.PositiveIntegerField(_("GPUs there"), validators=[MinValueValidator(1)])
    duration_hours = models.PositiveIntegerField(_("hours there"), validators=[MinValueValidator(1)])

    class Meta:
        ordering = ["request", "position"]
        verbose_name = _("other pool")
        verbose_name_plural = _("other pools")
        constraints = [
            models.UniqueConstraint(fields=["request", "pool"], name="pool_option_pool_once"),
            models.UniqueConstraint(fields=["request", "position"], name="pool_option_position_once"),
            models.CheckConstraint(condition=Q(gpu_count__gt=0), name="pool_option_gpu_count_positive"),
            models.CheckConstraint(condition=Q(duration_hours__gt=0), name="pool_option_duration_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.pool.key}: {self.gpu_count} × {self.duration_hours} h"

    @property
    def min_gpu_count(self) -> int:
        """The request's minimum, converted as its count is (rounded up, between 1 and the GPUs there)."""
        request = self.request
        return max(1, min(self.gpu_count, -(-request.min_gpu_count * self.gpu_count // request.gpu_count)))


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

    @property
    def gpus_over_request_duration(self) -> int:
        """The GPUs a grant of this alternative places: its GPU-hours over the request's duration, rounded
        up, at most the GPUs asked (committee.services.review.alternative_gpus)."""
        return min(self.request.gpu_count, -(-self.gpu_hours // self.request.duration_hours))


# A request event's action is stored as a code in English (services write these); pages show it in the
# reader's language. An action missing here shows as stored.
REQUEST_EVENT_ACTIONS = {
    "created": pgettext_lazy("request event", "created"),
    "edited": pgettext_lazy("request event", "edited"),
    "submitted": pgettext_lazy("request event", "submitted"),
    "withdrawn": pgettext_lazy("request event", "withdrawn"),
    "awaiting lead": pgettext_lazy("request event", "asked the team's lead to submit"),
    "returned": pgettext_lazy("request event", "sent back by the team's lead"),
    "decided": pgettext_lazy("request event", "decided"),
    "published": pgettext_lazy("request event", "published"),
    "corrected": pgettext_lazy("request event", "corrected"),
    "appealed": pgettext_lazy("request event", "appealed"),
    "appeal amended": pgettext_lazy("request event", "appeal amended"),
    "appeal upheld": pgettext_lazy("request event", "appeal upheld"),
    "emergency": pgettext_lazy("request event", "emergency request filed"),
    "emergency approved": pgettext_lazy("request event", "emergency approved"),
    "emergency rejected": pgettext_lazy("request event", "emergency rejected"),
    "emergency reviewed": pgettext_lazy("request event", "emergency reviewed"),
    "released": pgettext_lazy("request event", "GPUs given back"),
    "run explained": pgettext_lazy("request event", "explained the run's use for its next week"),
    "run continued": pgettext_lazy("request event", "continued the run into its next week"),
    "run released": pgettext_lazy("request event", "released the run's next week"),
    "run extension": pgettext_lazy("request event", "asked to extend the run by more weeks"),
    "outcome reported": pgettext_lazy("request event", "reported the realized outcome"),
    "outcome corrected": pgettext_lazy("request event", "corrected the realized outcome"),
}


class RequestEvent(models.Model):
    """Append-only history of a request. Names are copied so the row reads the same after a user is gone."""

    request = models.ForeignKey(GpuRequest, on_delete=models.CASCADE, related_name="events")
    at = models.DateTimeField(default=timezone.now)
    actor_name = models.CharField(max_length=150)
    action = models.CharField(max_length=30)
    detail = models.TextField(blank=True)
    # A detail Docket wrote, as a code with parameters (core.texts) rendered in the reader's language; `detail`
    # keeps it as written then, and is what an older event shows.
    detail_text = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["at", "id"]
        indexes = [
            # The request page's history list.
            models.Index(fields=["request", "at"], name="requestevent_request_at_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.actor_name} {self.action}"

    @property
    def action_label(self) -> str:
        """The action in the reader's language."""
        return str(REQUEST_EVENT_ACTIONS.get(self.action, self.action))

    @property
    def detail_display(self) -> str:
        """The detail in the reader's language (core.texts); as written when it has no code."""
        return text_render(self.detail_text, fallback=self.detail)
