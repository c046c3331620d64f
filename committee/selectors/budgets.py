"""Departments' budgets per quarter: what finance set, what carried over, what the department's windows charge, and
what granting a request would charge (docs/budgets.md).

The budget of a quarter is `budget.<department>.quarterly` in force in the quarter's last ISO week (finance may set it
during the quarter: it holds for the whole quarter), its carry-over rule `budget.<department>.carry_over_pct` the
same. What carries over into a quarter: what was left of the quarter before's own budget, up to that quarter's
carry-over percentage of it (never more than one quarter back). Charges follow the tier: a priority or standard
window is charged for all its GPU-hours at its pool's price per GPU-hour in force in the window's week
(`pool.<pool>.price_per_gpu_hour`, `charge_terms`), a standard one less the GPU-hours it lent to others and they used
(allocations.selectors.window_lent_credits), a preemptible one at `charges.preemptible_discount_pct` less (in force
in the window's week too). Money is Decimal, to the cent.

The capacity buffer is a line of each department's budget: `budget.buffer_pct` of its quarterly budget (the same
week's value), which the windows of emergencies (placed beside the week's plan from the burst reserve; extensions are
emergencies too) draw on; the rest of the budget is the line of the weekly plans. The lines split what the department
has and what it spent; the total, what is left and the alerts are the budget's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import NamedTuple

from django.db.models import Exists, OuterRef

from allocations.models import AllocationWindow, Department, WindowTier
from allocations.selectors import pool_prices, window_lent_credits
from committee.models import Decision, EmergencyRequest, GpuRequest
from committee.quarters import quarter_bounds, shift_quarter
from committee.selectors.review import ReviewRow
from core.datetimes import format_isoweek
from governed.params import (
    BUDGET_PREFIX,
    BUFFER_PCT,
    POOL_PREFIX,
    PREEMPTIBLE_DISCOUNT,
    PRICE,
    REFUSE_OVER_BUDGET,
    as_int,
    defaults,
    pool_price,
    value_text,
)
from governed.selectors import policy_value, policy_values, policy_values_for_weeks

CENT = Decimal("0.01")
ALERT_PCT = (80, 100)


def cents(amount: Decimal) -> Decimal:
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)


def window_charge(
    *, gpu_hours: Decimal, price_per_gpu_hour: Decimal, tier: str, discount_pct: int,
    lent_gpu_hours: Decimal = Decimal(0),
) -> Decimal:
    """What a window charges its team's department, to the cent: all its GPU-hours at the pool's price, less for a
    standard window the credit for the GPU-hours it lent to others and they used (`lent_credit`), a preemptible
    window `discount_pct` % less."""
    charge = gpu_hours * price_per_gpu_hour
    if tier == WindowTier.PREEMPTIBLE:
        charge = charge * (100 - discount_pct) / 100
    return cents(charge) - lent_credit(lent_gpu_hours=lent_gpu_hours, price_per_gpu_hour=price_per_gpu_hour,
                                       tier=tier)


def lent_credit(*, lent_gpu_hours: Decimal, price_per_gpu_hour: Decimal, tier: str) -> Decimal:
    """The credit of a standard window for the GPU-hours it lent and others used, to the cent (the charge before
    the credit and the credit are each rounded, so a statement's lines add up to the cent); 0 for another tier."""
    if tier != WindowTier.STANDARD:
        return Decimal(0)
    return cents(lent_gpu_hours * price_per_gpu_hour)


@dataclass(frozen=True)
class DepartmentBudget:
    department_id: int
    name: str
    slug: str
    quarter: str
    quarterly: Decimal  # what finance set for the quarter (0: no budget)
    carry_over_pct: int
    carried_over: Decimal  # left of last quarter's budget, up to its carry-over percentage of it
    spent: Decimal  # the department's windows starting in the quarter, charged by tier
    buffer_pct: int = 0  # budget.buffer_pct of the quarter: the share of `quarterly` kept as the buffer line
    buffer_drawn: Decimal = Decimal(0)  # the part of `spent` charged by emergencies' windows

    @property
    def available(self) -> Decimal:
        return self.quarterly + self.carried_over

    @property
    def buffer(self) -> Decimal:
        """The capacity buffer line: buffer % of the quarter's budget, to the cent."""
        return cents(self.quarterly * self.buffer_pct / 100)

    @property
    def buffer_left(self) -> Decimal:
        return self.buffer - self.buffer_drawn

    @property
    def buffer_used_pct(self) -> Decimal | None:
        """The share of the buffer line emergencies drew, in percent (one decimal); None without a buffer."""
        if self.buffer <= 0:
            return None
        return (100 * self.buffer_drawn / self.buffer).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)

    @property
    def planned(self) -> Decimal:
        """The line of the weekly plans: what the department has, less the buffer."""
        return self.available - self.buffer

    @property
    def planned_spent(self) -> Decimal:
        return self.spent - self.buffer_drawn

    @property
    def planned_left(self) -> Decimal:
        return self.planned - self.planned_spent

    @property
    def left(self) -> Decimal:
        return self.available - self.spent

    @property
    def has_budget(self) -> bool:
        return self.available > 0

    @property
    def used_pct(self) -> Decimal | None:
        """The share of the available budget spent, in percent (one decimal); None without a budget."""
        if not self.has_budget:
            return None
        return (100 * self.spent / self.available).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)

    @property
    def alert_pct(self) -> int | None:
        """The highest alert threshold (80 %, 100 %) the spending reached, None below 80 % or without a budget."""
        used = self.used_pct
        reached = [pct for pct in ALERT_PCT if used is not None and used >= pct]
        return reached[-1] if reached else None


