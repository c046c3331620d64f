"""A team's history, week by week: what it asked for, what the committee decided, what the plans placed, what it used,
its fair-share factor and what its use cost. A week sums the team's pools, so its GPU-hours are in the common unit,
A100-equivalent GPU-hours (each pool's GPU-hours × its billing weight that week); the cost is each pool's own GPU-hours
at its price.

The numbers are the dashboards' (reports/dashboards/selectors.py), counted the same way, for one team and a page of
weeks: `HISTORY_WEEKS` ending at a given week, so a team with years of history costs what one with a quarter does
(a fixed number of queries, whatever the page). Decided GPU-hours appear once a week is finalized; before that the
week shows what was asked only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import plotly.graph_objects as go
from django.db.models import Count, F, Sum
from django.utils.translation import gettext as _

from allocations import selectors as allocation_selectors
from allocations.models import GpuPool, Team
from committee import selectors as committee_selectors
from committee import weeks
from committee.models import CycleStatus, FairShareSnapshot, GpuRequest, ReviewCycle
from reports.charts import PALETTE
from reports.dashboards.selectors import (
    REQUESTED_STATUSES,
    DashboardFilter,
    billing_weights,
    decided_gpu_hours,
    in_common_unit,
    placed_gpu_hours,
    q,
    usage_sums,
)
from reports.records import decision_record_slug

HISTORY_WEEKS = 13  # a quarter a page
_DECIDED = (CycleStatus.FINALIZED, CycleStatus.PUBLISHED)


@dataclass(frozen=True)
class TeamWeek:
    """One week of a team's history. None means "not known yet", never zero."""

    week: str
    cycle_status: str  # the cycle's status in words, "" when the week had no cycle
    requests: int
    asked_a100_gpu_hours: Decimal
    decided_a100_gpu_hours: Decimal | None  # None until the week is finalized
    placed_a100_gpu_hours: Decimal
    used_a100_gpu_hours: Decimal | None  # None: nothing reported
    fair_share_factor: Decimal | None  # None: no factor frozen for the week
    cost: Decimal | None  # used GPU-hours × each pool's price per GPU-hour in force that week

    @property
    def decided(self) -> bool:
        return self.decided_a100_gpu_hours is not None

    @property
    def record_slug(self) -> str:
        """The archive page of the week's decision record ("" before the week is finalized)."""
        return decision_record_slug(self.week) if self.decided else ""


@dataclass(frozen=True)
class TeamHistory:
    team: Team
    weeks: tuple[TeamWeek, ...]  # newest first
    newer: str | None  # the `until` week of the next page towards today, None on the latest page
    older: str | None  # the `until` week of the page before

    @property
    def totals(self) -> dict[str, Decimal]:
        def total(values: Sequence[Decimal | None]) -> Decimal:
            return sum((v for v in values if v is not None), Decimal(0))

        return {
            "asked": total([w.asked_a100_gpu_hours for w in self.weeks]),
            "decided": total([w.decided_a100_gpu_hours for w in self.weeks]),
            "placed": total([w.placed_a100_gpu_hours for w in self.weeks]),
            "used": total([w.used_a100_gpu_hours for w in self.weeks]),
            "cost": total([w.cost for w in self.weeks]),
        }


def history_page_weeks(*, until: str, count: int = HISTORY_WEEKS) -> tuple[str, ...]:
    """The `count` ISO weeks ending with `until`, oldest first."""
    last = weeks.parse_week(until)
    return tuple(weeks.week_label(last - timedelta(weeks=count - 1 - i)) for i in range(count))


