"""The dashboards' filter: weeks, cluster, pool and team (only the teams the viewer may see)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from allocations.models import Cluster, GpuPool, Team
from committee import weeks
from core.forms import form_field
from reports.dashboards.selectors import MAX_WEEKS, DashboardFilter, DashboardScope, week_range

DEFAULT_WEEKS = 6


class PoolChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: GpuPool) -> str:
        return f"{obj.key} ({obj.gpu_model})"


def default_weeks(*, now: datetime) -> tuple[str, str]:
    """Four weeks back to next week: what was used, what runs now and what is being asked for."""
    last = weeks.next_week_label(now)
    first = weeks.week_label(weeks.parse_week(last) - timedelta(weeks=DEFAULT_WEEKS - 1))
    return first, last


class DashboardFilterForm(forms.Form):
    first_week = forms.RegexField(
        label=_("From week"), regex=weeks.WEEK_RE, required=False, widget=forms.TextInput(attrs={"type": "week"}),
        error_messages={"invalid": _("Write a week as 2026-W45.")},
    )
    last_week = forms.RegexField(
        label=_("To week"), regex=weeks.WEEK_RE, required=False, widget=forms.TextInput(attrs={"type": "week"}),
        error_messages={"invalid": _("Write a week as 2026-W45.")},
    )
    cluster = forms.ModelChoiceField(
        label=_("Cluster"), queryset=Cluster.objects.order_by("name"), to_field_name="slug", required=False,
        empty_label=_("All clusters"),
    )
    pool = PoolChoiceField(
        label=_("Pool"), queryset=GpuPool.objects.select_related("cluster").order_by("cluster__slug", "slug"),
        required=False, empty_label=_("All pools"),
    )
    team: forms.ModelChoiceField[Team] = forms.ModelChoiceField(
        label=_("Team"), queryset=None, to_field_name="slug", required=False
    )

    def __init__(self, *args: Any, scope: DashboardScope, now: datetime, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.now = now
        team = form_field(self, "team", forms.ModelChoiceField)
        team.queryset = Team.objects.filter(pk__in=scope.team_ids).order_by("name")
        team.empty_label = _("All teams") if scope.committee else _("All my teams")
        first, last = default_weeks(now=now)
        self.fields["first_week"].initial = first
        self.fields["last_week"].initial = last

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        assert data is not None, "Form.clean returns cleaned_data"
        first, last = default_weeks(now=self.now)
        first = data.get("first_week") or first
        last = data.get("last_week") or last
        try:
            data["weeks"] = week_range(first=first, last=last)
        except ValueError:
            raise forms.ValidationError(
                _("Choose a first week before the last, at most %(n)d weeks apart, as 2026-W45.") % {"n": MAX_WEEKS}
            ) from None
        cluster, pool = data.get("cluster"), data.get("pool")
        if cluster is not None and pool is not None and pool.cluster_id != cluster.pk:
            self.add_error("pool", _("This pool is not on the chosen cluster."))
        return data

    def filters(self) -> DashboardFilter:
        """The valid filter, or the default one (the last weeks, nothing else chosen) when the form is invalid."""
        if self.is_valid():
            data = self.cleaned_data
            return DashboardFilter(weeks=data["weeks"], cluster=data.get("cluster"), pool=data.get("pool"),
                                   team=data.get("team"))
        first, last = default_weeks(now=self.now)
        return DashboardFilter(weeks=week_range(first=first, last=last))
