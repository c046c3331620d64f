"""The dashboards page's charts, each a `Table` built from the sums in `selectors`, for who asks (its scope).

`dashboard_tables` gives the charts a viewer may see, in page order; `chart_keys_for` names them. The conventions
(what decided, placed, used and requested mean, how weeks count) are the module docstring of `selectors`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from django.db.models import Count
from django.utils.translation import gettext as _

from allocations import selectors as allocation_selectors
from committee import scoring, weeks
from committee import selectors as committee_selectors
from committee.models import FairShareSnapshot, Score, criterion_label
from reports.dashboards.selectors import (
    Column,
    DashboardFilter,
    DashboardScope,
    Table,
    billing_weights,
    decided_gpu_hours,
    decimal_sum,
    department_name,
    grouped,
    in_common_unit,
    pct,
    placed_gpu_hours,
    q,
    requested_gpu_hours,
    team_ids_for,
    usage_sums,
    week_hours,
)


def _by_department(teams: list[Any]) -> list[Any]:
    """Teams grouped by department (by its name; teams in none first), by name within each."""
    return sorted(teams, key=lambda team: (department_name(team), team.name))


def _team_week_sums(*, scope: DashboardScope, filters: DashboardFilter) -> tuple[list[Any], dict[str, Any]]:
    """The teams a team chart shows (grouped by department) and their A100-equivalent GPU-hours decided, placed and
    used, each keyed (week, team id) to the list of its pools' sums. Four queries, however many teams or departments,
    once per request: the team chart and the department chart read the same."""
    key = ("team-week-sums", filters)
    if key not in scope.shared:
        scope.shared[key] = _team_week_sums_read(scope=scope, filters=filters)
    result: tuple[list[Any], dict[str, Any]] = scope.shared[key]
    return result


def _team_week_sums_read(*, scope: DashboardScope, filters: DashboardFilter) -> tuple[list[Any], dict[str, Any]]:
    team_ids = team_ids_for(scope=scope, filters=filters)
    weights = billing_weights(pool_ids=[pool.pk for pool in filters.pools()], weeks=filters.weeks)
    decided = in_common_unit(decided_gpu_hours(filters=filters, team_ids=team_ids), weights)
    placed = in_common_unit(placed_gpu_hours(filters=filters, team_ids=team_ids), weights)
    used = {key: s.used_gpu_hours * weights[(key[2], key[0])]
            for key, s in usage_sums(filters=filters, team_ids=team_ids).items()}
    teams = _by_department([team for team in scope.teams if team.pk in team_ids])
    return teams, {
        "decided": grouped(decided.items(), lambda k: (k[0], k[1])),
        "placed": grouped(placed.items(), lambda k: (k[0], k[1])),
        "used": grouped(used.items(), lambda k: (k[0], k[1])),
    }


def _decided_placed_used(sums: dict[str, Any], keys: list[Any]) -> tuple[Any, ...]:
    """Decided, placed and used (None: nothing reported yet) summed over `keys`, and used as a share of placed."""
    d = decimal_sum(h for key in keys for h in sums["decided"].get(key, []))
    p = decimal_sum(h for key in keys for h in sums["placed"].get(key, []))
    reported = [h for key in keys for h in sums["used"].get(key, [])]
    u = decimal_sum(reported) if reported else None
    return q(d), q(p), q(u), pct(u, p)


def granted_vs_used(*, scope: DashboardScope, filters: DashboardFilter) -> Table:
    """Per week and team (grouped by department): A100-equivalent GPU-hours decided (grants), placed (windows), used
    (reported), used as a share of placed. A team's week sums its pools, so it counts in the common unit."""
    teams, sums = _team_week_sums(scope=scope, filters=filters)
    rows = [(week, department_name(team), team.name, *_decided_placed_used(sums, [(week, team.pk)]))
            for week in filters.weeks for team in teams]
    return Table(
        key="granted-used",
        title=_("A100-equivalent GPU-hours decided, placed and used, per team and week"),
        columns=(
            Column("week", _("Week")),
            Column("department", _("Department")),
            Column("team", _("Team")),
            Column("decided_a100_gpu_hours", _("Decided A100-eq GPU-h")),
            Column("placed_a100_gpu_hours", _("Placed A100-eq GPU-h")),
            Column("used_a100_gpu_hours", _("Used A100-eq GPU-h")),
            Column("used_pct", _("Share of placed GPU-hours used %")),
        ),
        rows=tuple(rows),
        note=_("A team's week sums its pools in A100-equivalent GPU-hours: each pool's GPU-hours × its billing "
               "weight that week. Decided: the committee's grants (GPUs × duration). Placed: the windows of the "
               "current plans. Used: what the schedulers reported."),
    )


