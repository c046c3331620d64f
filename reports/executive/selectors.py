"""Reads for the buffer fund and the executive summary of a month. How each number is computed: docs/executive.md.

The summary reads what the archive already holds: the weeks' decisions and their placement
(`committee.selectors.request_outcome_map`, as the decision records do), the requests' impact forecasts,
the emergencies, the usage records (`reports.dashboards.monthly.month_figures`, as the monthly review
does) and the buffer fund's ledger. It is anyone signed in's page, as the archive is.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Min, Sum
from django.urls import reverse
from django.utils.translation import gettext as _

from allocations.models import UsageRecord
from committee import weeks
from committee.models import (
    CommitteeSeat,
    CycleStatus,
    DecisionOutcome,
    EmergencyRequest,
    EmergencyStatus,
    GpuRequest,
    ImpactKind,
    ReviewCycle,
    SeatRole,
)
from committee.selectors import budget_buffer_pct, request_outcome_map
from committee.selectors.budgets import DepartmentBudget, department_budgets
from committee.selectors.outcomes import PlacementStatus
from core.datetimes import format_isoweek
from reports.dashboards import monthly
from reports.dashboards.selectors import billing_weights
from reports.executive import quarters
from reports.models import BufferFund, BufferSpend, DeferredPurchase, Page
from reports.records import decision_record_slug

TREND_MONTHS = 6
MONTH = re.compile(r"^\d{4}-\d{2}$")
CENT = Decimal("0.01")


def buffer_fund_can_record(*, user: AbstractBaseUser | AnonymousUser, now: datetime) -> bool:
    """The chair and the finance seat record the fund's entries (a seat active on `now`'s day)."""
    if not user.is_authenticated:
        return False
    day = now.astimezone(weeks.committee_zone()).date()
    return CommitteeSeat.objects.active(on=day).filter(
        user_id=user.pk, role__in=[SeatRole.CHAIR, SeatRole.FINANCE]
    ).exists()


# --- the buffer fund ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FundState:
    """A fund with its buffer and ledger totals. The buffer is the sum of the departments' buffer lines of the
    fund's quarter (`lines`, as /budgets/ shows them), at `buffer_pct` of each department's budget."""

    fund: BufferFund
    lines: tuple[DepartmentBudget, ...]
    buffer_pct: int
    spent: Decimal
    deferred: Decimal

    @property
    def buffer(self) -> Decimal:
        return fund_buffer(self.lines)

    @property
    def budgets_total(self) -> Decimal:
        """The departments' quarterly budgets the buffer is a share of."""
        return sum((line.quarterly for line in self.lines), Decimal(0))

    @property
    def balance(self) -> Decimal:
        return self.buffer - self.spent

    @property
    def spent_pct(self) -> Decimal:
        return (self.spent * 100 / self.buffer).quantize(Decimal("0.1")) if self.buffer else Decimal(0)


def fund_buffer(lines: Iterable[DepartmentBudget]) -> Decimal:
    """The fund's buffer: the sum of the departments' buffer lines (each already to the cent)."""
    return sum((line.buffer for line in lines), Decimal(0))


def fund_buffer_lines(*, quarter: str) -> tuple[tuple[DepartmentBudget, ...], int]:
    """The departments' budgets of `quarter`, whose buffer lines make the fund's buffer, and the quarter's
    `budget.buffer_pct` (`committee.selectors.budgets`: seven queries at most, one more without a department)."""
    lines = tuple(department_budgets(quarter=quarter))
    return lines, lines[0].buffer_pct if lines else budget_buffer_pct(quarter=quarter)


def fund_state(fund: BufferFund) -> FundState:
    # SQLite sums decimals as floats: back to cents.
    spent = (fund.spends.aggregate(total=Sum("amount"))["total"] or Decimal(0)).quantize(CENT)
    deferred = (fund.deferred_purchases.aggregate(total=Sum("amount"))["total"] or Decimal(0)).quantize(CENT)
    lines, buffer_pct = fund_buffer_lines(quarter=fund.quarter)
    return FundState(fund=fund, lines=lines, buffer_pct=buffer_pct, spent=spent, deferred=deferred)


def buffer_fund_get(*, quarter: str) -> BufferFund | None:
    return BufferFund.objects.filter(quarter=quarter).first()


def buffer_fund_list() -> list[FundState]:
    return [fund_state(f) for f in BufferFund.objects.order_by("-quarter")]