def _last_week(quarter: str) -> str:
    """The ISO week of the quarter's last day: the values in force then are the quarter's."""
    return format_isoweek(quarter_bounds(quarter)[1].date() - timedelta(days=1))


def quarter_first_week(quarter: str) -> str:
    """The ISO week of the quarter's first Monday: a budget set for the quarter takes effect then (the week of
    1 January 2027 is 2026-W53, the last week of 2026-Q4, which must keep the budget of 2026-Q4)."""
    day = quarter_bounds(quarter)[0].date()
    return format_isoweek(day + timedelta(days=(7 - day.weekday()) % 7))


def _settings(quarter: str, slugs: Iterable[str]) -> tuple[dict[str, tuple[Decimal, int]], int]:
    """Each department's (quarterly budget, carry-over %) for `quarter`, and the quarter's buffer %. One query."""
    values = policy_values(week=_last_week(quarter), prefix=BUDGET_PREFIX)
    budgets = {
        slug: (Decimal(value_text(values.get(f"{BUDGET_PREFIX}{slug}.quarterly", 0))),
               as_int(values.get(f"{BUDGET_PREFIX}{slug}.carry_over_pct", 0)))
        for slug in slugs
    }
    return budgets, as_int(values.get(BUFFER_PCT, defaults()[BUFFER_PCT]))


def budget_buffer_pct(*, quarter: str) -> int:
    """The share of each department's budget kept as its capacity buffer in `quarter` (`budget.buffer_pct` in force in
    the quarter's last week, as the budgets are). One query."""
    return as_int(policy_value(key=BUFFER_PCT, week=_last_week(quarter)))


def draws_on_buffer() -> Exists:
    """Annotation of an `AllocationWindow` queryset: whether the window is an emergency request's (an extension is one
    too), whose charge draws on its department's capacity buffer line rather than on the line of the weekly plans."""
    return Exists(EmergencyRequest.objects.filter(request_id=OuterRef("request_ref")))


class ChargeLines(NamedTuple):
    """What a department's windows charge in a quarter: all of them, and the part of emergencies' (the buffer's)."""

    total: Decimal
    emergencies: Decimal


def department_charge_lines(*, quarter: str, department_ids: Iterable[int] | None = None) -> dict[int, ChargeLines]:
    """What each department's windows starting in `quarter` charge (current plans: withdrawn windows do not), by
    department id, a standard window less its lent hours' credit, with the part of the windows of emergency requests
    (the buffer line's). Three queries (six when a window lent GPUs)."""
    start, end = quarter_bounds(quarter)
    windows = AllocationWindow.objects.filter(
        start__gte=start, start__lt=end, withdrawal__isnull=True, team__department__isnull=False)
    if department_ids is not None:
        windows = windows.filter(team__department_id__in=set(department_ids))
    rows = list(windows.annotate(emergency=draws_on_buffer()).values_list(
        "team__department_id", "week", "gpu_count", "start", "end", "tier", "pool__cluster__slug", "pool__slug", "pk",
        "emergency"))
    terms = charge_terms({(f"{row[6]}/{row[7]}", row[1]) for row in rows})
    lent = window_lent_credits(window_ids=[row[8] for row in rows if row[5] == WindowTier.STANDARD])
    out: dict[int, ChargeLines] = {}
    for department_id, week, gpus, w_start, w_end, tier, cluster, pool, pk, is_emergency in rows:
        hours = Decimal(gpus) * Decimal(int((w_end - w_start).total_seconds())) / 3600
        charge = window_charge(gpu_hours=hours, price_per_gpu_hour=terms.prices[(f"{cluster}/{pool}", week)],
                               tier=tier, discount_pct=terms.discounts[week], lent_gpu_hours=lent.get(pk, Decimal(0)))
        total, emergencies = out.get(department_id, ChargeLines(Decimal(0), Decimal(0)))
        out[department_id] = ChargeLines(total + charge, emergencies + (charge if is_emergency else Decimal(0)))
    return out


