"""Query parameters of the scheduler endpoints."""

from __future__ import annotations

from datetime import datetime

import django_filters
from django.core.validators import validate_slug
from django.db.models import QuerySet
from django.utils.translation import gettext_lazy as _

from allocations.models import AllocationWindow
from core.datetimes import UTCDateTimeFilter
from core.forms import StrictIntegerField
from core.isoweek import WEEK_PATTERN as WEEK_PATTERN  # re-exported for the committee's filters
from core.isoweek import validate_iso_week

WEEK_VALIDATOR = validate_iso_week


class ChangeSeqFilter(django_filters.NumberFilter):
    """A change sequence: digits 0-9 (NumberFilter alone reads "1E+5", "1_000" and 3.5)."""

    field_class = StrictIntegerField


class WindowFilterSet(django_filters.FilterSet):
    """Filters of the windows list.

    `cluster`, `week`, `since`, `as_of` and `ends_after` choose the snapshot and are applied
    by `selectors.window_snapshot`; `pool`, `team`, `department` and `active_at` narrow its windows here.
    """

    cluster = django_filters.CharFilter(method="_snapshot", required=True, help_text=_("Cluster slug (required)."))
    week = django_filters.CharFilter(
        method="_snapshot", validators=[WEEK_VALIDATOR], help_text=_("ISO week, e.g. 2026-W49.")
    )
    since = ChangeSeqFilter(
        method="_snapshot", min_value=0, help_text=_("Only changes after this change sequence (a previous `cursor`).")
    )
    as_of = ChangeSeqFilter(
        method="_snapshot", min_value=0, help_text=_("Read as of this change sequence (page links carry it).")
    )
    ends_after = UTCDateTimeFilter(
        method="_snapshot", help_text=_("Without `week`: windows ending after this time (default: now).")
    )
    pool = django_filters.CharFilter(field_name="pool__slug", validators=[validate_slug], help_text=_("Pool slug."))
    team = django_filters.CharFilter(field_name="team__slug", validators=[validate_slug], help_text=_("Team slug."))
    department = django_filters.CharFilter(
        field_name="team__department__slug", validators=[validate_slug],
        help_text=_("Department slug: the windows of its teams."),
    )
    active_at = UTCDateTimeFilter(
        method="_active_at", help_text=_("Windows holding their GPUs at this time: start ≤ t < end.")
    )

    class Meta:
        model = AllocationWindow
        fields: list[str] = []

    def _snapshot(self, queryset: QuerySet[AllocationWindow], name: str, value: object) -> QuerySet[AllocationWindow]:
        return queryset  # applied by selectors.window_snapshot

    def _active_at(
        self, queryset: QuerySet[AllocationWindow], name: str, value: datetime
    ) -> QuerySet[AllocationWindow]:
        return queryset.filter(start__lte=value, end__gt=value)