def buffer_spend_list(*, fund: BufferFund) -> list[BufferSpend]:
    return list(fund.spends.select_related("emergency").order_by("spent_at", "id"))


def deferred_purchase_list(*, fund: BufferFund) -> list[DeferredPurchase]:
    return list(fund.deferred_purchases.order_by("deferred_at", "id"))


def emergency_choices(*, quarter: str) -> list[EmergencyRequest]:
    """The emergencies a spend of the quarter may answer: those filed in it or the quarter before."""
    _start, end = quarters.quarter_bounds(quarter)
    before, _end = quarters.quarter_bounds(quarters.shift_quarter(quarter, -1))
    return list(
        EmergencyRequest.objects.filter(filed_at__gte=before, filed_at__lt=end)
        .select_related("request__team").order_by("-filed_at")
    )


# --- the executive summary -------------------------------------------------------------------------


class RiskReason:
    DEFERRED = "deferred"
    DECLINED = "declined"
    NOT_PLACED = "not_placed"
    LATE = "late"


def risk_reason_label(reason: str) -> str:
    return {
        RiskReason.DEFERRED: _("deferred"),
        RiskReason.DECLINED: _("declined"),
        RiskReason.NOT_PLACED: _("granted, not placed"),
        RiskReason.LATE: _("placed after its deadline"),
    }[reason]


@dataclass(frozen=True)
class AtRiskRequest:
    request_id: int
    title: str
    team: str
    week: str
    reason: str
    value: Decimal
    unit: str
    record_url: str | None

    @property
    def reason_label(self) -> str:
        return risk_reason_label(self.reason)


@dataclass(frozen=True)
class UnitTotal:
    unit: str
    value: Decimal
    requests: int


@dataclass(frozen=True)
class AvoidedDelay:
    emergency_id: int
    title: str
    team: str
    placed_at: datetime
    next_week_starts_at: datetime | None
    gpu_hours: int  # in the pool's own GPU-hours
    a100_gpu_hours: Decimal  # the same, in A100-equivalent GPU-hours (the pool's billing weight that week)

    @property
    def hours_avoided(self) -> Decimal:
        """From its placement to the start of the next weekly plan, when it would have run otherwise."""
        if self.next_week_starts_at is None or self.next_week_starts_at <= self.placed_at:
            return Decimal(0)
        return (Decimal(int((self.next_week_starts_at - self.placed_at).total_seconds())) / 3600).quantize(
            Decimal("0.1"))


@dataclass(frozen=True)
class MonthUse:
    month: str
    # Across pools in the common unit: A100-equivalent GPU-hours used over the A100-equivalent capacity (each pool's
    # billing weight in the week of the hour), in %; None: no usage reported that month.
    utilization_pct: Decimal | None
    a100_used_gpu_hours: Decimal = Decimal(0)
    a100_capacity_gpu_hours: Decimal = Decimal(0)

    @property
    def idle_pct(self) -> Decimal | None:
        return None if self.utilization_pct is None else 100 - self.utilization_pct


def _a100_pct(figures: monthly.PeriodFigures) -> Decimal | None:
    pct = figures.a100_utilization_pct
    return pct.quantize(Decimal("0.1")) if figures.has_usage and pct is not None else None


@dataclass(frozen=True)
class ExecutiveSummary:
    month: str
    to_date: bool
    currency: str
    weeks: tuple[str, ...]  # the finalized or published weeks that start in the month
    record_urls: dict[str, str]
    at_risk: tuple[AtRiskRequest, ...]
    revenue_forecasts: int  # revenue forecasts of the month's decided requests (at risk or not)
    avoided: tuple[AvoidedDelay, ...]
    trend: tuple[MonthUse, ...]  # oldest first, ending with the month
    fund: FundState | None
    quarter: str
    month_spends: tuple[BufferSpend, ...]
    month_deferred: tuple[DeferredPurchase, ...]
    totals_by_unit: tuple[UnitTotal, ...] = field(default=())

    @property
    def current(self) -> MonthUse:
        return self.trend[-1]

    @property
    def previous(self) -> MonthUse:
        return self.trend[-2]

    @property
    def utilization_change_pp(self) -> Decimal | None:
        """Percentage points month over month; None when either month has no usage."""
        now, before = self.current.utilization_pct, self.previous.utilization_pct
        return None if now is None or before is None else now - before

    @property
    def utilization_change_text(self) -> str:
        """The change with its sign, one decimal: "+1.2", "−3.3", "0.0"."""
        change = self.utilization_change_pp
        if change is None:
            return ""
        text = f"{abs(change):.1f}"
        return text if text == "0.0" else ("+" if change > 0 else "−") + text

    @property
    def hours_avoided(self) -> Decimal:
        return sum((a.hours_avoided for a in self.avoided), Decimal(0))

    @property
    def avoided_a100_gpu_hours(self) -> Decimal:
        """The emergencies' GPU-hours across pools, in the common unit."""
        return sum((a.a100_gpu_hours for a in self.avoided), Decimal(0))

    @property
    def month_spent(self) -> Decimal:
        return sum((s.amount for s in self.month_spends), Decimal(0))

    @property
    def month_deferred_total(self) -> Decimal:
        return sum((d.amount for d in self.month_deferred), Decimal(0))

    @property
    def has_data(self) -> bool:
        return bool(self.weeks or self.avoided or self.current.utilization_pct is not None
                    or self.month_spends or self.month_deferred)


