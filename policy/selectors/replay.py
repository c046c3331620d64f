"""The archived inputs of a replay: the last N finalized or published weeks, as plain data.

`replay_inputs_load` reads them in a fixed number of queries (at most sixteen), whatever the number of weeks
or requests; policy.replay.replay computes on what it returns. `replay_parameters` is what the
override parser checks against: the rubric and pools in force this week.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.utils import timezone

from allocations import engine
from allocations import selectors as allocation_selectors
from allocations.commitments import RunWeek
from allocations.models import (
    PLACED_STATES,
    AllocationPlan,
    AllocationWindow,
    Cluster,
    Department,
    GpuPool,
    Team,
    UsageRecord,
    WindowTier,
)
from allocations.selectors import committed_week
from committee import scoring
from committee.models import (
    PLACING_OUTCOMES,
    CycleStatus,
    DecisionCorrection,
    DecisionOutcome,
    FairShareSnapshot,
    GpuRequest,
    RequestStatus,
    ReviewCycle,
    Score,
)
from committee.selectors import decision_demand, pool_options_prefetch, run_later_weeks
from committee.selectors.governance import GOVERNANCE_KEYS
from committee.weeks import current_week_label, week_bounds
from core.datetimes import format_isoweek
from governed import params
from governed.selectors import Setting, policy_settings_for_weeks, policy_values
from policy.replay import ActualWindow, ArchivedCommitment, ReplayInputs, ReplayRequest, UsageRow, WeekInputs
from policy.replay.overrides import MAX_FAIRSHARE_WEEKS, PoolReserves

REPLAYED_STATUSES = (CycleStatus.FINALIZED, CycleStatus.PUBLISHED)
GRANT_OUTCOMES = PLACING_OUTCOMES
AUTO_DEFER_NAME = "Docket"  # committee.services.review.AUTO_DEFER_NAME


def replay_parameters() -> tuple[dict[str, int], list[PoolReserves], list[str]]:
    """The rubric's weights and every pool's reserves in force this week (the one store, governed), the elastic
    policy's parameters. Three queries."""
    values = policy_values(week=current_week_label(timezone.now()))
    weights = {c: params.as_int(values.get(params.RUBRIC_PREFIX + c, 0)) for c in scoring.CRITERIA}
    pools = [
        PoolReserves(key=p.key, slug=p.slug, burst_reserve_pct=_reserve(values, p.key, "burst_reserve_pct"),
                     standby_pct=_reserve(values, p.key, "standby_pct"))
        for p in GpuPool.objects.select_related("cluster").order_by("cluster__slug", "slug")
    ]
    elastic = [p.key.removeprefix(params.ELASTIC_PREFIX) for p in params.PARAMS
               if p.key.startswith(params.ELASTIC_PREFIX)]
    return weights, pools, elastic


def _reserve(values: Mapping[str, object], pool_key: str, field: str) -> int:
    """A pool's reserve (`field`) among the values in force, else its declared default."""
    key = f"{params.POOL_PREFIX}{pool_key}.{field}"
    value = values.get(key)
    if value is None:
        found = params.param_for(key)
        value = found[0].default() if found and found[0].default else 0
    return params.as_int(value)


def replay_cycles(*, before: datetime, weeks: int) -> list[ReviewCycle]:
    """The last `weeks` finalized or published cycles whose week starts before `before`, oldest first."""
    cycles = list(
        ReviewCycle.objects.filter(status__in=REPLAYED_STATUSES, starts_at__lt=before)
        .order_by("-starts_at")[:weeks]
    )
    return cycles[::-1]


def replay_before(*, week: str | None, now: datetime | None = None) -> datetime:
    """The instant a replay stops before: the start of `week`; without one, two weeks from `now`, so that every
    decided week counts, next week's too once it is finalized."""
    if week is not None:
        return week_bounds(week)[0]
    return (now or timezone.now()) + timedelta(days=14)


def _placed_at(cycle: ReviewCycle, first_plan: AllocationPlan | None) -> datetime:
    if first_plan is not None:
        return first_plan.published_at
    return cycle.finalized_at or cycle.starts_at