def department_granted_vs_used(*, scope: DashboardScope, filters: DashboardFilter) -> Table:
    """Per week and department: the team chart's A100-equivalent GPU-hours summed over each department's teams (the
    teams in none together, as "No department"). The committee's: a department's total counts teams a member of one
    of them does not see."""
    if not scope.committee:
        raise PermissionError("the departments' totals are the committee's")
    teams, sums = _team_week_sums(scope=scope, filters=filters)
    departments: dict[str, list[int]] = {}
    for team in teams:
        departments.setdefault(department_name(team), []).append(team.pk)
    rows = [(week, name or _("No department"), len(team_ids),
             *_decided_placed_used(sums, [(week, pk) for pk in team_ids]))
            for week in filters.weeks for name, team_ids in departments.items()]
    return Table(
        key="department-used",
        title=_("A100-equivalent GPU-hours decided, placed and used, per department and week"),
        columns=(
            Column("week", _("Week")),
            Column("department", _("Department")),
            Column("teams", _("Teams")),
            Column("decided_a100_gpu_hours", _("Decided A100-eq GPU-h")),
            Column("placed_a100_gpu_hours", _("Placed A100-eq GPU-h")),
            Column("used_a100_gpu_hours", _("Used A100-eq GPU-h")),
            Column("used_pct", _("Share of placed GPU-hours used %")),
        ),
        rows=tuple(rows),
        note=_("Each department's teams summed, in A100-equivalent GPU-hours (each pool's GPU-hours × its billing "
               "weight that week); the teams in no department are one row. The team chart above has each team."),
    )


def _pool_team_filter(*, scope: DashboardScope, filters: DashboardFilter) -> set[int] | None:
    """A pool chart counts every team's use, unless a team or a department is chosen (of those the viewer sees)."""
    if filters.team is None and filters.department is None:
        return None
    return team_ids_for(scope=scope, filters=filters)


def _usage_per_week_and_pool(
    *, scope: DashboardScope, filters: DashboardFilter
) -> Iterator[tuple[str, Any, list[Any]]]:
    """(week, pool, that pool's usage sums of that week) for every week and chosen pool, in order."""
    used = usage_sums(filters=filters, team_ids=_pool_team_filter(scope=scope, filters=filters))
    used_by = grouped(used.items(), lambda k: (k[0], k[2]))
    pools = list(filters.pools())
    for week in filters.weeks:
        for pool in pools:
            yield week, pool, used_by.get((week, pool.pk), [])


# Two figures are both called "utilization" elsewhere; each has its own chart and its own words here (and in
# docs/dashboards.md): the share of pool capacity used (GPU-hours used ÷ the pool's GPU-hours) and how busy the
# GPUs were while a job held them (the schedulers' figure). They never share a chart or a name.


def utilization_per_pool(*, scope: DashboardScope, filters: DashboardFilter) -> Table:
    """Per week and pool: capacity, GPU-hours used, and the share of the pool's capacity used."""
    rows = []
    for week, pool, sums in _usage_per_week_and_pool(scope=scope, filters=filters):
        hours = decimal_sum(s.used_gpu_hours for s in sums)
        capacity = pool.gpu_count * week_hours(week)
        reported = hours if sums else None  # None: nothing reported for the week (yet)
        rows.append((week, pool.key, q(capacity), q(reported), pct(reported, capacity)))
    return Table(
        key="utilization",
        title=_("Share of pool capacity used, per pool"),
        columns=(
            Column("week", _("Week")),
            Column("pool", _("Pool")),
            Column("capacity_gpu_hours", _("Capacity GPU-h")),
            Column("used_gpu_hours", _("Used GPU-h")),
            Column("used_of_capacity_pct", _("Share of pool capacity used %")),
        ),
        rows=tuple(rows),
        note=_("GPU-hours the schedulers reported used ÷ the pool's GPU-hours (GPUs × hours of the week)."),
    )