def _at_risk(cycles: list[ReviewCycle], record_urls: dict[str, str]) -> tuple[list[AtRiskRequest], int]:
    requests = list(
        GpuRequest.objects.filter(cycle__in=cycles, impact_forecast__kind=ImpactKind.REVENUE)
        .select_related("team", "cycle", "impact_forecast").order_by("cycle__starts_at", "id")
    )
    outcomes = request_outcome_map(requests=requests)
    rows: list[AtRiskRequest] = []
    decided = 0
    for r in requests:
        outcome = outcomes.get(r.pk)
        if outcome is None or outcome.decided is None:
            continue
        decided += 1
        reason = None
        if outcome.decided.outcome == DecisionOutcome.DEFER:
            reason = RiskReason.DEFERRED
        elif outcome.decided.outcome == DecisionOutcome.REJECT:
            reason = RiskReason.DECLINED
        elif outcome.status == PlacementStatus.NOT_PLACED:
            reason = RiskReason.NOT_PLACED
        elif (
            r.deadline is not None and outcome.placed is not None and outcome.placed.windows
            and max(w.window.end for w in outcome.placed.windows) > r.deadline
        ):
            reason = RiskReason.LATE
        if reason is None:
            continue
        forecast = r.impact_forecast
        rows.append(AtRiskRequest(
            request_id=r.pk, title=r.title, team=r.team.name, week=r.cycle.week, reason=reason,
            value=forecast.estimated_value, unit=forecast.value_unit, record_url=record_urls.get(r.cycle.week),
        ))
    return rows, decided


def _totals(rows: list[AtRiskRequest]) -> tuple[UnitTotal, ...]:
    """Forecast values add up only within one unit ("USD/week" and "USD" are not summed together)."""
    values: dict[str, Decimal] = defaultdict(Decimal)
    counts: dict[str, int] = defaultdict(int)
    for row in rows:
        values[row.unit] += row.value
        counts[row.unit] += 1
    return tuple(UnitTotal(unit=u, value=values[u], requests=counts[u]) for u in sorted(values))


def _avoided(start: datetime, end: datetime) -> list[AvoidedDelay]:
    emergencies = [
        e for e in EmergencyRequest.objects.filter(
            status=EmergencyStatus.PLACED, placed_at__gte=start, placed_at__lt=end,
        ).select_related("request__team", "review_cycle").order_by("placed_at", "id")
        if e.placed_at is not None
    ]
    week_of = {e.pk: format_isoweek(e.placed_at) for e in emergencies if e.placed_at is not None}
    weights = billing_weights(pool_ids={e.request.pool_id for e in emergencies}, weeks=set(week_of.values()))
    return [
        AvoidedDelay(
            emergency_id=e.pk, title=e.request.title, team=e.request.team.name, placed_at=e.placed_at,
            next_week_starts_at=e.review_cycle.starts_at if e.review_cycle is not None else None,
            gpu_hours=e.request.gpu_count * e.request.duration_hours,
            a100_gpu_hours=e.request.gpu_count * e.request.duration_hours * weights[(e.request.pool_id, week_of[e.pk])],
        )
        for e in emergencies
        if e.placed_at is not None
    ]


