from __future__ import annotations

from typing import Any

from django import forms
from django.forms import formset_factory
from django.utils.translation import gettext_lazy as _

from committee import selectors
from committee.models import Alternative, GpuRequest, ImpactForecast, UsageReport
from committee.services import REQUEST_FIELDS


class DateTimeLocalInput(forms.DateTimeInput):
    input_type = "datetime-local"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(format="%Y-%m-%dT%H:%M", **kwargs)


DATETIME_INPUT_FORMATS = ["%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S"]


class GpuRequestForm(forms.ModelForm):
    class Meta:
        model = GpuRequest
        fields = REQUEST_FIELDS
        widgets = {
            "earliest_start": DateTimeLocalInput(),
            "latest_end": DateTimeLocalInput(),
            "deadline": DateTimeLocalInput(),
            "slip_consequence": forms.Textarea(attrs={"rows": 2}),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["pool"].queryset = selectors.pool_list()
        for name in ("earliest_start", "latest_end", "deadline"):
            self.fields[name].input_formats = DATETIME_INPUT_FORMATS
        self.fields["deadline"].help_text = _("When the result is needed; drives the urgency suggestion.")


class UsageReportForm(forms.ModelForm):
    prefix = "usage"

    class Meta:
        model = UsageReport
        fields = ("gpu_hours_granted", "gpu_hours_used", "mean_utilization_pct", "notes")
        widgets = {"notes": forms.Textarea(attrs={"rows": 2})}


class ImpactForecastForm(forms.ModelForm):
    prefix = "forecast"

    class Meta:
        model = ImpactForecast
        fields = ("kind", "estimated_value", "value_unit", "confidence", "narrative")
        widgets = {"narrative": forms.Textarea(attrs={"rows": 3})}


class AlternativeForm(forms.ModelForm):
    class Meta:
        model = Alternative
        fields = ("description", "gpu_hours", "quality_change", "cost_estimate", "feasible")


AlternativeFormSet = formset_factory(AlternativeForm, extra=0, can_delete=True, max_num=20, validate_max=True)


def alternatives_initial(gpu_request: GpuRequest | None) -> list[dict[str, Any]]:
    if gpu_request is None:
        return []
    return [
        {field: getattr(row, field) for field in AlternativeForm.Meta.fields} for row in gpu_request.alternatives.all()
    ]


class TeamChoiceForm(forms.Form):
    team = forms.ModelChoiceField(queryset=None, label=_("Team"))  # type: ignore[arg-type]

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["team"].queryset = selectors.team_list_for_user(user=user)  # type: ignore[attr-defined]