def department_charges(*, quarter: str, department_ids: Iterable[int] | None = None) -> dict[int, Decimal]:
    """What each department's windows starting in `quarter` charge, by department id. Three queries (six when a
    window lent GPUs)."""
    lines = department_charge_lines(quarter=quarter, department_ids=department_ids)
    return {department_id: line.total for department_id, line in lines.items()}


class ChargeTerms(NamedTuple):
    """What windows are charged at: each pool's price per GPU-hour in a week, and each week's preemptible discount."""

    prices: dict[tuple[str, str], Decimal]  # by (pool key "cluster/slug", ISO week)
    discounts: dict[str, int]  # by ISO week, in whole percents


def charge_terms(keys: set[tuple[str, str]]) -> ChargeTerms:
    """The prices of the (pool key, ISO week) pairs `keys` and the preemptible discount of their weeks, all in force
    in the week concerned (a price changed from week W+1 leaves week W's charges as they were). One query (none
    without keys)."""
    weeks = sorted({week for _pool, week in keys})
    if not weeks:
        return ChargeTerms({}, {})
    declared = as_int(defaults()[PREEMPTIBLE_DISCOUNT])
    price_keys = {f"{POOL_PREFIX}{pool}.{PRICE}" for pool, _week in keys}
    in_force = policy_values_for_weeks(weeks=weeks, keys=(PREEMPTIBLE_DISCOUNT, *sorted(price_keys)))
    return ChargeTerms(
        prices={(pool, week): pool_price(in_force.get(week, {}), pool) for pool, week in keys},
        discounts={week: as_int(in_force.get(week, {}).get(PREEMPTIBLE_DISCOUNT, declared)) for week in weeks},
    )


def department_budgets(*, quarter: str, department_ids: Iterable[int] | None = None) -> list[DepartmentBudget]:
    """Every department's (or those of `department_ids`) budget in `quarter`, by name. Seven queries at most."""
    departments = Department.objects.order_by("name")
    if department_ids is not None:
        departments = departments.filter(pk__in=set(department_ids))
    rows = list(departments.values_list("pk", "name", "slug"))
    if not rows:
        return []
    ids = [pk for pk, _name, _slug in rows]
    previous = shift_quarter(quarter, -1)
    now_settings, buffer_pct = _settings(quarter, [slug for _pk, _name, slug in rows])
    before_settings, _before_buffer = _settings(previous, [slug for _pk, _name, slug in rows])
    spent = department_charge_lines(quarter=quarter, department_ids=ids)
    spent_before = department_charges(quarter=previous, department_ids=ids)
    out = []
    for pk, name, slug in rows:
        quarterly, carry_pct = now_settings[slug]
        before, before_pct = before_settings[slug]
        unspent = max(before - spent_before.get(pk, Decimal(0)), Decimal(0))
        carried = min(unspent, cents(before * before_pct / 100))
        lines = spent.get(pk, ChargeLines(Decimal(0), Decimal(0)))
        out.append(DepartmentBudget(
            department_id=pk, name=name, slug=slug, quarter=quarter, quarterly=quarterly, carry_over_pct=carry_pct,
            carried_over=carried, spent=lines.total, buffer_pct=buffer_pct, buffer_drawn=lines.emergencies,
        ))
    return out


class BudgetAlert(NamedTuple):
    """A threshold of a department's quarter budget its charges reached."""

    budget: DepartmentBudget
    pct: int  # the threshold reached: 80 or 100


def budget_alerts(*, quarters: Sequence[str]) -> list[BudgetAlert]:
    """Every threshold (80 %, 100 %) each department's charges have reached in each of `quarters`, as they stand."""
    return [
        BudgetAlert(budget, pct)
        for quarter in sorted(set(quarters))
        for budget in department_budgets(quarter=quarter)
        for pct in ALERT_PCT
        if budget.used_pct is not None and budget.used_pct >= pct
    ]


def budget_alert_key(alert: BudgetAlert) -> str:
    """Once per department, quarter and threshold, however many changes reach it."""
    return f"budget:{alert.budget.slug}:{alert.budget.quarter}:{alert.pct}"


