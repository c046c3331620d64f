"""A month's statement: every window starting in the month (current plans), its charge by tier and the usage the
schedulers measured on it, per department and team, and each department's charges by budget line (the weekly
plans', the capacity buffer's) beside its quarter's buffer line. The same charge as the budgets
(committee.selectors.budgets)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from django.db.models import Sum

from allocations.models import AllocationWindow, Department, UsageRecord, WindowTier
from allocations.selectors import window_lent_credits
from committee.quarters import quarter_of
from committee.selectors.budgets import (
    DepartmentBudget,
    charge_terms,
    department_budgets,
    draws_on_buffer,
    lent_credit,
    window_charge,
)
from reports.dashboards.monthly import month_bounds


@dataclass(frozen=True)
class StatementLine:
    window_id: int
    week: str
    department: str  # its name, "" for a team in none
    team: str
    pool: str
    tier: str
    gpu_count: int
    start: datetime
    end: datetime
    gpu_hours: Decimal
    price_per_gpu_hour: Decimal
    discount_pct: int  # applied to a preemptible window only
    lent_gpu_hours: Decimal  # a standard window's GPU-hours lent to others and used by them (0: none)
    credit: Decimal  # what they are credited: lent_gpu_hours × price, to the cent
    charge: Decimal  # after the credit
    used_gpu_hours: Decimal | None  # measured on the window; None: nothing reported
    buffer: bool = False  # an emergency's window: charged to its department's capacity buffer line

    @property
    def budget_line(self) -> str:
        """The line of its department's budget the charge goes to: "buffer" or "plans" ("" for a team in none)."""
        if not self.department:
            return ""
        return "buffer" if self.buffer else "plans"


@dataclass(frozen=True)
class TeamTotal:
    department: str
    team: str
    gpu_hours: Decimal
    used_gpu_hours: Decimal
    charge: Decimal


@dataclass(frozen=True)
class BudgetLines:
    """A department's charges of the month by budget line, beside its quarter's budget (and so its buffer line)."""

    budget: DepartmentBudget  # the quarter's, as /budgets/ shows it (`buffer`, `buffer_drawn`, `buffer_left`)
    plans: Decimal  # the month's windows charged to the line of the weekly plans
    buffer: Decimal  # the month's emergencies' windows, charged to the capacity buffer line

    @property
    def charge(self) -> Decimal:
        return self.plans + self.buffer


@dataclass(frozen=True)
class Statement:
    month: str
    department: Department | None  # None: every team
    lines: Sequence[StatementLine] = field(default_factory=tuple)
    budget_lines: Sequence[BudgetLines] = field(default_factory=tuple)  # by department name

    @property
    def charge(self) -> Decimal:
        return sum((line.charge for line in self.lines), Decimal(0))

    @property
    def gpu_hours(self) -> Decimal:
        return sum((line.gpu_hours for line in self.lines), Decimal(0))

    @property
    def credit(self) -> Decimal:
        return sum((line.credit for line in self.lines), Decimal(0))

    @property
    def lent_gpu_hours(self) -> Decimal:
        return sum((line.lent_gpu_hours for line in self.lines), Decimal(0))

    @property
    def buffer_charge(self) -> Decimal:
        """What the month's emergencies' windows charged their departments' capacity buffer lines."""
        return sum((line.charge for line in self.lines if line.budget_line == "buffer"), Decimal(0))

    @property
    def quarter(self) -> str:
        return quarter_of(month_bounds(self.month)[0])

    @property
    def used_gpu_hours(self) -> Decimal:
        return sum((line.used_gpu_hours or Decimal(0) for line in self.lines), Decimal(0))

    def teams(self) -> list[TeamTotal]:
        """Each team's total, by department then team."""
        totals: dict[tuple[str, str], list[Decimal]] = {}
        for line in self.lines:
            row = totals.setdefault((line.department, line.team), [Decimal(0)] * 3)
            row[0] += line.gpu_hours
            row[1] += line.used_gpu_hours or Decimal(0)
            row[2] += line.charge
        return [TeamTotal(department=d, team=t, gpu_hours=v[0], used_gpu_hours=v[1], charge=v[2])
                for (d, t), v in sorted(totals.items())]


def statement_for_month(*, month: str, department: Department | None = None) -> Statement:
    """The statement of `month` (YYYY-MM, committee time; ValueError if malformed): the windows of current plans
    starting in it (those of `department`'s teams only, when given), each charged as the budgets charge it, with the
    GPU-hours measured on it, a standard window less the credit for the GPU-hours it lent and others used; an
    emergency's window is charged to its department's capacity buffer line, and each department of the statement (or
    `department`) has its month's charges by line beside its quarter's budget (`department_budgets`). Four queries
    without a department, eleven with (three more for each of the month, its quarter and the quarter before in which
    a window lent GPUs)."""
    start, end = month_bounds(month)
    windows = AllocationWindow.objects.filter(start__gte=start, start__lt=end, withdrawal__isnull=True)
    if department is not None:
        windows = windows.filter(team__department=department)
    rows = list(windows.annotate(emergency=draws_on_buffer()).order_by("start", "id").values_list(
        "pk", "week", "team__department__name", "team__name", "pool__cluster__slug", "pool__slug", "tier",
        "gpu_count", "start", "end", "emergency", "team__department_id"))
    used = dict(
        UsageRecord.objects.filter(window_id__in=[row[0] for row in rows]).values("window_id")
        .annotate(hours=Sum("gpu_hours_used")).values_list("window_id", "hours")
    ) if rows else {}
    # Each window at the price and discount in force in its week: a month across a price change prices each week
    # at its own price.
    terms = charge_terms({(f"{row[4]}/{row[5]}", row[1]) for row in rows})
    discounts = terms.discounts
    lent = window_lent_credits(window_ids=[row[0] for row in rows if row[6] == WindowTier.STANDARD])
    lines = []
    by_department: dict[int, list[Decimal]] = {department.pk: [Decimal(0)] * 2} if department is not None else {}
    for pk, week, dept, team, cluster, pool, tier, gpus, w_start, w_end, emergency, dept_id in rows:
        hours = Decimal(gpus) * Decimal(int((w_end - w_start).total_seconds())) / 3600
        price = terms.prices[(f"{cluster}/{pool}", week)]
        lent_hours = lent.get(pk, Decimal(0))
        charge = window_charge(gpu_hours=hours, price_per_gpu_hour=price, tier=tier, discount_pct=discounts[week],
                               lent_gpu_hours=lent_hours)
        if dept_id is not None:
            by_department.setdefault(dept_id, [Decimal(0)] * 2)[1 if emergency else 0] += charge
        lines.append(StatementLine(
            window_id=pk, week=week, department=dept or "", team=team, pool=f"{cluster}/{pool}", tier=tier,
            gpu_count=gpus, start=w_start, end=w_end, gpu_hours=hours, price_per_gpu_hour=price,
            discount_pct=discounts[week], lent_gpu_hours=lent_hours,
            credit=lent_credit(lent_gpu_hours=lent_hours, price_per_gpu_hour=price, tier=tier),
            charge=charge, used_gpu_hours=used.get(pk), buffer=emergency,
        ))
    budgets = department_budgets(quarter=quarter_of(start), department_ids=by_department) if by_department else []
    budget_lines = tuple(BudgetLines(budget=b, plans=by_department[b.department_id][0],
                                     buffer=by_department[b.department_id][1]) for b in budgets)
    return Statement(month=month, department=department, lines=tuple(lines), budget_lines=budget_lines)