def _pools_as_of(
    *, history: dict[int, list[object]], current: dict[int, GpuPool], clusters: dict[int, str], as_of: datetime,
    reserves: Mapping[str, Setting],
) -> tuple[engine.PoolCapacity, ...]:
    """Every pool as it was at `as_of`, by its history rows (sorted by date): the last row by then (none if
    that row is its deletion), else its first row; a pool without history rows is as it is now. Its reserves are
    those in force in the replayed week (`reserves`, from the one store), never its history's."""
    pools = []
    for pool_id in sorted(set(history) | set(current)):
        rows = history.get(pool_id, [])
        before = [row for row in rows if row.history_date <= as_of]  # type: ignore[attr-defined]
        state: object | None
        if before:
            state = before[-1]
            if state.history_type == "-":  # type: ignore[attr-defined]
                continue
        elif rows:
            # First recorded after the week was placed (created later, or its history started later, as
            # `populate_history` does for existing rows): as first recorded. A pool created after the week
            # has none of its requests anyway.
            state = rows[0]
        else:
            state = current.get(pool_id)
            if state is None:
                continue
        key = f"{clusters[state.cluster_id]}/{state.slug}"  # type: ignore[attr-defined]
        in_force = {k: s.value for k, s in reserves.items()}
        pools.append(
            engine.PoolCapacity(
                key=key,
                gpu_count=state.gpu_count,  # type: ignore[attr-defined]
                gpu_model=state.gpu_model,  # type: ignore[attr-defined]
                burst_reserve_pct=_reserve(in_force, key, "burst_reserve_pct"),
                standby_pct=_reserve(in_force, key, "standby_pct"),
            )
        )
    return tuple(sorted(pools, key=lambda p: p.key))


def _plan_windows(
    *, plan: AllocationPlan, windows: list[AllocationWindow], emergencies: set[int]
) -> tuple[ActualWindow, ...]:
    held = []
    for w in windows:
        if w.created_seq > plan.change_seq:
            continue
        withdrawal = getattr(w, "withdrawal", None)
        if withdrawal is not None and withdrawal.change_seq <= plan.change_seq:
            continue
        held.append(
            ActualWindow(
                ref=w.request_ref,
                pool=w.pool.key,
                gpu_count=w.gpu_count,
                start=w.start,
                end=w.end,
                tier=w.tier,
                team_id=w.team_id,
                team_name=w.team.name,
                emergency=w.request_ref in emergencies,
            )
        )
    return tuple(sorted(held, key=lambda w: (w.pool, w.start, w.ref or 0)))


@dataclass(frozen=True)
class OrgChart:
    """The org chart now (team id → (its department id or None, its fair-share weight); department id → weight) and
    the history rows of both, each (id, date, type, value) sorted by date: a team's (department, weight), a
    department's weight."""

    teams: Mapping[int, tuple[int | None, int]]
    departments: Mapping[int, int]
    team_history: Mapping[int, list[tuple[datetime, str, Any]]]
    department_history: Mapping[int, list[tuple[datetime, str, Any]]]

    @staticmethod
    def _as_of(rows: list[tuple[datetime, str, Any]], as_of: datetime) -> tuple[bool, Any] | None:
        """(exists, value) by the last row by then, else the first row (history begun later: as first recorded);
        None without rows."""
        before = [row for row in rows if row[0] <= as_of]
        if before:
            return before[-1][1] != "-", before[-1][2]
        return (True, rows[0][2]) if rows else None

    def _teams_as_of(self, as_of: datetime) -> dict[int, tuple[int | None, int]]:
        """Team id → (department id or None, fair-share weight) at `as_of` of every team but those deleted by then;
        one first recorded later is as first recorded (the pools' rule: seeded or imported rows are recorded after
        the weeks they took part in), one without history rows as it is now."""
        out: dict[int, tuple[int | None, int]] = {}
        for team_id in sorted(set(self.teams) | set(self.team_history)):
            state = self._as_of(self.team_history.get(team_id, []), as_of)
            exists, place = state if state is not None else (True, self.teams.get(team_id))
            if exists and place is not None:
                out[team_id] = place
        return out

    def team_weights(self, *, as_of: datetime) -> dict[int, int]:
        """Team id → its fair-share weight at `as_of` (a week with no frozen fair share is replayed with these, never
        today's)."""
        return {team_id: weight for team_id, (_dept, weight) in self._teams_as_of(as_of).items()}

    def team_departments(self, *, as_of: datetime) -> dict[int, tuple[int, int]]:
        """Team id → (department id, the department's weight) at `as_of`, as `committee.scoring.fair_shares` reads
        them; a team in no department then is absent."""
        out: dict[int, tuple[int, int]] = {}
        for team_id, (dept, _weight) in self._teams_as_of(as_of).items():
            if dept is None:
                continue
            dept_state = self._as_of(self.department_history.get(dept, []), as_of)
            dept_exists, weight = dept_state if dept_state is not None else (True, self.departments.get(dept))
            if dept_exists and weight:
                out[team_id] = (dept, weight)
        return out


