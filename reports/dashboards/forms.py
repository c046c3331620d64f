"""The dashboards' filter: weeks, cluster, pool, department and team (only those of the teams the viewer may see)."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django import forms
from django.utils.translation import gettext_lazy as _

from allocations.forms import OrgFilterForm
from allocations.models import Cluster, Department, GpuPool, Team
from committee import weeks
from reports.dashboards import heatmap, tco
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


class DashboardFilterForm(OrgFilterForm):
    field_order = ("first_week", "last_week", "cluster", "pool", "department", "team")
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
    def __init__(self, *args: Any, scope: DashboardScope, now: datetime, **kwargs: Any) -> None:
        super().__init__(*args, teams=Team.objects.filter(pk__in=scope.team_ids),
                         departments=Department.objects.filter(pk__in=scope.department_ids),
                         all_teams_label=_("All teams") if scope.committee else _("All my teams"), **kwargs)
        self.now = now
        if not scope.department_ids:
            self.hide_department()
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
                                   team=data.get("team"), department=data.get("department"))
        first, last = default_weeks(now=self.now)
        return DashboardFilter(weeks=week_range(first=first, last=last))


class HeatmapSpanForm(forms.Form):
    """The span of the heatmap and the pools' costs: so many weeks ending with a week (default: 13 to last week)."""

    last_week = forms.RegexField(
        label=_("Last week"), regex=weeks.WEEK_RE, required=False, widget=forms.TextInput(attrs={"type": "week"}),
        error_messages={"invalid": _("Write a week as 2026-W45.")},
    )
    weeks = forms.IntegerField(
        label=_("Weeks"), min_value=1, max_value=heatmap.MAX_WEEKS, required=False,
        error_messages={"invalid": _("Give the weeks as a whole number.")},
    )

    def __init__(self, *args: Any, now: datetime, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.now = now
        self.fields["last_week"].initial = heatmap.default_last_week(now=now)
        self.fields["weeks"].initial = heatmap.DEFAULT_WEEKS

    def clean_last_week(self) -> str:
        value: str = self.cleaned_data.get("last_week") or heatmap.default_last_week(now=self.now)
        try:
            weeks.parse_week(value)
        except ValueError:
            raise forms.ValidationError(_("There is no week %(week)s.") % {"week": value}) from None
        if value > weeks.current_week_label(self.now):
            raise forms.ValidationError(_("Choose a week that has begun: no usage is measured in the future."))
        return value

    def span(self) -> heatmap.Span:
        """The chosen span (call after is_valid), or the default one of an unbound form."""
        data = self.cleaned_data if self.is_bound else {}
        return heatmap.span_of(last_week=data.get("last_week") or heatmap.default_last_week(now=self.now),
                               weeks_back=data.get("weeks") or heatmap.DEFAULT_WEEKS, now=self.now)


def _decimal(label: Any, *, minimum: str, maximum: str, places: int = 4, help_text: Any = "") -> forms.DecimalField:
    return forms.DecimalField(label=label, min_value=Decimal(minimum), max_value=Decimal(maximum),
                              decimal_places=places, max_digits=14, help_text=help_text)


OPTION_COUNT = 3


class TcoForm(forms.Form):
    """The buy-vs-wait calculator: the scenario, two hardware options and an optional third (reports.dashboards.tco)."""

    horizon_weeks = forms.IntegerField(label=_("Horizon (weeks)"), min_value=1, max_value=260)
    start_load_gpus = _decimal(_("Load now (A100-equivalent GPUs, busy around the clock)"), minimum="0.1",
                               maximum="100000", places=2)
    growth_pct = _decimal(_("Load growth over the horizon (%)"), minimum="-90", maximum="1000", places=1)
    energy_price_per_kwh = _decimal(_("Energy price per kWh"), minimum="0", maximum="100")
    pue = _decimal(_("PUE (facility power ÷ IT power, for cooling)"), minimum="1", maximum="5", places=2)
    queue_cost_per_gpu_hour = _decimal(_("Queue cost per waiting A100-hour of work"), minimum="0",
                                       maximum="100000", places=2)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for index in range(1, OPTION_COUNT + 1):
            required = index <= 2
            for name, field in self._option_fields().items():
                field.required = required
                self.fields[f"o{index}_{name}"] = field
        seed = tco.SEED_SCENARIO
        for name in ("horizon_weeks", "start_load_gpus", "growth_pct", "energy_price_per_kwh", "pue",
                     "queue_cost_per_gpu_hour"):
            self.fields[name].initial = getattr(seed, name)
        for index, option in enumerate(tco.SEED_OPTIONS, start=1):
            for name in self._option_fields():
                self.fields[f"o{index}_{name}"].initial = getattr(option, name)

    @staticmethod
    def _option_fields() -> dict[str, forms.Field]:
        return {
            "name": forms.CharField(label=_("Option"), max_length=60),
            "price": _decimal(_("Price per GPU"), minimum="0", maximum="10000000", places=2),
            "relative_performance": _decimal(_("Performance (A100 = 1)"), minimum="0.01", maximum="100", places=3),
            "watts": _decimal(_("Power per GPU (W)"), minimum="0", maximum="10000", places=1),
            "maintenance_per_year": _decimal(_("Maintenance per GPU per year"), minimum="0", maximum="10000000",
                                             places=2),
            "delivery_weeks": forms.IntegerField(label=_("Delivery delay (weeks)"), min_value=0, max_value=260),
        }

    def option_rows(self) -> list[list[forms.BoundField]]:
        return [[self[f"o{index}_{name}"] for name in self._option_fields()] for index in range(1, OPTION_COUNT + 1)]

    def scenario_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in ("horizon_weeks", "start_load_gpus", "growth_pct", "energy_price_per_kwh",
                                        "pue", "queue_cost_per_gpu_hour")]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        assert data is not None, "Form.clean returns cleaned_data"
        names = list(self._option_fields())
        third = [f"o{OPTION_COUNT}_{name}" for name in names]
        given = [name for name in third if data.get(name) not in (None, "")]
        if given and len(given) < len(third):
            for name in third:
                if data.get(name) in (None, "") and name not in self.errors:
                    self.add_error(name, _("Fill in every field of the third option, or none."))
        horizon = data.get("horizon_weeks")
        for index in range(1, OPTION_COUNT + 1):
            delay = data.get(f"o{index}_delivery_weeks")
            if horizon is not None and delay is not None and delay >= horizon:
                self.add_error(f"o{index}_delivery_weeks", _("The delivery must come within the horizon."))
        return data

    def scenario(self) -> tco.Scenario:
        data = self.cleaned_data if self.is_bound else {n: f.initial for n, f in self.fields.items()}
        return tco.Scenario(horizon_weeks=data["horizon_weeks"], start_load_gpus=data["start_load_gpus"],
                            growth_pct=data["growth_pct"], energy_price_per_kwh=data["energy_price_per_kwh"],
                            pue=data["pue"], queue_cost_per_gpu_hour=data["queue_cost_per_gpu_hour"])

    def options(self) -> list[tco.HardwareOption]:
        data = self.cleaned_data if self.is_bound else {n: f.initial for n, f in self.fields.items()}
        result = []
        for index in range(1, OPTION_COUNT + 1):
            if data.get(f"o{index}_name") in (None, ""):
                continue
            result.append(tco.HardwareOption(
                name=data[f"o{index}_name"], price=data[f"o{index}_price"],
                relative_performance=data[f"o{index}_relative_performance"], watts=data[f"o{index}_watts"],
                maintenance_per_year=data[f"o{index}_maintenance_per_year"],
                delivery_weeks=data[f"o{index}_delivery_weeks"],
            ))
        return result