def executive_summary(*, month: str, now: datetime) -> ExecutiveSummary:
    """The month's figures for executives. ValueError for a malformed month or one that has not begun."""
    if not MONTH.match(month):  # strptime would also take "2026-1"
        raise ValueError(f"a month looks like 2026-11, got {month!r}")
    start, end = monthly.month_bounds(month)
    if start > now:
        raise ValueError(f"{month} has not begun")
    cycles = list(
        ReviewCycle.objects.filter(
            starts_at__gte=start, starts_at__lt=end, status__in=[CycleStatus.FINALIZED, CycleStatus.PUBLISHED]
        ).order_by("starts_at")
    )
    slugs = {decision_record_slug(c.week): c.week for c in cycles}
    record_urls = {
        slugs[slug]: reverse("reports:page", kwargs={"slug": slug})
        for slug in Page.objects.filter(slug__in=slugs).values_list("slug", flat=True)
    }
    at_risk, decided = _at_risk(cycles, record_urls)
    trend_months = [monthly.shift_month(month, -k) for k in range(TREND_MONTHS - 1, -1, -1)]
    figures = monthly.month_figures(months=trend_months, now=now)
    trend = tuple(
        MonthUse(
            month=m,
            utilization_pct=_a100_pct(figures[m][monthly.ALL_POOLS]),
            a100_used_gpu_hours=(figures[m][monthly.ALL_POOLS].a100_used_gpu_hours or Decimal(0)).quantize(Decimal(1)),
            a100_capacity_gpu_hours=(figures[m][monthly.ALL_POOLS].a100_capacity_gpu_hours or Decimal(0)).quantize(
                Decimal(1)),
        )
        for m in trend_months
    )
    quarter = quarters.quarter_of(start)
    fund = buffer_fund_get(quarter=quarter)
    last = min(end, now + timedelta(microseconds=1))
    return ExecutiveSummary(
        month=month,
        to_date=now < end,
        currency=fund.currency if fund is not None else settings.DOCKET_COST_CURRENCY,
        weeks=tuple(c.week for c in cycles),
        record_urls=record_urls,
        at_risk=tuple(at_risk),
        revenue_forecasts=decided,
        avoided=tuple(_avoided(start, last)),
        trend=trend,
        fund=fund_state(fund) if fund is not None else None,
        quarter=quarter,
        month_spends=tuple(BufferSpend.objects.filter(spent_at__gte=start, spent_at__lt=last)
                           .select_related("fund").order_by("spent_at", "id")),
        month_deferred=tuple(DeferredPurchase.objects.filter(deferred_at__gte=start, deferred_at__lt=last)
                             .select_related("fund").order_by("deferred_at", "id")),
        totals_by_unit=_totals(at_risk),
    )


@dataclass(frozen=True)
class CalendarReach:
    """The months and quarters the executive summary and the buffer fund have something to show for: from the
    first review cycle's or usage report's (or the first fund's) to the current one (or the last fund's). Their
    navigation links stay inside it; a page outside it still answers, but nothing links to it."""

    first_month: str
    last_month: str
    first_quarter: str
    last_quarter: str

    def has_month(self, month: str) -> bool:
        return self.first_month <= month <= self.last_month

    def has_quarter(self, quarter: str) -> bool:
        return self.first_quarter <= quarter <= self.last_quarter


def calendar_reach(*, now: datetime) -> CalendarReach:
    """Three queries. Months and quarters written YYYY-MM and YYYY-Qn compare as text in calendar order."""
    zone = weeks.committee_zone()
    current = now.astimezone(zone).date()
    firsts = [
        ReviewCycle.objects.aggregate(first=Min("starts_at"))["first"],
        UsageRecord.objects.aggregate(first=Min("period_start"))["first"],  # usage reported before any review
    ]
    first_day = min([first.astimezone(zone).date() for first in firsts if first is not None] or [current])
    fund_quarters = sorted(BufferFund.objects.values_list("quarter", flat=True))
    quarters_seen = [quarters.quarter_of_day(first_day), quarters.quarter_of_day(current), *fund_quarters]
    return CalendarReach(
        first_month=monthly.month_label(min(first_day, current)),
        last_month=monthly.month_label(current),
        first_quarter=min(quarters_seen),
        last_quarter=max(quarters_seen),
    )


def executive_month_default(*, now: datetime) -> str:
    """The month an executive most likely wants: the last whole month."""
    today = now.astimezone(weeks.committee_zone()).date()
    return monthly.shift_month(monthly.month_label(today), -1)