def _history_rows(rows: Iterable[tuple[Any, ...]]) -> dict[int, list[tuple[datetime, str, Any]]]:
    """History rows (id, date, type, value…) by id: (date, type, value), or (date, type, (values…)) for several."""
    by_id: dict[int, list[tuple[datetime, str, Any]]] = defaultdict(list)
    for pk, date, kind, *values in rows:
        by_id[pk].append((date, kind, values[0] if len(values) == 1 else tuple(values)))
    return by_id


def replay_inputs_load(*, before: datetime, weeks: int, usage_weeks: int | None = None) -> ReplayInputs:
    """The archived inputs of the last `weeks` decided weeks before `before`: at most 19 queries, any N or size.

    Each week carries the quorum, fair-share rules, rubric weights and pool reserves in force in it (the one store,
    governed), and the org chart (each team's department and its weight) as it stood when its fair share was taken
    (the policy history), so a week replayed after a rule changed, or a team moved, is replayed as it was.
    `usage_weeks` is how far back usage is read before each week's intake close (for a recomputed fair share): the
    longest trailing window of those weeks by default; a replay that overrides it passes its value.
    """
    trailing = settings.DOCKET_FAIRSHARE_TRAILING_WEEKS
    cycles = replay_cycles(before=before, weeks=weeks)  # 1
    if not cycles:
        return ReplayInputs(
            weeks=(),
            quorum=settings.DOCKET_SCORE_QUORUM,
            half_life_weeks=settings.DOCKET_FAIRSHARE_HALF_LIFE_WEEKS,
            trailing_weeks=trailing,
            time_zone=settings.TIME_ZONE,
        )
    cycle_ids = [c.pk for c in cycles]
    requests = list(  # 2
        GpuRequest.objects.filter(
            cycle_id__in=cycle_ids,
            status__in=(RequestStatus.SUBMITTED, RequestStatus.DECIDED),
            is_emergency=False,
        )
        .select_related("team", "pool__cluster", "impact_forecast", "decision")
        .prefetch_related(pool_options_prefetch("pool_options"))  # decision_demand's other pools
        .order_by("submitted_at", "id")
    )
    # The scores as plain values: a prefetch would build a queryset and a model per score (21,600 for a
    # week of 300 requests and 8 weeks), ten times slower for the same three numbers.
    scores: dict[int, dict[str, list[int]]] = defaultdict(lambda: {c: [] for c in scoring.MEMBER_SCORED})
    for request_id, criterion, value in (  # 3
        Score.objects.filter(request__cycle_id__in=cycle_ids, criterion__in=scoring.MEMBER_SCORED)
        .order_by("request_id", "criterion", "member_name", "id")
        .values_list("request_id", "criterion", "value")
    ):
        scores[request_id][criterion].append(value)
    corrected = set(  # 4
        DecisionCorrection.objects.filter(decision__cycle_id__in=cycle_ids).values_list(
            "decision__request_id", flat=True
        )
    )
    snapshots: dict[int, list[FairShareSnapshot]] = defaultdict(list)
    for snapshot in FairShareSnapshot.objects.filter(cycle_id__in=cycle_ids).order_by("team_id"):  # 5
        snapshots[snapshot.cycle_id].append(snapshot)
    team_rows = list(Team.objects.values_list(  # 6
        "id", "fair_share_weight", "department_id", "department__fair_share_weight"))
    # The org chart as each week had it: its history (the policy history) and, for a row without any, as it is now.
    org_chart = OrgChart(
        teams={team_id: (dept, weight) for team_id, weight, dept, _dw in team_rows},
        departments={dept: dept_weight for _t, _w, dept, dept_weight in team_rows if dept},
        team_history=_history_rows(Team.history.values_list(  # 6b
            "id", "history_date", "history_type", "department_id", "fair_share_weight",
        ).order_by("history_date", "history_id")),
        department_history=_history_rows(Department.history.values_list(  # 6c
            "id", "history_date", "history_type", "fair_share_weight").order_by("history_date", "history_id")),
    )
    clusters = dict(Cluster.objects.values_list("id", "slug"))  # 7
    current_pools = {p.pk: p for p in GpuPool.objects.all()}  # 8
    history: dict[int, list[object]] = defaultdict(list)
    for row in GpuPool.history.order_by("history_date", "history_id"):  # 9
        history[row.id].append(row)
    # The rules, the rubric and the pools' reserves in force in each week, from the one store.
    pool_keys = tuple(sorted({
        f"{params.POOL_PREFIX}{clusters[state.cluster_id]}/{state.slug}.{field}"  # type: ignore[attr-defined]
        for state in [*current_pools.values(), *(row for rows in history.values() for row in rows)]
        for field in params.POOL_FIELDS if state.cluster_id in clusters  # type: ignore[attr-defined]
    }))
    rubric_keys = tuple(params.RUBRIC_PREFIX + c for c in scoring.CRITERIA)
    rules = policy_settings_for_weeks(weeks=[c.week for c in cycles],
                                      keys=GOVERNANCE_KEYS + rubric_keys + pool_keys)  # 14
    trailing = max([params.as_int(r[params.FAIRSHARE_TRAILING].value) for r in rules.values()
                    if params.FAIRSHARE_TRAILING in r] or [trailing])
    usage_weeks = min(max(usage_weeks or trailing, trailing), MAX_FAIRSHARE_WEEKS * 10)
    weeks_labels = [c.week for c in cycles]
    plans: dict[str, list[AllocationPlan]] = defaultdict(list)
    for plan in AllocationPlan.objects.filter(week__in=weeks_labels).order_by("version"):  # 10
        plans[plan.week].append(plan)
    windows: dict[str, list[AllocationWindow]] = defaultdict(list)
    window_rows = list(  # 11
        AllocationWindow.objects.filter(week__in=weeks_labels)
        .select_related("pool__cluster", "team", "withdrawal")
        .order_by("id")
    )
    refs = {w.request_ref for w in window_rows if w.request_ref is not None}
    emergencies = set(  # 12
        GpuRequest.objects.filter(pk__in=refs, is_emergency=True).values_list("pk", flat=True)
    ) if refs else set()
    for w in window_rows:
        windows[w.week].append(w)
    held: dict[str, list[ArchivedCommitment]] = defaultdict(list)
    for commitment in allocation_selectors.commitment_list_for_weeks(weeks=weeks_labels):  # 17
        held[commitment.week].append(ArchivedCommitment(
            week=committed_week(commitment=commitment), placed=commitment.state in PLACED_STATES,
            settled=commitment.settled_at is not None))
    as_ofs = {c.pk: (c.intake_closed_at or c.starts_at) for c in cycles}
    earliest = min(as_ofs.values()) - timedelta(weeks=usage_weeks, days=1)
    latest = max(as_ofs.values())
    usage_rows = list(  # 13
        UsageRecord.objects.filter(period_start__gte=earliest, period_start__lt=latest)
        .order_by("period_start", "id")
        .values_list("team_id", "pool_id", "window__tier", "period_start", "reported_at", "gpu_hours_used")
    )
    # Counted as fair share counts them: the common unit and the lent-usage factor of the week measured (15, 16).
    factors = allocation_selectors.usage_counted_factors(
        keys={(pool_id, format_isoweek(start)) for _t, pool_id, _tier, start, _r, _h in usage_rows})
    usage = tuple(
        UsageRow(team_id=team_id, period_start=start, reported_at=reported,
                 gpu_hours=hours * factors[(pool_id, format_isoweek(start))][0]
                 * (factors[(pool_id, format_isoweek(start))][1] if tier == WindowTier.PREEMPTIBLE else 1))
        for team_id, pool_id, tier, start, reported, hours in usage_rows
    )

    by_cycle: dict[int, list[GpuRequest]] = defaultdict(list)
    for r in requests:
        by_cycle[r.cycle_id].append(r)
    week_inputs = []
    for cycle in cycles:
        cycle_plans = plans.get(cycle.week, [])
        first_plan = cycle_plans[0] if cycle_plans else None
        current_plan = cycle_plans[-1] if cycle_plans else None
        frozen = snapshots.get(cycle.pk, [])
        in_force = rules.get(cycle.week, {})
        week_rules = _week_rules({k: s.value for k, s in in_force.items()})
        rubric = [in_force[k] for k in rubric_keys if k in in_force]
        week_inputs.append(
            WeekInputs(
                week=cycle.week,
                starts_at=cycle.starts_at,
                hours=cycle.hours,
                weights={c: params.as_int(in_force[k].value) if k in in_force else scoring.DEFAULT_WEIGHTS.get(c, 0)
                         for c, k in zip(scoring.CRITERIA, rubric_keys, strict=True)},
                rubric_version=max(rubric, key=lambda s: s.order).number if rubric else 1,
                fair_shares={s.team_id: s.share() for s in frozen},
                fair_share_as_of=frozen[0].as_of if frozen else as_ofs[cycle.pk],
                team_weights=({s.team_id: s.weight for s in frozen} if frozen
                              else org_chart.team_weights(as_of=as_ofs[cycle.pk])),
                pools=_pools_as_of(
                    history=history, current=current_pools, clusters=clusters, as_of=_placed_at(cycle, first_plan),
                    reserves={k: s for k, s in in_force.items() if k.startswith(params.POOL_PREFIX)},
                ),
                requests=tuple(
                    _replay_request(r, week=cycle.week, scores=scores[r.pk], corrected=corrected)
                    for r in by_cycle.get(cycle.pk, [])
                ),
                commitments=tuple(held.get(cycle.week, ())),
                first_plan=(
                    _plan_windows(plan=first_plan, windows=windows[cycle.week], emergencies=emergencies)
                    if first_plan
                    else ()
                ),
                current_plan=(
                    _plan_windows(plan=current_plan, windows=windows[cycle.week], emergencies=emergencies)
                    if current_plan
                    else ()
                ),
                plan_version=current_plan.version if current_plan else None,
                quorum=week_rules[0],
                half_life_weeks=week_rules[1],
                trailing_weeks=week_rules[2],
                team_departments=org_chart.team_departments(
                as_of=frozen[0].as_of if frozen else as_ofs[cycle.pk]),
            )
        )
    return ReplayInputs(
        weeks=tuple(week_inputs),
        quorum=settings.DOCKET_SCORE_QUORUM,
        half_life_weeks=settings.DOCKET_FAIRSHARE_HALF_LIFE_WEEKS,
        trailing_weeks=trailing,
        time_zone=settings.TIME_ZONE,
        usage=usage,
    )


