"""The executive summary by department, for the month's quarter (to date): spend against budget, the forecast value of
granted and of unplaced work, and the charges for capacity held but idle. How each number is computed:
docs/executive.md, "Departments".

Every number comes from where the pages that own it read it: budgets and charges from `committee.selectors.budgets`
(as `/budgets/` shows them), outcomes from `committee.selectors.request_outcome_map` (as the decision records say
them), the common unit from `reports.dashboards.selectors.billing_weights`.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.db.models import DecimalField, OuterRef, Subquery, Sum
from django.utils.translation import gettext as _

from allocations.models import AllocationWindow, Department, UsageRecord
from committee.models import PLACING_OUTCOMES, CycleStatus, GpuRequest, ImpactKind
from committee.quarters import quarter_bounds
from committee.selectors import request_outcome_map
from committee.selectors.budgets import DepartmentBudget, charge_terms, department_budgets, window_charge
from committee.selectors.outcomes import PlacementStatus
from reports.dashboards.selectors import billing_weights
from reports.executive.selectors import UnitTotal

NO_DEPARTMENT = ""  # the slug of the row of teams in no department


@dataclass(frozen=True)
class DepartmentQuarter:
    """One department's quarter to date (or that of the teams in none: `slug` "", no budget)."""

    name: str
    slug: str
    budget: DepartmentBudget | None  # None: teams in no department, or a department without a budget
    granted_value: tuple[UnitTotal, ...]  # revenue forecasts of grants the plans placed, per unit
    unplaced_value: tuple[UnitTotal, ...]  # revenue forecasts of grants no plan placed, per unit
    idle_charge: Decimal  # what the measured idle part of its ended windows charged
    idle_a100_gpu_hours: Decimal  # that idle part, in A100-equivalent GPU-hours
    unmeasured_windows: int  # ended windows nobody reported usage on: not counted as idle

    @property
    def has_figures(self) -> bool:
        return bool(self.budget is not None or self.granted_value or self.unplaced_value or self.idle_charge
                    or self.unmeasured_windows)


def _totals(values: dict[str, list[Decimal]]) -> tuple[UnitTotal, ...]:
    return tuple(UnitTotal(unit=unit, value=sum(v, Decimal(0)), requests=len(v)) for unit, v in sorted(values.items()))


def _forecast_values(
    quarter: str,
) -> tuple[dict[int | None, dict[str, list[Decimal]]], dict[int | None, dict[str, list[Decimal]]]]:
    """Per department id (None: no department) and unit: the revenue forecasts of the quarter's finalized weeks'
    grants that were placed, and of those that were not. Six queries."""
    start, end = quarter_bounds(quarter)
    requests = list(
        GpuRequest.objects.filter(
            cycle__starts_at__gte=start, cycle__starts_at__lt=end,
            cycle__status__in=[CycleStatus.FINALIZED, CycleStatus.PUBLISHED],
            impact_forecast__kind=ImpactKind.REVENUE,
        ).select_related("team", "impact_forecast").order_by("id")
    )
    outcomes = request_outcome_map(requests=requests)
    granted: dict[int | None, dict[str, list[Decimal]]] = defaultdict(lambda: defaultdict(list))
    unplaced: dict[int | None, dict[str, list[Decimal]]] = defaultdict(lambda: defaultdict(list))
    for r in requests:
        outcome = outcomes.get(r.pk)
        if outcome is None or outcome.decided is None or outcome.decided.outcome not in PLACING_OUTCOMES:
            continue
        target = unplaced if outcome.status == PlacementStatus.NOT_PLACED else granted
        target[r.team.department_id][r.impact_forecast.value_unit].append(r.impact_forecast.estimated_value)
    return granted, unplaced


def _idle(quarter: str, now: datetime) -> tuple[dict[int | None, Decimal], dict[int | None, Decimal],
                                                dict[int | None, int]]:
    """Per department id: the charge of the idle part of its ended windows that start in the quarter (held GPU-hours
    less the GPU-hours measured on the window, charged as the window is), that part in A100-equivalent GPU-hours, and
    the ended windows with no usage reported. Three queries."""
    start, end = quarter_bounds(quarter)
    decimal: DecimalField[Decimal, Decimal] = DecimalField(max_digits=20, decimal_places=4)
    used = (UsageRecord.objects.filter(window=OuterRef("pk")).order_by().values("window")
            .annotate(total=Sum("gpu_hours_used")).values("total"))
    rows = list(
        AllocationWindow.objects.filter(start__gte=start, start__lt=end, end__lte=now, withdrawal__isnull=True)
        .annotate(used=Subquery(used, output_field=decimal))  # None: no usage reported on the window
        .values_list("team__department_id", "week", "pool_id", "gpu_count", "start", "end", "tier",
                     "pool__cluster__slug", "pool__slug", "used")
    )
    terms = charge_terms({(f"{row[7]}/{row[8]}", row[1]) for row in rows})
    weights = billing_weights(pool_ids={row[2] for row in rows}, weeks={row[1] for row in rows})
    charge: dict[int | None, Decimal] = defaultdict(Decimal)
    hours_a100: dict[int | None, Decimal] = defaultdict(Decimal)
    unmeasured: dict[int | None, int] = defaultdict(int)
    for department_id, week, pool_id, gpus, w_start, w_end, tier, cluster, pool, measured in rows:
        if measured is None:
            unmeasured[department_id] += 1
            continue
        held = Decimal(gpus) * Decimal(int((w_end - w_start).total_seconds())) / 3600
        idle = max(held - Decimal(measured), Decimal(0))
        if idle:
            charge[department_id] += window_charge(
                gpu_hours=idle, price_per_gpu_hour=terms.prices[(f"{cluster}/{pool}", week)], tier=tier,
                discount_pct=terms.discounts[week])
            hours_a100[department_id] += idle * weights[(pool_id, week)]
    return charge, hours_a100, unmeasured


def department_quarters(*, quarter: str, now: datetime) -> list[DepartmentQuarter]:
    """Every department's quarter to date, by name, then the teams in no department when they have figures. At most
    seventeen queries, whatever the number of departments, requests and windows."""
    budgets = {b.department_id: b for b in department_budgets(quarter=quarter)}
    granted, unplaced = _forecast_values(quarter)
    idle_charge, idle_hours, unmeasured = _idle(quarter, now)
    rows: list[tuple[int | None, str, str]] = [
        (pk, name, slug) for pk, name, slug in Department.objects.order_by("name").values_list("pk", "name", "slug")
    ]
    rows.append((None, _("Teams in no department"), NO_DEPARTMENT))
    out = []
    for pk, name, slug in rows:
        budget = budgets.get(pk) if pk is not None else None
        row = DepartmentQuarter(
            name=name, slug=slug, budget=budget if budget is not None and budget.has_budget else None,
            granted_value=_totals(granted.get(pk, {})), unplaced_value=_totals(unplaced.get(pk, {})),
            idle_charge=idle_charge.get(pk, Decimal(0)), idle_a100_gpu_hours=idle_hours.get(pk, Decimal(0)),
            unmeasured_windows=unmeasured.get(pk, 0),
        )
        if pk is not None or row.has_figures:
            out.append(row)
    return out