def team_history(*, team: Team, until: str, now: datetime) -> TeamHistory:
    """The team's page of weeks ending with `until` (an ISO week; pages never run past next week's cycle)."""
    latest = weeks.next_week_label(now)
    if weeks.parse_week(until) > weeks.parse_week(latest):
        until = latest
    week_list = history_page_weeks(until=until)
    filters = DashboardFilter(weeks=week_list)
    team_ids = [team.pk]
    pools = list(GpuPool.objects.select_related("cluster"))
    prices = allocation_selectors.pool_prices_for_weeks(pools=pools, weeks=week_list)  # each week at its own price
    weights = billing_weights(pool_ids=[pool.pk for pool in pools], weeks=week_list)
    decided = in_common_unit(decided_gpu_hours(filters=filters, team_ids=team_ids), weights)
    placed = in_common_unit(placed_gpu_hours(filters=filters, team_ids=team_ids), weights)
    used = usage_sums(filters=filters, team_ids=team_ids)
    cycles = dict(ReviewCycle.objects.filter(week__in=week_list).values_list("week", "status"))
    asked: dict[str, dict[str, Any]] = {}
    for row in (GpuRequest.objects.filter(team=team, cycle__week__in=week_list, status__in=REQUESTED_STATUSES)
                .values("cycle__week", "pool_id")
                .annotate(requests=Count("id"), hours=Sum(F("gpu_count") * F("duration_hours")))
                .order_by()):
        week_asked = asked.setdefault(row["cycle__week"], {"requests": 0, "hours": Decimal(0)})
        week_asked["requests"] += row["requests"]
        week_asked["hours"] += Decimal(row["hours"]) * weights[(row["pool_id"], row["cycle__week"])]
    factors = {
        s.cycle.week: s.share().factor
        for s in FairShareSnapshot.objects.filter(team=team, cycle__week__in=week_list).select_related("cycle")
    }
    rows = []
    for week in week_list:
        status = cycles.get(week)
        week_used = [(pool_id, s.used_gpu_hours) for (w, _t, pool_id), s in used.items() if w == week]
        factor = factors.get(week)
        if factor is None and status == CycleStatus.OPEN:
            # Intake still open: the factor the review would rank with now.
            share = committee_selectors.fair_share_live(as_of=now).get(team.pk)
            factor = share.factor if share is not None else None
        rows.append(
            TeamWeek(
                week=week,
                cycle_status=str(CycleStatus(status).label) if status else "",
                requests=int(asked[week]["requests"]) if week in asked else 0,
                asked_a100_gpu_hours=(q(asked[week]["hours"]) or Decimal(0)) if week in asked else Decimal(0),
                decided_a100_gpu_hours=(
                    q(sum((v for (w, _t, _p), v in decided.items() if w == week), Decimal(0)))
                    if status in _DECIDED else None
                ),
                placed_a100_gpu_hours=q(sum((v for (w, _t, _p), v in placed.items() if w == week), Decimal(0)))
                or Decimal(0),
                used_a100_gpu_hours=q(sum((hours * weights[(p, week)] for p, hours in week_used), Decimal(0)))
                if week_used else None,
                fair_share_factor=q(factor, 3) if factor is not None else None,
                cost=q(sum((hours * prices[(p, week)] for p, hours in week_used), Decimal(0)), 2)
                if week_used else None,
            )
        )
    first = weeks.parse_week(week_list[0])
    last = weeks.parse_week(week_list[-1])
    newer = None
    if last < weeks.parse_week(latest):
        newer = min(weeks.week_label(last + timedelta(weeks=HISTORY_WEEKS)), latest, key=weeks.parse_week)
    has_older = (
        ReviewCycle.objects.filter(requests__team=team, starts_at__lt=weeks.week_bounds(week_list[0])[0]).exists()
        or team.usage_records.filter(period_start__lt=weeks.week_bounds(week_list[0])[0]).exists()
    )
    older = weeks.week_label(first - timedelta(weeks=1)) if has_older else None
    return TeamHistory(team=team, weeks=tuple(reversed(rows)), newer=newer, older=older)


def team_history_figure(history: TeamHistory) -> dict[str, Any]:
    """Bars of GPU-hours asked, decided, placed and used per week, and the fair-share factor on its own axis."""
    rows = list(reversed(history.weeks))  # oldest first, left to right
    xs = [w.week for w in rows]
    figure = go.Figure()
    series = (
        (_("Asked"), [w.asked_a100_gpu_hours for w in rows], "#b0bec5"),
        (_("Decided"), [w.decided_a100_gpu_hours for w in rows], "#90caf9"),
        (_("Placed"), [w.placed_a100_gpu_hours for w in rows], PALETTE[0]),
        (_("Used"), [w.used_a100_gpu_hours for w in rows], PALETTE[1]),
    )
    for name, values, color in series:
        figure.add_bar(
            name=name, x=xs, y=[float(v) if v is not None else None for v in values], marker={"color": color},
            hovertemplate="%{x}: %{y:,.0f} " + _("A100-equivalent GPU-h") + "<extra>" + name + "</extra>",
        )
    figure.add_scatter(
        name=_("Fair-share factor F"), x=xs,
        y=[float(w.fair_share_factor) if w.fair_share_factor is not None else None for w in rows],
        yaxis="y2", mode="lines+markers", line={"color": PALETTE[2]}, connectgaps=True,
        hovertemplate="%{x}: F = %{y:.3f}<extra></extra>",
    )
    figure.update_layout(
        height=360, barmode="group",
        margin={"l": 60, "r": 60, "t": 20, "b": 50},
        legend={"orientation": "h", "y": -0.2},
        font={"family": "system-ui, sans-serif", "size": 12},
        yaxis={"title": {"text": _("A100-equivalent GPU-hours")}, "rangemode": "tozero", "separatethousands": True},
        yaxis2={"title": {"text": _("Fair-share factor F")}, "overlaying": "y", "side": "right",
                "range": [0, 1.05], "dtick": 0.25, "showgrid": False},
    )
    result: dict[str, Any] = json.loads(figure.to_json())
    return result
