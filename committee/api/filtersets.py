"""Query parameters of the committee's list endpoints."""

from __future__ import annotations

from typing import Any

import django_filters
from django import forms
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema_field

from allocations.api.filtersets import WEEK_PATTERN, WEEK_VALIDATOR
from committee.models import CycleStatus, GpuRequest, RequestStatus, ReviewCycle
from core.forms import StrictIntegerField

MAX_ID = 2**63 - 1  # ids are 64-bit; a larger number is refused (400) rather than overflow the database (500)


class IdField(StrictIntegerField):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, min_value=1, max_value=MAX_ID, **kwargs)


@extend_schema_field({"type": "integer", "minimum": 1, "maximum": MAX_ID})
class IdFilter(django_filters.NumberFilter):
    """An id: a whole number in the id range (NumberFilter alone takes 3.5 and documents a number)."""

    field_class = IdField


@extend_schema_field({"type": "string", "pattern": r"^[-a-zA-Z0-9_]+$"})
class SlugFilter(django_filters.CharFilter):
    """A slug; anything else is refused (400) rather than matching nothing."""

    field_class = forms.SlugField


@extend_schema_field({"type": "string", "pattern": WEEK_PATTERN})
class WeekFilter(django_filters.CharFilter):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, validators=[WEEK_VALIDATOR], **kwargs)


class RequestFilterSet(django_filters.FilterSet):
    week = WeekFilter(field_name="cycle__week", help_text=_("ISO week of the cycle, e.g. 2026-W49."))
    team = SlugFilter(field_name="team__slug", help_text=_("Team slug."))
    department = SlugFilter(field_name="team__department__slug",
                            help_text=_("Department slug: the requests of its teams."))
    status = django_filters.ChoiceFilter(choices=RequestStatus.choices)
    pool = IdFilter(field_name="pool_id", help_text=_("GPU pool id."))

    class Meta:
        model = GpuRequest
        fields = ("week", "team", "department", "status", "pool")


class CycleFilterSet(django_filters.FilterSet):
    status = django_filters.ChoiceFilter(choices=CycleStatus.choices)

    class Meta:
        model = ReviewCycle
        fields = ("status",)