def gpu_busy_per_pool(*, scope: DashboardScope, filters: DashboardFilter) -> Table:
    """Per week and pool: how busy the GPUs were while jobs held them, the schedulers' figure."""
    rows = []
    for week, pool, sums in _usage_per_week_and_pool(scope=scope, filters=filters):
        hours = decimal_sum(s.used_gpu_hours for s in sums)
        mean = decimal_sum(s.utilization_weighted for s in sums) / hours if hours else None
        rows.append((week, pool.key, q(hours if sums else None), q(mean)))
    return Table(
        key="gpu-busy",
        title=_("GPU busy time while in use, per pool"),
        columns=(
            Column("week", _("Week")),
            Column("pool", _("Pool")),
            Column("used_gpu_hours", _("Used GPU-h")),
            Column("mean_utilization_pct", _("GPU busy time %")),
        ),
        rows=tuple(rows),
        note=_("The schedulers' measure of how busy each GPU was while a job held it, weighted by GPU-hours used. "
               "It says nothing of the GPUs no job held: that is the share of pool capacity used."),
    )


def queue_wait(*, scope: DashboardScope, filters: DashboardFilter) -> Table:
    """Per week and pool: the mean queue wait the schedulers reported, weighted by GPU-hours used."""
    rows = []
    for week, pool, sums in _usage_per_week_and_pool(scope=scope, filters=filters):
        records = sum(s.records for s in sums)
        hours = decimal_sum(s.used_gpu_hours for s in sums)
        if hours:
            mean = decimal_sum(s.wait_weighted for s in sums) / hours
        elif records:
            mean = decimal_sum(s.wait_plain for s in sums) / records
        else:
            mean = None
        rows.append((week, pool.key, q(mean), records))
    return Table(
        key="queue-wait",
        title=_("Queue wait per pool (minutes)"),
        columns=(
            Column("week", _("Week")),
            Column("pool", _("Pool")),
            Column("mean_queue_wait_minutes", _("Mean queue wait (min)")),
            Column("usage_records", _("Measured usage records")),
        ),
        rows=tuple(rows),
        note=_("Weighted by GPU-hours used; a measured usage record with no GPU-hours counts once."),
    )


def demand_vs_capacity(*, scope: DashboardScope, filters: DashboardFilter) -> Table:
    """Per week, over the chosen pools: A100-equivalent GPU-hours requested, decided, placed, and the allocatable
    capacity (a total over pools: each pool's GPU-hours × its billing weight that week)."""
    team_ids = _pool_team_filter(scope=scope, filters=filters)
    pools = allocation_selectors.pool_reserves_now(filters.pools())
    weights = billing_weights(pool_ids=[pool.pk for pool in pools], weeks=filters.weeks)
    requested = {(week, pool): hours * weights[(pool, week)]
                 for (week, pool), hours in requested_gpu_hours(filters=filters, team_ids=team_ids).items()}
    decided = in_common_unit(decided_gpu_hours(filters=filters, team_ids=team_ids), weights)
    placed = in_common_unit(placed_gpu_hours(filters=filters, team_ids=team_ids), weights)
    asked_by = grouped(requested.items(), lambda k: k[0])
    decided_by = grouped(decided.items(), lambda k: k[0])
    placed_by = grouped(placed.items(), lambda k: k[0])
    rows = []
    for week in filters.weeks:
        asked = decimal_sum(asked_by.get(week, []))
        hours = int(week_hours(week))
        capacity = decimal_sum(
            allocation_selectors.pool_week_capacity(pool=p, hours=hours).allocatable_gpu_hours * weights[(p.pk, week)]
            for p in pools
        )
        rows.append((week, q(asked), q(decimal_sum(decided_by.get(week, []))), q(decimal_sum(placed_by.get(week, []))),
                     q(capacity), pct(asked, capacity)))
    return Table(
        key="demand-capacity",
        title=_("Demand vs capacity per week, in A100-equivalent GPU-hours"),
        columns=(
            Column("week", _("Week")),
            Column("requested_a100_gpu_hours", _("Requested A100-eq GPU-h")),
            Column("decided_a100_gpu_hours", _("Decided A100-eq GPU-h")),
            Column("placed_a100_gpu_hours", _("Placed A100-eq GPU-h")),
            Column("allocatable_a100_gpu_hours", _("Allocatable A100-eq GPU-h")),
            Column("demand_pct", _("Requested / allocatable %")),
        ),
        rows=tuple(rows),
        note=_(
            "Totals over the pools in A100-equivalent GPU-hours: each pool's GPU-hours × its billing weight that "
            "week. Decided: the committee's grants (GPUs × duration); placed: the windows of the current plans. "
            "Allocatable: what the allocation engine can place, the pools' GPU-hours less the cold standby "
            "(in whole GPUs; the burst reserve included)."
        ),
    )