def _week_rules(values: Mapping[str, object]) -> tuple[int, float, int]:
    """The quorum, half-life and trailing window a week had; the settings' where no row sets one."""
    return (
        params.as_int(values.get(params.QUORUM, settings.DOCKET_SCORE_QUORUM)),
        params.as_float(values.get(params.FAIRSHARE_HALF_LIFE, settings.DOCKET_FAIRSHARE_HALF_LIFE_WEEKS)),
        params.as_int(values.get(params.FAIRSHARE_TRAILING, settings.DOCKET_FAIRSHARE_TRAILING_WEEKS)),
    )


def _replay_request(
    r: GpuRequest, *, week: str, scores: dict[str, list[int]], corrected: set[int]
) -> ReplayRequest:
    decision = getattr(r, "decision", None)
    demand = None
    later_weeks: list[RunWeek] = []
    if decision is not None and decision.outcome in GRANT_OUTCOMES:
        decision.request = r  # decision_demand reads it: already loaded, no query
        demand = decision_demand(decision=decision)
        later_weeks = run_later_weeks(week=week, weeks_granted=decision.weeks_granted)
    forecast = getattr(r, "impact_forecast", None)
    return ReplayRequest(
        request_id=r.pk,
        title=r.title,
        team_id=r.team_id,
        team_name=r.team.name,
        pool=r.pool.key,
        requested_gpu_hours=r.requested_gpu_hours,
        duration_hours=r.duration_hours,
        submitted_at=r.submitted_at or r.created_at,
        member_scores={c: tuple(v) for c, v in scores.items()},
        outcome=decision.outcome if decision is not None else "",
        demand=demand,
        archived_rank=decision.priority_rank if decision is not None else None,
        auto_deferred=(
            decision is not None and decision.outcome == DecisionOutcome.DEFER and decision.decided_by_id is None
            and decision.decided_by_name == AUTO_DEFER_NAME
        ),
        corrected=r.pk in corrected,
        impact_value=forecast.estimated_value if forecast is not None else None,
        impact_unit=forecast.value_unit if forecast is not None else "",
        run_gpu_counts=tuple(r.run_gpu_counts) if r.weekly_gpu_counts else (),
        later_weeks=tuple(later_weeks),
    )


