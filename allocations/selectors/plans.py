"""The published plans as the pages and the committee read them: weeks, versions, windows, explanations, and
what each request was given."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.db.models import (
    Q,
    QuerySet,
)
from django.utils import timezone

from allocations.models import (
    AllocationPlan,
    AllocationWindow,
    Department,
    PlanExplanation,
    Team,
)


def plan_week_list(*, limit: int = 12) -> list[str]:
    """The weeks that have a published plan, latest week first."""
    return list(
        AllocationPlan.objects.order_by("-week").values_list("week", flat=True).distinct()[:limit]
    )


def plan_for_week(*, week: str, version: int | None = None) -> AllocationPlan | None:
    """A week's plan: the given version, or the current (highest) one."""
    plans = AllocationPlan.objects.filter(week=week).select_related("supersedes")
    if version is not None:
        return plans.filter(version=version).first()
    return plans.order_by("-version").first()


def plan_week_current(*, now: datetime | None = None) -> str | None:
    """The week whose plan covers `now`, else the latest week with a plan."""
    now = now or timezone.now()
    covering = AllocationPlan.objects.filter(week_starts_at__lte=now, week_ends_at__gt=now).order_by("-week").first()
    if covering is not None:
        return covering.week
    latest = AllocationPlan.objects.order_by("-week").first()
    return latest.week if latest else None


def _of_org(
    windows: QuerySet[AllocationWindow], *, department: Department | None, team: Team | None
) -> QuerySet[AllocationWindow]:
    """`windows` narrowed to a department's teams and to one team (the org chart as it is now)."""
    if department is not None:
        windows = windows.filter(team__department=department)
    if team is not None:
        windows = windows.filter(team=team)
    return windows


def plan_window_list(
    *, plan: AllocationPlan, department: Department | None = None, team: Team | None = None
) -> QuerySet[AllocationWindow]:
    """The windows `plan` holds (its own and those carried over into it), with their sync status; of a department's
    teams, of one team, when given."""
    windows = (
        AllocationWindow.objects.filter(week=plan.week, created_seq__lte=plan.change_seq)
        .filter(Q(withdrawal__isnull=True) | Q(withdrawal__change_seq__gt=plan.change_seq))
        .select_related("cluster", "pool__cluster", "team__department", "sync_status")
        .order_by("cluster__name", "pool__slug", "start", "id")
    )
    return _of_org(windows, department=department, team=team)


def plan_last_windows(*, plan: AllocationPlan, refs: Iterable[int] | None = None) -> dict[int, AllocationWindow]:
    """Each request's last window in `plan` (the latest end), by request ref; of `refs` only when given. A part given
    back splits a window at the hour: the part kept to the end is the one a run continues from. One query."""
    windows = plan_window_list(plan=plan).filter(request_ref__isnull=False)
    if refs is not None:
        windows = windows.filter(request_ref__in=list(refs))
    last: dict[int, AllocationWindow] = {}
    for window in windows:
        ref = window.request_ref
        assert ref is not None
        if ref not in last or window.end > last[ref].end:
            last[ref] = window
    return last


def plan_withdrawn_list(
    *, plan: AllocationPlan, department: Department | None = None, team: Team | None = None
) -> QuerySet[AllocationWindow]:
    """The windows of the version before `plan` that `plan` withdrew; of a department's teams, of one team."""
    windows = (
        AllocationWindow.objects.filter(withdrawal__plan=plan)
        .select_related("cluster", "pool__cluster", "team")
        .order_by("cluster__name", "pool__slug", "start", "id")
    )
    return _of_org(windows, department=department, team=team)


def plan_explanation_map(*, plan: AllocationPlan) -> dict[int, PlanExplanation]:
    return {explanation.request_ref: explanation for explanation in plan.explanations.all()}


@dataclass(frozen=True)
class RequestAllocation:
    """What the current plan gives one request: its windows and the engine's explanation."""

    plan: AllocationPlan
    explanation: PlanExplanation | None
    windows: list[AllocationWindow]


