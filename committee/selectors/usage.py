"""Last week's usage: what a team stated on its request next to what the schedulers measured."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING

from django.db.models import prefetch_related_objects

from allocations import selectors as allocation_selectors
from allocations.models import GpuPool, Team
from committee import weeks
from committee.models import GpuRequest, ReviewCycle

if TYPE_CHECKING:
    from committee.selectors.review import ReviewRow

# A stated figure further than this from the measured one (relative to the measured one) is flagged.
USAGE_GAP_FLAG_PCT = Decimal(10)


@dataclass(frozen=True)
class UsageComparison:
    """One request's last-week usage: stated by the team, measured by the schedulers (team, pool, week).

    A figure is None when it does not exist: no usage report filed, or nothing measured.
    """

    request_id: int
    week: str
    team_name: str
    pool_key: str
    stated_gpu_hours: Decimal | None
    stated_utilization_pct: Decimal | None
    measured_gpu_hours: Decimal | None
    measured_utilization_pct: Decimal | None

    @property
    def measured(self) -> bool:
        return self.measured_gpu_hours is not None

    @property
    def gap_pct(self) -> Decimal | None:
        """(stated − measured) / measured, in percent: positive when the team stated more than was measured.

        None when either figure is missing or the schedulers measured no GPU-hour at all.
        """
        if self.stated_gpu_hours is None or not self.measured_gpu_hours:
            return None
        return (self.stated_gpu_hours - self.measured_gpu_hours) / self.measured_gpu_hours * 100

    @property
    def gap_label_pct(self) -> int | None:
        """The gap in whole percent, without its sign, for the page (rounded half up)."""
        gap = self.gap_pct
        return None if gap is None else int(abs(gap).quantize(Decimal(1), rounding="ROUND_HALF_UP"))

    @property
    def stated_above(self) -> bool:
        return self.gap_pct is not None and self.gap_pct > 0

    @property
    def flagged(self) -> bool:
        """A gap over USAGE_GAP_FLAG_PCT (exactly 10% is not flagged), or use stated where none was measured."""
        if self.stated_gpu_hours is None or self.measured_gpu_hours is None:
            return False
        if not self.measured_gpu_hours:
            return self.stated_gpu_hours > 0
        gap = self.gap_pct
        return gap is not None and abs(gap) > USAGE_GAP_FLAG_PCT


def measured_usage(*, requests: Iterable[GpuRequest]) -> dict[int, UsageComparison]:
    """Every request's stated usage next to the usage measured for its team on its pool in the week it reports.

    The week is `weeks.reported_usage_week` of the request's cycle (committee time; a record counts in
    the week its period starts in, as for the fair-share factor). The requests come with their team,
    pool, cycle and usage report loaded (select_related); one query for any number of requests.
    """
    requests = list(requests)
    periods = {
        week: weeks.week_bounds(week) for week in {weeks.reported_usage_week(r.cycle.week) for r in requests}
    }
    measured = allocation_selectors.usage_measured_by_team_pool(
        periods=periods, team_ids={r.team_id for r in requests}, pool_ids={r.pool_id for r in requests}
    ) if requests else {}
    comparisons = {}
    for r in requests:
        week = weeks.reported_usage_week(r.cycle.week)
        stated = getattr(r, "usage_report", None)
        found = measured.get((week, r.team_id, r.pool_id))
        comparisons[r.pk] = UsageComparison(
            request_id=r.pk,
            week=week,
            team_name=r.team.name,
            pool_key=r.pool.key,
            stated_gpu_hours=stated.gpu_hours_used if stated is not None else None,
            stated_utilization_pct=stated.mean_utilization_pct if stated is not None else None,
            measured_gpu_hours=found.gpu_hours_used if found is not None else None,
            measured_utilization_pct=found.mean_utilization_pct if found is not None else None,
        )
    return comparisons


@dataclass(frozen=True)
class UsagePrefill:
    """What the request form pre-fills as last week's usage for a team on a pool, and from which week."""

    team: Team
    pool: GpuPool | None
    week: str
    initial: dict[str, Decimal]

    @property
    def measured(self) -> bool:
        return "gpu_hours_used" in self.initial


def usage_prefill(*, team: Team, pool: GpuPool | None, cycle: ReviewCycle) -> UsagePrefill:
    """The usage report a request of `team` on `pool` for `cycle` starts from: granted from Docket's windows,
    used and utilization from the schedulers' records, of the week the request reports. Nothing without a pool
    (the measurement is per pool). Two queries with a pool, none without.
    """
    week = weeks.reported_usage_week(cycle.week)
    if pool is None:
        return UsagePrefill(team=team, pool=None, week=week, initial={})
    since, until = weeks.week_bounds(week)
    initial = allocation_selectors.usage_report_initial(team=team, pool=pool, since=since, until=until)
    return UsagePrefill(team=team, pool=pool, week=week, initial=initial)


def review_rows_measure(*, rows: list[ReviewRow]) -> None:
    """Give each review row its `usage`: stated next to measured (measured_usage). Two queries: the rows'
    usage reports (the ranking does not read them) and the measured usage."""
    requests = [row.request for row in rows]
    prefetch_related_objects(requests, "usage_report")
    comparisons = measured_usage(requests=requests)
    for row in rows:
        row.usage = comparisons[row.request.pk]