def fair_share_history(*, scope: DashboardScope, filters: DashboardFilter) -> Table:
    """Per week and team: the fair-share factor F = 2^(−U/S) the week's review ranks (or would rank) with.

    Where the week's cycle froze its factors when intake closed, those; otherwise computed now, with
    committee.scoring, from the usage reported before that week's intake closed. Fair share counts
    every pool, so the cluster and pool filters do not change it.
    """
    team_ids = team_ids_for(scope=scope, filters=filters)
    frozen: dict[str, dict[int, scoring.FairShare]] = {}
    for snapshot in FairShareSnapshot.objects.filter(cycle__week__in=filters.weeks).select_related("cycle"):
        frozen.setdefault(snapshot.cycle.week, {})[snapshot.team_id] = snapshot.share()
    rows = []
    for week in filters.weeks:
        if week in frozen:
            shares, basis = frozen[week], _("frozen at intake close")
        else:
            as_of = weeks.cycle_schedule(week)["intake_closes_at"]
            shares, basis = committee_selectors.fair_share_live(as_of=as_of), _("computed")
        for team in _by_department(list(scope.teams)):
            share = shares.get(team.pk)
            if team.pk not in team_ids or share is None:
                continue
            rows.append((week, department_name(team), team.name, q(share.factor, 3), q(100 * share.usage_share),
                         q(100 * share.entitled_share), basis))
    return Table(
        key="fair-share",
        title=_("Fair-share factor per team"),
        columns=(
            Column("week", _("Week")),
            Column("department", _("Department")),
            Column("team", _("Team")),
            Column("factor", _("Factor F")),
            Column("usage_share_pct", _("Usage share U %")),
            Column("entitled_share_pct", _("Entitled share S %")),
            Column("basis", _("Basis")),
        ),
        rows=tuple(rows),
        note=_("F = 2^(−U/S): 1 for a team that used nothing, ½ for one that used exactly its share. All pools count."),
    )


def score_distribution(*, scope: DashboardScope, filters: DashboardFilter) -> Table:
    """How often each score 0–10 was given, per member-scored criterion, to the weeks' requests (committee only)."""
    if not scope.committee:
        raise PermissionError("the distribution of members' scores is the committee's")
    scores = Score.objects.filter(request__cycle__week__in=filters.weeks, request__pool__in=filters.pools())
    if filters.team is not None:
        scores = scores.filter(request__team=filters.team)
    counts = {
        (row["criterion"], row["value"]): row["n"]
        for row in scores.values("criterion", "value").annotate(n=Count("id")).order_by()
    }
    rows = [
        (criterion_label(criterion), value, counts.get((criterion, value), 0))
        for criterion in scoring.MEMBER_SCORED
        for value in range(scoring.SCORE_MIN, scoring.SCORE_MAX + 1)
    ]
    return Table(
        key="scores",
        title=_("Distribution of scores per criterion"),
        columns=(Column("criterion", _("Criterion")), Column("score", _("Score")), Column("count", _("Scores given"))),
        rows=tuple(rows),
        note=_("Members' scores of the weeks' requests; fairness is computed, not scored."),
    )


CHARTS = {
    "granted-used": granted_vs_used,
    "department-used": department_granted_vs_used,
    "utilization": utilization_per_pool,
    "gpu-busy": gpu_busy_per_pool,
    "queue-wait": queue_wait,
    "demand-capacity": demand_vs_capacity,
    "fair-share": fair_share_history,
    "scores": score_distribution,
}
TEAM_CHARTS = ("granted-used", "fair-share")
COMMITTEE_CHARTS = ("department-used", "scores")


def chart_keys_for(*, scope: DashboardScope) -> list[str]:
    """The charts a viewer sees, in page order."""
    keys = []
    for key in CHARTS:
        if key in COMMITTEE_CHARTS and not scope.committee:
            continue
        if key in TEAM_CHARTS and not scope.teams:
            continue
        keys.append(key)
    return keys


def dashboard_tables(
    *, scope: DashboardScope, filters: DashboardFilter, keys: Sequence[str] | None = None
) -> list[Table]:
    allowed = chart_keys_for(scope=scope)
    return [CHARTS[key](scope=scope, filters=filters) for key in (keys or allowed) if key in allowed]