@dataclass(frozen=True)
class RequestBudget:
    """What granting a request would charge its team's department, against what is left of the quarter's budget."""

    charge: Decimal
    budget: DepartmentBudget
    refused: bool = False  # the policy in force refuses a grant over budget (charges.refuse_over_budget)

    @property
    def left_after(self) -> Decimal:
        return self.budget.left - self.charge

    @property
    def over_by(self) -> Decimal:
        return max(-self.left_after, Decimal(0))

    @property
    def exceeds(self) -> bool:
        return self.budget.has_budget and self.left_after < 0


def request_charge(gpu_request: GpuRequest, *, price_per_gpu_hour: Decimal, gpu_count: int | None = None) -> Decimal:
    """What granting `gpu_request` would charge: its GPU-hours (as asked, or `gpu_count` GPUs over its duration) at
    its pool's price in its week (`request_prices`; a standard grant is charged in full, lent hours are credited
    when measured)."""
    gpus = gpu_request.gpu_count if gpu_count is None else gpu_count
    return cents(Decimal(gpus * gpu_request.duration_hours) * price_per_gpu_hour)


def request_prices(*, requests: Iterable[GpuRequest], week: str) -> dict[int, Decimal]:
    """Per pool id, the price per GPU-hour in force in `week` (the requests' cycle's) of the requests' pools. Two
    queries."""
    prices = pool_prices(keys={(r.pool_id, week) for r in requests})
    return {pool_id: price for (pool_id, _week), price in prices.items()}


def grant_over_budget(
    *, gpu_request: GpuRequest, cycle_week: str, quarter: str, gpu_count: int,
) -> RequestBudget | None:
    """When the policy in force in `cycle_week` refuses a grant over budget (`charges.refuse_over_budget`): what
    granting `gpu_count` GPUs of `gpu_request` would charge against its department's budget in `quarter`, if that
    exceeds what is left once the week's other grants are counted; else None (no such policy, no department, no
    budget, or within it). The week's other grants are the decisions of the same week granting GPUs to a team of the
    same department (not yet in a plan: their windows are not charged yet)."""
    department_id = gpu_request.team.department_id
    if department_id is None or not policy_value(key=REFUSE_OVER_BUDGET, week=cycle_week):
        return None
    budgets = department_budgets(quarter=quarter, department_ids=[department_id])
    if not budgets or not budgets[0].has_budget:
        return None
    others = Decision.objects.filter(
        cycle__week=cycle_week, request__team__department_id=department_id, granted_gpu_count__isnull=False,
        granted_gpu_count__gt=0,
    ).exclude(request_id=gpu_request.pk).select_related("request__pool")
    prices = request_prices(requests=[gpu_request, *(d.request for d in others)], week=cycle_week)
    pending = sum((request_charge(d.request, price_per_gpu_hour=prices[d.request.pool_id],
                                  gpu_count=d.granted_gpu_count) for d in others), Decimal(0))
    budget = replace(budgets[0], spent=budgets[0].spent + pending)
    charge = RequestBudget(charge=request_charge(gpu_request, price_per_gpu_hour=prices[gpu_request.pool_id],
                                                 gpu_count=gpu_count), budget=budget)
    return charge if charge.exceeds else None


def request_budget_map(*, requests: Sequence[GpuRequest], quarter: str, week: str) -> dict[int, RequestBudget]:
    """Per request id, what granting it would charge (at the prices in force in `week`, the requests' cycle's)
    against its department's budget in `quarter` (that of the cycle's week: `quarter_of(cycle.starts_at)`). A request
    of a team without a department, or of a department without a budget, is absent. The requests come with team
    (select_related). Eleven queries at most, whatever the number of requests."""
    departments = {r.team.department_id for r in requests if r.team.department_id is not None}
    if not departments:
        return {}
    budgets = {b.department_id: b for b in department_budgets(quarter=quarter, department_ids=departments)}
    prices = request_prices(requests=requests, week=week)
    out: dict[int, RequestBudget] = {}
    for r in requests:
        budget = budgets.get(r.team.department_id) if r.team.department_id is not None else None
        if budget is not None and budget.has_budget:
            out[r.pk] = RequestBudget(charge=request_charge(r, price_per_gpu_hour=prices[r.pool_id]), budget=budget)
    return out


def review_rows_budget(*, rows: Sequence[ReviewRow], quarter: str, week: str) -> None:
    """Give each review row its `budget`: what granting it would charge its department, and what is left, and whether
    the policy in force in `week` refuses a grant over budget (one more query, only when a row has a budget)."""
    budgets = request_budget_map(requests=[row.request for row in rows], quarter=quarter, week=week)
    if budgets and policy_value(key=REFUSE_OVER_BUDGET, week=week):
        budgets = {pk: replace(b, refused=True) for pk, b in budgets.items()}
    for row in rows:
        row.budget = budgets.get(row.request.pk)
