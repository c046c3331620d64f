"""The buffer fund's forms. They parse input; `reports.executive.services` decides and re-checks everything."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from committee.forms import DATETIME_INPUT_FORMATS
from committee.models import EmergencyRequest
from core.datetimes import UTCFormDateTimeField
from core.forms import StrictDecimalField, ZonedDateTimeInput


def _amount(label: Any) -> StrictDecimalField:
    return StrictDecimalField(label=label, max_digits=14, decimal_places=2, min_value=Decimal("0.01"))


def _when(label: Any) -> UTCFormDateTimeField:
    return UTCFormDateTimeField(
        label=label, input_formats=DATETIME_INPUT_FORMATS, widget=ZonedDateTimeInput(),
        help_text=_("In the committee's time zone; it decides the quarter."),
    )


class BufferFundOpenForm(forms.Form):
    """Opening a fund asks nothing: its quarter is the page's, its currency the company's, and its buffer follows
    the departments' budgets and the policy. The form carries the service's refusals to the page."""


def _emergency_label(emergency: EmergencyRequest) -> str:
    return f"#{emergency.pk} {emergency.request.title}"


class BufferSpendForm(forms.Form):
    amount = _amount(_("Amount"))
    item = forms.CharField(label=_("What was bought"), max_length=200)
    spent_at = _when(_("Spent on"))
    reason = forms.CharField(label=_("Reason"), max_length=2000, widget=forms.Textarea(attrs={"rows": 2}))
    emergency = forms.ModelChoiceField(
        label=_("Emergency request it answered"), queryset=EmergencyRequest.objects.none(), required=False,
        empty_label=_("none"),
    )

    def __init__(self, *args: Any, emergencies: list[EmergencyRequest], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["emergency"]
        assert isinstance(field, forms.ModelChoiceField)
        field.queryset = EmergencyRequest.objects.filter(pk__in=[e.pk for e in emergencies]).select_related("request")
        field.label_from_instance = _emergency_label  # type: ignore[method-assign,assignment]


class DeferredPurchaseForm(forms.Form):
    amount = _amount(_("Amount"))
    item = forms.CharField(label=_("What was not bought"), max_length=200)
    deferred_at = _when(_("Deferred on"))
    reason = forms.CharField(label=_("Reason"), max_length=2000, widget=forms.Textarea(attrs={"rows": 2}))
