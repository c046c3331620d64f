"""Query parameters of the committee's list endpoints."""

from __future__ import annotations

import django_filters
from django import forms
from django.utils.translation import gettext_lazy as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field

from committee.models import CycleStatus, GpuRequest, RequestStatus, ReviewCycle


@extend_schema_field(OpenApiTypes.INT)
class IdFilter(django_filters.NumberFilter):
    """An id: a whole number (NumberFilter alone takes 3.5 and documents a number)."""

    field_class = forms.IntegerField


class RequestFilterSet(django_filters.FilterSet):
    week = django_filters.CharFilter(field_name="cycle__week", help_text=_("ISO week of the cycle, e.g. 2026-W49."))
    team = django_filters.CharFilter(field_name="team__slug", help_text=_("Team slug."))
    status = django_filters.ChoiceFilter(choices=RequestStatus.choices)
    pool = IdFilter(field_name="pool_id", help_text=_("GPU pool id."))

    class Meta:
        model = GpuRequest
        fields = ("week", "team", "status", "pool")


class CycleFilterSet(django_filters.FilterSet):
    status = django_filters.ChoiceFilter(choices=CycleStatus.choices)

    class Meta:
        model = ReviewCycle
        fields = ("status",)
