from __future__ import annotations

from datetime import datetime
from typing import Any

from django import forms
from django.contrib.auth.models import User
from django.forms import formset_factory
from django.utils import formats, timezone
from django.utils.text import capfirst
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from allocations.models import Department, GpuPool, Team
from committee import limits, scoring, selectors, weeks
from committee.models import (
    Alternative,
    DecisionOutcome,
    GpuRequest,
    ImpactForecast,
    NotificationKind,
    ReviewCycle,
    UsageReport,
    criterion_label,
)
from committee.services import REQUEST_FIELDS
from core.datetimes import UTCFormDateTimeField
from core.forms import (
    StrictDecimalField,
    StrictIntegerField,
    ZonedDateTimeInput,
    form_field,
    strict_number_formfield,
)
from core.numbers import format_gpu_hours
from core.parsers import parse_whole_number
from governed.params import ELASTIC_SPAN_MAX_MINUTES

DATETIME_INPUT_FORMATS = ["%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S"]


class WeeklyGpuCountsField(forms.CharField):
    """A run's GPUs per week as typed: whole numbers separated by commas ("8, 8, 4"), or empty for one shape.
    The rules between them and the run (committee.selectors.weekly_gpu_counts_problems) are the services'."""

    # At most this many counts are read: a run spans a few weeks, a post of thousands builds no list.
    MAX_COUNTS = 52

    def __init__(self, **kwargs: Any) -> None:
        kwargs.pop("encoder", None)
        kwargs.pop("decoder", None)
        kwargs.setdefault("max_length", 400)
        super().__init__(**kwargs)

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, list | tuple):
            return ", ".join(str(count) for count in value)
        return value

    def to_python(self, value: Any) -> list[int]:  # type: ignore[override]
        text = str(super().to_python(value) or "").strip()
        if not text:
            return []
        parts = [part.strip() for part in text.split(",")]
        counts = [parse_whole_number(part, max_digits=6) for part in parts[: self.MAX_COUNTS + 1]]
        if len(parts) > self.MAX_COUNTS or any(count is None or count < 1 for count in counts):
            raise forms.ValidationError(
                _("Give each week's GPUs as a whole number from 1, separated by commas (e.g. 8, 8, 4)."),
                code="invalid",
            )
        return [count for count in counts if count is not None]