def request_allocation(*, request_ref: int) -> RequestAllocation | None:
    """The current plan of the week that last explained `request_ref`, or None if never planned.

    Three queries at most.
    """
    last = (
        PlanExplanation.objects.filter(request_ref=request_ref).select_related("plan").order_by("-plan__change_seq")
        .first()
    )
    if last is None:
        return None
    plan = plan_for_week(week=last.plan.week) or last.plan
    explanation = last if last.plan_id == plan.pk else plan.explanations.filter(request_ref=request_ref).first()
    windows = list(plan_window_list(plan=plan).filter(request_ref=request_ref))
    return RequestAllocation(plan=plan, explanation=explanation, windows=windows)


def request_allocation_map(*, request_refs: Iterable[int]) -> dict[int, RequestAllocation]:
    """`request_allocation` for many requests at once: request id -> what its week's current plan gives it.

    Requests no plan ever explained are missing from the map. Three queries, however many requests:
    every explanation of the requests (with its plan), the plans of their weeks, and the windows the
    current plans hold for them (with pool, cluster and sync status).
    """
    refs = sorted(set(request_refs))
    if not refs:
        return {}
    explanations = list(
        PlanExplanation.objects.filter(request_ref__in=refs).select_related("plan").order_by("plan__change_seq")
    )
    if not explanations:
        return {}
    latest_week: dict[int, str] = {}
    for explanation in explanations:  # ascending change_seq: the last plan to explain a request wins
        latest_week[explanation.request_ref] = explanation.plan.week
    current: dict[str, AllocationPlan] = {}
    for plan in AllocationPlan.objects.filter(week__in=set(latest_week.values())).order_by("week", "version"):
        current[plan.week] = plan  # ascending version: the highest wins
    by_plan = {(e.plan_id, e.request_ref): e for e in explanations}
    live = Q()
    for plan in current.values():
        live |= Q(week=plan.week, created_seq__lte=plan.change_seq) & (
            Q(withdrawal__isnull=True) | Q(withdrawal__change_seq__gt=plan.change_seq)
        )
    windows: dict[int, list[AllocationWindow]] = {}
    rows = (
        AllocationWindow.objects.filter(live, request_ref__in=refs)
        .select_related("cluster", "pool__cluster", "team", "sync_status")
        .order_by("start", "id")
    )
    for window in rows:
        if window.request_ref is not None and latest_week.get(window.request_ref) == window.week:
            windows.setdefault(window.request_ref, []).append(window)
    result = {}
    for ref, week in latest_week.items():
        plan = current[week]
        given = by_plan.get((plan.pk, ref))
        if given is not None:
            given.plan = plan  # display_text reads the plan's week; it is this one
        result[ref] = RequestAllocation(plan=plan, explanation=given, windows=windows.get(ref, []))
    return result


def team_window_list(
    *, team: Team, week: str | None = None, ends_after: datetime | None = None
) -> list[tuple[AllocationPlan, AllocationWindow]]:
    """A team's windows in the current plan of each week, with that plan, by start.

    The windows of `week`, or, without it, of the weeks whose plan has not ended by `ends_after`
    (default: now). Two queries: the plans of those weeks, and the windows the current ones hold.
    """
    scope = Q(week=week) if week is not None else Q(week_ends_at__gt=ends_after or timezone.now())
    plans = AllocationPlan.objects.filter(scope)
    current: dict[str, AllocationPlan] = {}
    for plan in plans.order_by("week", "version"):
        current[plan.week] = plan  # ascending version: the highest wins
    if not current:
        return []
    live = Q()
    for plan in current.values():
        live |= Q(week=plan.week, created_seq__lte=plan.change_seq) & (
            Q(withdrawal__isnull=True) | Q(withdrawal__change_seq__gt=plan.change_seq)
        )
    windows = (
        AllocationWindow.objects.filter(live, team=team)
        .select_related("cluster", "pool__cluster")
        .order_by("start", "id")
    )
    return [(current[window.week], window) for window in windows]
