"""A month's statement: every window starting in the month (current plans), its charge by tier and the usage the
schedulers measured on it, per department and team. The same charge as the budgets (committee.selectors.budgets)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from django.db.models import Sum

from allocations.models import AllocationWindow, Department, UsageRecord, WindowTier
from allocations.selectors import window_lent_credits
from committee.selectors.budgets import charge_terms, lent_credit, window_charge
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


@dataclass(frozen=True)
class TeamTotal:
    department: str
    team: str
    gpu_hours: Decimal
    used_gpu_hours: Decimal
    charge: Decimal


@dataclass(frozen=True)
class Statement:
    month: str
    department: Department | None  # None: every team
    lines: Sequence[StatementLine] = field(default_factory=tuple)

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
    GPU-hours measured on it, a standard window less the credit for the GPU-hours it lent and others used. Four
    queries (seven when a window lent GPUs)."""
    start, end = month_bounds(month)
    windows = AllocationWindow.objects.filter(start__gte=start, start__lt=end, withdrawal__isnull=True)
    if department is not None:
        windows = windows.filter(team__department=department)
    rows = list(windows.order_by("start", "id").values_list(
        "pk", "week", "team__department__name", "team__name", "pool__cluster__slug", "pool__slug", "tier",
        "gpu_count", "start", "end"))
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
    for pk, week, dept, team, cluster, pool, tier, gpus, w_start, w_end in rows:
        hours = Decimal(gpus) * Decimal(int((w_end - w_start).total_seconds())) / 3600
        price = terms.prices[(f"{cluster}/{pool}", week)]
        lent_hours = lent.get(pk, Decimal(0))
        lines.append(StatementLine(
            window_id=pk, week=week, department=dept or "", team=team, pool=f"{cluster}/{pool}", tier=tier,
            gpu_count=gpus, start=w_start, end=w_end, gpu_hours=hours, price_per_gpu_hour=price,
            discount_pct=discounts[week], lent_gpu_hours=lent_hours,
            credit=lent_credit(lent_gpu_hours=lent_hours, price_per_gpu_hour=price, tier=tier),
            charge=window_charge(gpu_hours=hours, price_per_gpu_hour=price, tier=tier, discount_pct=discounts[week],
                                 lent_gpu_hours=lent_hours),
            used_gpu_hours=used.get(pk),
        ))
    return Statement(month=month, department=department, lines=tuple(lines))