class GpuRequestForm(forms.ModelForm):
    class Meta:
        model = GpuRequest
        formfield_callback = strict_number_formfield  # numbers as the API writes them (core.numbers)
        fields = REQUEST_FIELDS
        widgets = {
            "earliest_start": ZonedDateTimeInput(),
            "latest_end": ZonedDateTimeInput(),
            "deadline": ZonedDateTimeInput(),
            "slip_consequence": forms.Textarea(attrs={"rows": 2}),
        }
        # A time the database cannot store (an offset past ±15:59, a year past 9999 in UTC) is a form error.
        field_classes: dict[str, type[forms.Field]] = {
            **dict.fromkeys(("earliest_start", "latest_end", "deadline"), UTCFormDateTimeField),
            "weekly_gpu_counts": WeeklyGpuCountsField,
        }

    def __init__(self, *args: Any, cycle: ReviewCycle | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        form_field(self, "pool", forms.ModelChoiceField).queryset = selectors.pool_list()
        zone = weeks.committee_zone().key
        for name in ("earliest_start", "latest_end", "deadline"):
            field = form_field(self, name, forms.DateTimeField)
            field.input_formats = DATETIME_INPUT_FORMATS
            field.label = _("%(label)s (%(zone)s, 24-hour)") % {"label": capfirst(field.label or ""), "zone": zone}
        self.fields["deadline"].help_text = _("When the result is needed; drives the urgency suggestion.")
        self.fields["run_weeks"].required = False  # left out: this week only
        if cycle is not None:
            self.fields["earliest_start"].help_text = _("Week %(week)s starts %(start)s.") % {
                "week": cycle.week, "start": _local_text(cycle.starts_at)}
            self.fields["latest_end"].help_text = _("Week %(week)s ends %(end)s.") % {
                "week": cycle.week, "end": _local_text(cycle.ends_at)}
            if not self.is_bound and self.instance.pk is None:
                # A new request starts from the whole week: the team narrows it.
                self.initial.setdefault("earliest_start", timezone.localtime(cycle.starts_at, weeks.committee_zone()))
                self.initial.setdefault("latest_end", timezone.localtime(cycle.ends_at, weeks.committee_zone()))

    def clean_run_weeks(self) -> int:
        weeks_asked = self.cleaned_data.get("run_weeks")
        return 1 if weeks_asked is None else int(weeks_asked)

    def partial_data(self) -> dict[str, Any]:
        """The fields that passed their own checks, for the rules that span fields (request_problems).

        Django runs a form's cross-field checks only on what is valid; the view checks the rules on
        this too, so a rule broken by good fields shows beside the errors of the bad ones.
        """
        return dict(getattr(self, "cleaned_data", {}))


def _local_text(moment: datetime) -> str:
    return formats.date_format(timezone.localtime(moment, weeks.committee_zone()), str(_("D j M Y, H:i T")))


class UsageReportForm(forms.ModelForm):
    prefix = "usage"

    class Meta:
        model = UsageReport
        formfield_callback = strict_number_formfield  # numbers as the API writes them (core.numbers)
        fields = ("gpu_hours_granted", "gpu_hours_used", "mean_utilization_pct", "notes")
        widgets = {"notes": forms.Textarea(attrs={"rows": 2})}


class ImpactForecastForm(forms.ModelForm):
    prefix = "forecast"

    class Meta:
        model = ImpactForecast
        formfield_callback = strict_number_formfield  # numbers as the API writes them (core.numbers)
        fields = ("kind", "estimated_value", "value_unit", "confidence", "narrative")
        widgets = {"narrative": forms.Textarea(attrs={"rows": 3})}


class AlternativeForm(forms.ModelForm):
    class Meta:
        model = Alternative
        formfield_callback = strict_number_formfield  # numbers as the API writes them (core.numbers)
        fields = ("description", "gpu_hours", "quality_change", "cost_estimate", "feasible")


# At most MAX_ALTERNATIVES kept; a post that claims thousands of rows builds no more than twice that.
AlternativeFormSet = formset_factory(
    AlternativeForm, extra=0, can_delete=True, max_num=limits.MAX_ALTERNATIVES, validate_max=True,
    absolute_max=2 * limits.MAX_ALTERNATIVES,
)


def alternatives_initial(gpu_request: GpuRequest | None) -> list[dict[str, Any]]:
    if gpu_request is None:
        return []
    return [
        {field: getattr(row, field) for field in AlternativeForm.Meta.fields} for row in gpu_request.alternatives.all()
    ]


class PoolOptionForm(forms.Form):
    """Another pool the request could run on ("either pool"), with the GPUs and hours it needs there; left blank,
    they take the conversion offered from the pools' relative performance (the hint beside the form)."""

    pool = forms.ModelChoiceField(queryset=GpuPool.objects.none(), required=False, label=_("Other GPU pool"),
                                  empty_label=_("(none)"))
    gpu_count = forms.IntegerField(required=False, min_value=1, max_value=100_000, label=_("GPUs there"))
    duration_hours = forms.IntegerField(required=False, min_value=1, max_value=100_000, label=_("Hours there"))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        form_field(self, "pool", forms.ModelChoiceField).queryset = selectors.pool_list()

    def option(self) -> dict[str, Any] | None:
        """The row as the service takes it, or None for a row that names no pool."""
        data = getattr(self, "cleaned_data", None) or {}
        if data.get("pool") is None:
            return None
        return {"pool": data["pool"], "gpu_count": data.get("gpu_count"), "duration_hours": data.get("duration_hours")}


# Every row shown at once (no script adds one): a row without a pool is left out.
PoolOptionFormSet = formset_factory(
    PoolOptionForm, extra=limits.MAX_POOL_OPTIONS, max_num=limits.MAX_POOL_OPTIONS, validate_max=True,
    absolute_max=2 * limits.MAX_POOL_OPTIONS,
)


def pool_options_initial(gpu_request: GpuRequest | None) -> list[dict[str, Any]]:
    if gpu_request is None:
        return []
    return [{"pool": row.pool, "gpu_count": row.gpu_count, "duration_hours": row.duration_hours}
            for row in gpu_request.pool_options.all()]


class TeamChoiceForm(forms.Form):
    team: forms.ModelChoiceField[Team] = forms.ModelChoiceField(queryset=None, label=_("Team"))

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        form_field(self, "team", forms.ModelChoiceField).queryset = selectors.team_list_for_user(user=user)


class UsagePrefillForm(forms.Form):
    """The team and pool whose measured usage pre-fills the request form (from the form itself or its address)."""

    team: forms.ModelChoiceField[Team] = forms.ModelChoiceField(queryset=None, label=_("Team"))
    pool: forms.ModelChoiceField[GpuPool] = forms.ModelChoiceField(
        queryset=None, label=_("GPU pool"), required=False
    )

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        form_field(self, "team", forms.ModelChoiceField).queryset = selectors.team_list_for_user(user=user)
        form_field(self, "pool", forms.ModelChoiceField).queryset = selectors.pool_list()


# --- The weekly review and the rubric --------------------------------------------------------


def alternatives_choices(form: forms.Form, gpu_request: GpuRequest | None) -> None:
    """The `alternative` field as a list of the request's own alternatives; the service still checks the id."""
    if gpu_request is None:
        return
    form.fields["alternative"].widget = forms.Select(
        choices=[("", "—")]
        + [
            (a.pk, _("%(description)s (%(gpu_hours)s GPU-hours)") % {"description": a.description,
                                                                     "gpu_hours": format_gpu_hours(a.gpu_hours)})
            for a in gpu_request.alternatives.all()
        ]
    )


class DecisionForm(forms.Form):
    outcome = forms.ChoiceField(label=_("Decision"), widget=forms.RadioSelect, choices=[])
    granted_gpu_count = StrictIntegerField(
        label=_("GPUs granted (partial)"), required=False, min_value=1,
        help_text=_("Only for a partial grant: from the request's minimum to one less than asked."),
    )
    alternative = StrictIntegerField(
        label=_("Alternative granted"), required=False, min_value=1,
        help_text=_("Only for a grant of the alternative: which of the request's alternatives."),
    )
    granted_weeks = StrictIntegerField(
        label=_("Weeks granted (a run)"), required=False, min_value=1,
        help_text=_("Only for a run over several weeks: its first weeks only; empty for the whole run."),
    )
    rationale = forms.CharField(
        label=_("Rationale"), widget=forms.Textarea(attrs={"rows": 3}), max_length=limits.RATIONALE_MAX_LENGTH,
        help_text=_("Required. The team reads it with the decision."),
    )
    exception = forms.CharField(
        label=_("Exception to the rubric (the chair)"), widget=forms.Textarea(attrs={"rows": 2}),
        max_length=limits.REASON_MAX_LENGTH, required=False,
        help_text=_("Only to grant a request that is not ranked (too few scores): why the chair grants it anyway. "
                    "The week's record shows it."),
    )

    def __init__(self, *args: Any, gpu_request: GpuRequest | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.gpu_request = gpu_request
        form_field(self, "outcome", forms.ChoiceField).choices = DecisionOutcome.choices
        alternatives_choices(self, gpu_request)

    def clean(self) -> dict[str, Any]:
        """The outcome's own needs, checked whether or not the rationale (or another field) failed: a partial
        grant's GPU count, a grant of the alternative's choice. The service checks them again."""
        data = super().clean() or {}
        outcome = data.get("outcome")
        count = data.get("granted_gpu_count")
        if outcome == DecisionOutcome.PARTIAL and "granted_gpu_count" not in self.errors:
            request = self.gpu_request
            if request is not None and (count is None or not request.min_gpu_count <= count < request.gpu_count):
                self.add_error("granted_gpu_count", _(
                    "A partial grant gives from %(min)d to %(max)d GPUs (the request's minimum to one less than asked)."
                ) % {"min": request.min_gpu_count, "max": request.gpu_count - 1})
            elif request is None and count is None:
                self.add_error("granted_gpu_count", _("A partial grant needs the number of GPUs granted."))
        if (outcome == DecisionOutcome.ALTERNATIVE and "alternative" in self.fields
                and "alternative" not in self.errors and data.get("alternative") is None):
            self.add_error("alternative", _("Choose which of the request's alternatives is granted."))
        return data


class WeightsForm(forms.Form):
    """A whole-percent weight for each criterion of the one list (committee.scoring.CRITERIA), adding up to 100."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        declared = dict(self.fields)
        self.fields = {
            **{c: StrictIntegerField(label=gettext("%(criterion)s %%") % {"criterion": criterion_label(c)},
                                     min_value=0, max_value=100) for c in scoring.CRITERIA},
            **declared,
        }

    def clean(self) -> dict[str, Any]:
        # The sum is checked as soon as every weight is good, whatever else failed (the reason, a guidance).
        cleaned = super().clean() or {}
        if all(cleaned.get(c) is not None for c in scoring.CRITERIA):
            total_error = scoring.weights_errors(self.weights()).get("__all__")
            if total_error:
                raise forms.ValidationError(total_error)
        return cleaned

    def weights(self) -> dict[str, int]:
        """The weights of a valid form (every weight is required)."""
        return {c: self.cleaned_data[c] for c in scoring.CRITERIA}

    def weight_fields(self) -> list[forms.BoundField]:
        return [self[c] for c in scoring.CRITERIA]


class RubricChangeForm(WeightsForm):
    """The rubric's weights and each criterion's guidance, and why they change."""

    reason = forms.CharField(
        label=_("Why the rubric changes"), widget=forms.Textarea(attrs={"rows": 3}),
        max_length=limits.REASON_MAX_LENGTH,
        help_text=_("Required; published with the new version."),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        reason = self.fields.pop("reason")
        for c in scoring.CRITERIA:
            self.fields[f"{c}_guidance"] = forms.CharField(
                label=gettext("%(criterion)s guidance") % {"criterion": criterion_label(c)},
                widget=forms.Textarea(attrs={"rows": 2}), max_length=limits.GUIDANCE_MAX_LENGTH,
            )
        self.fields["reason"] = reason

    def guidance_fields(self) -> list[forms.BoundField]:
        return [self[f"{c}_guidance"] for c in scoring.CRITERIA]

    def guidance(self) -> dict[str, str]:
        return {c: self.cleaned_data[f"{c}_guidance"] for c in scoring.CRITERIA}


class NotificationPreferencesForm(forms.Form):
    """The kinds of notification a person receives in their daily digest; unticked ones are opted out of."""

    receive = forms.MultipleChoiceField(
        label=_("Tell me in my daily digest when"), required=False, widget=forms.CheckboxSelectMultiple
    )

    def __init__(self, *args: Any, kinds: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        form_field(self, "receive", forms.MultipleChoiceField).choices = [
            (kind, NotificationKind(kind).label) for kind in kinds
        ]


class CorrectionForm(DecisionForm):
    """The chair's correction of a decision after finalize: the new decision and why it changes."""

    reason = forms.CharField(
        label=_("Reason for the correction"), widget=forms.Textarea(attrs={"rows": 2}),
        max_length=limits.REASON_MAX_LENGTH, required=False,
        help_text=_("Required. It goes into the archive's record of the week and to the team."),
    )



class AppealForm(forms.Form):
    statement = forms.CharField(
        label=_("Your statement"), widget=forms.Textarea(attrs={"rows": 4}), max_length=limits.STATEMENT_MAX_LENGTH,
        required=False,
        help_text=_("What the committee should reconsider, and why. It goes into the archive with the answer."),
    )


class AppealDecisionForm(forms.Form):
    """A committee member's answer to an appeal: uphold the decision, or amend it (a correction)."""

    decision = forms.ChoiceField(
        label=_("Answer"), widget=forms.RadioSelect,
        choices=[("uphold", _("Uphold the decision")), ("amend", _("Amend the decision"))],
    )
    reason = forms.CharField(
        label=_("Reason"), widget=forms.Textarea(attrs={"rows": 2}), max_length=limits.REASON_MAX_LENGTH,
        required=False, help_text=_("Required. The team reads it; the archive keeps it."),
    )
    outcome = forms.ChoiceField(label=_("New decision (amend)"), widget=forms.RadioSelect, choices=[], required=False)
    granted_gpu_count = StrictIntegerField(label=_("GPUs granted (partial)"), required=False, min_value=1)
    alternative = StrictIntegerField(
        label=_("Alternative granted"), required=False, min_value=1,
        help_text=_("Only for a grant of the alternative: which of the request's alternatives."),
    )
    rationale = forms.CharField(
        label=_("New rationale (amend)"), widget=forms.Textarea(attrs={"rows": 2}),
        max_length=limits.RATIONALE_MAX_LENGTH, required=False,
    )
    exception = forms.CharField(
        label=_("Exception to the rubric (the chair)"), widget=forms.Textarea(attrs={"rows": 2}),
        max_length=limits.REASON_MAX_LENGTH, required=False,
        help_text=_("Only to grant a request that is not ranked (too few scores): why the chair grants it anyway. "
                    "The week's record shows it."),
    )

    def __init__(self, *args: Any, gpu_request: GpuRequest | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        form_field(self, "outcome", forms.ChoiceField).choices = DecisionOutcome.choices
        alternatives_choices(self, gpu_request)


# --- Emergency requests ------------------------------------------------------------------------


class _TeamAndPoolChoices(forms.Form):
    """A request between reviews (an emergency, the fast lane): the user's teams (the one, chosen already) and every
    pool to choose from."""

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        teams = selectors.team_list_for_user(user=user)
        form_field(self, "team", forms.ModelChoiceField).queryset = teams
        if len(teams) == 1:
            self.fields["team"].initial = teams[0].pk
        form_field(self, "pool", forms.ModelChoiceField).queryset = GpuPool.objects.select_related("cluster")


class EmergencyRequestForm(_TeamAndPoolChoices):
    """An out-of-cycle emergency request, filed by a team member into the running week."""

    team: forms.ModelChoiceField[Team] = forms.ModelChoiceField(queryset=None, label=_("Team"))
    pool: forms.ModelChoiceField[GpuPool] = forms.ModelChoiceField(queryset=None, label=_("GPU pool"))
    title = forms.CharField(label=_("What needs the GPUs"), max_length=200)
    gpu_count = StrictIntegerField(label=_("GPUs"), min_value=1)
    min_gpu_count = StrictIntegerField(
        label=_("Fewest GPUs that still help"), min_value=1, required=False,
        help_text=_("Leave empty when only the full count helps."),
    )
    duration_hours = StrictIntegerField(label=_("Hours, from now"), min_value=1)
    justification = forms.CharField(
        label=_("Why it cannot wait for the weekly review"), widget=forms.Textarea(attrs={"rows": 4}),
        max_length=limits.JUSTIFICATION_MAX_LENGTH,
        help_text=_("The chair and one other committee member read it before they approve."),
    )



class FastLaneRequestForm(_TeamAndPoolChoices):
    """A small request of the running week, granted on submission in the fast lane or sent to the weekly review."""

    team: forms.ModelChoiceField[Team] = forms.ModelChoiceField(queryset=None, label=_("Team"))
    pool: forms.ModelChoiceField[GpuPool] = forms.ModelChoiceField(queryset=None, label=_("GPU pool"))
    title = forms.CharField(label=_("What needs the GPUs"), max_length=200)
    gpu_count = StrictIntegerField(label=_("GPUs"), min_value=1)
    duration_hours = StrictIntegerField(
        label=_("Hours, from now"), min_value=1,
        help_text=_("It must end by the end of this week (Sunday 24:00 in the committee's zone)."),
    )
    justification = forms.CharField(
        label=_("What it is for (optional)"), required=False, widget=forms.Textarea(attrs={"rows": 3}),
        max_length=limits.JUSTIFICATION_MAX_LENGTH,
    )



class FastLaneRevokeForm(forms.Form):
    reason = forms.CharField(
        label=_("Why the review revokes it"), widget=forms.Textarea(attrs={"rows": 2}),
        max_length=limits.RATIONALE_MAX_LENGTH, help_text=_("The team reads it."),
    )


class EmergencyDecisionForm(forms.Form):
    verdict = forms.ChoiceField(
        label=_("Verdict"), widget=forms.RadioSelect,
        choices=[("approve", _("Approve")), ("reject", _("Reject"))],
    )
    use_standby = forms.BooleanField(
        label=_("Wake the cold standby for it too (chair)"), required=False,
    )
    note = forms.CharField(
        label=_("Note"), required=False, widget=forms.Textarea(attrs={"rows": 2}),
        max_length=limits.SCORE_NOTE_MAX_LENGTH, help_text=_("Required to reject: the team reads it."),
    )


class EmergencyReviewForm(forms.Form):
    outcome = forms.ChoiceField(
        label=_("The review's decision"), widget=forms.RadioSelect,
        choices=[("endorsed", _("Endorsed")), ("not_endorsed", _("Not endorsed"))],
    )
    note = forms.CharField(
        label=_("Note"), required=False, widget=forms.Textarea(attrs={"rows": 2}),
        max_length=limits.RATIONALE_MAX_LENGTH,
    )


class ElasticPolicyChangeForm(forms.Form):
    """The elastic policy's parameters (governed parameters "elastic.<name>", governed.params) and why they change."""

    idle_threshold_pct = StrictIntegerField(
        label=_("Idle below utilization (%)"), min_value=0, max_value=100,
        help_text=_("A granted window measured under this for the whole idle span is granted but idle."),
    )
    idle_span_minutes = StrictIntegerField(label=_("Idle span (minutes)"), min_value=1,
                                           max_value=ELASTIC_SPAN_MAX_MINUTES)
    offer_idle_to_preemptible = forms.BooleanField(
        label=_("Offer an idle window's unused GPUs to preemptible work"), required=False
    )
    promote_utilization_pct = StrictIntegerField(
        label=_("Promote the burst reserve above pool utilization (%)"), min_value=0, max_value=100
    )
    promote_queue_wait_minutes = StrictIntegerField(
        label=_("… and queue wait above (minutes)"), min_value=0, max_value=10_000
    )
    recent_span_minutes = StrictIntegerField(
        label=_("Recent span (minutes)"), min_value=1, max_value=ELASTIC_SPAN_MAX_MINUTES,
        help_text=_("Promotion and the night rule read the measurements of this many last minutes."),
    )
    night_start = forms.TimeField(label=_("Night starts"), widget=forms.TimeInput(attrs={"type": "time"},
                                                                                   format="%H:%M"))
    night_end = forms.TimeField(label=_("Night ends"), widget=forms.TimeInput(attrs={"type": "time"}, format="%H:%M"))
    night_utilization_pct = StrictIntegerField(
        label=_("At night, open standard windows below utilization (%)"), min_value=0, max_value=100
    )
    standby_wake_minutes = StrictIntegerField(
        label=_("Wake the cold standby within (minutes)"), min_value=1, max_value=ELASTIC_SPAN_MAX_MINUTES,
        help_text=_("How soon the cold standby must be placeable for an emergency; published to the agent next to the "
                    "scheduler."),
    )
    # Not required here: a preview needs none; saving without one is refused by the service, at this field.
    reason = forms.CharField(
        label=_("Why the policy changes"), widget=forms.Textarea(attrs={"rows": 3}), required=False,
        max_length=limits.REASON_MAX_LENGTH, help_text=_("Required to save; published with the new version."),
    )

    PARAMETERS = (
        "idle_threshold_pct", "idle_span_minutes", "offer_idle_to_preemptible", "promote_utilization_pct",
        "promote_queue_wait_minutes", "recent_span_minutes", "night_start", "night_end", "night_utilization_pct",
        "standby_wake_minutes",
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("night_start") is not None and data.get("night_start") == data.get("night_end"):
            self.add_error("night_end", _("The night must end at another time than it starts."))
        return data

    def parameters(self) -> dict[str, Any]:
        return {name: self.cleaned_data[name] for name in self.PARAMETERS}


class DepartmentBudgetForm(forms.Form):
    """A department's budget for a quarter and its carry-over rule (finance; committee.services.department_budget_set
    checks every rule)."""

    department = forms.ModelChoiceField(label=_("Department"), queryset=Department.objects.order_by("name"))
    quarter = forms.CharField(label=_("Quarter"), max_length=7, help_text=_("YYYY-Qn, for example 2027-Q1."))
    quarterly = StrictDecimalField(label=_("Budget for the quarter"), min_value=0, max_digits=15, decimal_places=2)
    carry_over_pct = StrictIntegerField(
        label=_("Carry-over (%)"), min_value=0, max_value=100, initial=0,
        help_text=_("What is left of this quarter's budget carries into the next, up to this share of it. 0: none."),
    )
    reason = forms.CharField(label=_("Why"), widget=forms.Textarea(attrs={"rows": 2}),
                             max_length=limits.REASON_MAX_LENGTH)


class ReleaseForm(forms.Form):
    """A team's lead gives GPUs of its window back (committee.services.window_release)."""

    gpu_count = StrictIntegerField(label=_("GPUs to give back"), min_value=1)
    effective_from = UTCFormDateTimeField(
        label=_("From"), required=False,
        help_text=_("A whole hour; empty: at once (from the next whole hour)."),
    )
    reason = forms.CharField(
        label=_("Why (optional)"), widget=forms.Textarea(attrs={"rows": 2}), required=False,
        max_length=limits.REASON_MAX_LENGTH,
        help_text=_("For the request's history and the week's record in the archive."),
    )


class WebhookForm(forms.Form):
    """Subscribe a receiver to a team's or a cluster's lifecycle events (services.webhook_subscription_create).

    `targets` are what the person may subscribe: ("team:<slug>", name) for the teams they lead, ("cluster:<slug>",
    name) for every cluster when they chair."""

    target = forms.ChoiceField(label=_("Events of"))
    url = forms.CharField(label=_("Receiver's address"), max_length=500,
                          help_text=_("https://… — Docket posts each event there, signed with the secret it shows "
                                      "you once."))

    def __init__(self, *args: Any, targets: list[tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        form_field(self, "target", forms.ChoiceField).choices = targets


class ExtensionForm(forms.Form):
    """A team member asks for more hours of a running window (committee.services.grant_extension_file)."""

    hours = StrictIntegerField(label=_("More hours"), min_value=1,
                               help_text=_("From where the window ends, within its week."))
    justification = forms.CharField(
        label=_("Why the run needs them"), widget=forms.Textarea(attrs={"rows": 2}),
        max_length=limits.JUSTIFICATION_MAX_LENGTH,
        help_text=_("The chair and one other member approve it from the burst reserve, as an emergency."),
    )
