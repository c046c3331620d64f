"""Fair-share factors from the usage reported in the trailing weeks."""

from __future__ import annotations

from datetime import datetime

from django.utils import timezone

from allocations import selectors as allocation_selectors
from allocations.models import Team
from committee import scoring, weeks
from committee.models import (
    ReviewCycle,
)
from committee.selectors.governance import governance_for_week


def fair_share_live(*, as_of: datetime, week: str | None = None) -> dict[int, scoring.FairShare]:
    """Every team's fair-share factor from the usage reported in the trailing weeks before `as_of`, in the common
    unit and over the org chart (department → team), as committee.scoring.fair_shares computes it. Five queries.

    The half-life and the trailing window are the governance version's in force for `week` (a cycle's week), by
    default the week `as_of` falls in.
    """
    rules = governance_for_week(week=week or weeks.current_week_label(as_of))
    teams = list(Team.objects.values_list("id", "fair_share_weight", "department_id", "department__fair_share_weight"))
    weights = {team_id: weight for team_id, weight, _dept, _dept_weight in teams}
    departments = {team_id: (dept, dept_weight) for team_id, _w, dept, dept_weight in teams if dept is not None}
    weekly = allocation_selectors.usage_gpu_hours_by_team_per_week(until=as_of, weeks=rules.fairshare_trailing_weeks)
    decayed = scoring.decayed_usage(weekly_usage=weekly, half_life_weeks=rules.fairshare_half_life_weeks)
    return scoring.fair_shares(decayed=decayed, weights=weights, departments=departments)


def fair_share_for_cycle(*, cycle: ReviewCycle) -> dict[int, scoring.FairShare]:
    """The factors a cycle is ranked with: frozen when intake closed; live (as of now) while it is open."""
    snapshots = list(cycle.fair_shares.all())
    if snapshots:
        return {s.team_id: s.share() for s in snapshots}
    return fair_share_live(as_of=cycle.intake_closed_at or timezone.now(), week=cycle.week)
