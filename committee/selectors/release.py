"""Whether a viewer may give GPUs of a request's window back, and what the window holds (the request page's form)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from allocations import selectors as allocation_selectors
from allocations.models import AllocationPlan, AllocationWindow, Commitment
from committee.models import CycleStatus, GpuRequest
from committee.selectors.people import Viewer, user_is_team_lead, user_is_team_member


@dataclass(frozen=True)
class ReleaseOffer:
    """A window its team's lead may still give GPUs of back: the most it holds from now on, and when it ends."""

    gpu_count: int
    ends_at: datetime


def extension_offer(*, viewer: Viewer, gpu_request: GpuRequest, now: datetime) -> ReleaseOffer | None:
    """The same facts for a member of the request's team while its week runs and its window has not ended: it may
    ask for more hours (committee.services.grant_extension_file). None otherwise."""
    cycle = gpu_request.cycle
    if not (cycle.starts_at <= now < cycle.ends_at) or not user_is_team_member(user=viewer, team=gpu_request.team):
        return None
    plan = allocation_selectors.plan_for_week(week=cycle.week)
    return None if plan is None else _offer(_windows_not_ended(plan=plan, gpu_request=gpu_request, now=now))


def release_offer(*, viewer: Viewer, gpu_request: GpuRequest, now: datetime) -> ReleaseOffer | None:
    """The offer for a lead of the request's team while its window in the week's current plan has not ended; None
    for anyone else, a week not published, a request without a window or one that ended. A run over several weeks
    offers its window of the week it runs in (`release_week`). Three queries, one more for a run."""
    if gpu_request.cycle.status != CycleStatus.PUBLISHED or not user_is_team_lead(user=viewer, team=gpu_request.team):
        return None
    return _offer(release_week(gpu_request=gpu_request, now=now).windows)


@dataclass(frozen=True)
class ReleaseWeek:
    """The week a release of a request changes: its current plan (None: not published) and the request's windows in
    it that have not ended."""

    week: str
    plan: AllocationPlan | None
    windows: list[AllocationWindow]


def release_week(*, gpu_request: GpuRequest, now: datetime) -> ReleaseWeek:
    """The week whose current plan holds what `gpu_request` may give back at `now`: its own week, or for a run over
    several weeks the first of its weeks (its own, then those it is committed to) whose current plan has a window of
    it not ended: the week it runs in, or its next one already published (docs/release.md). Its own week, with no
    window, when none has one. Two queries a week looked at, one more for a run."""
    own = gpu_request.cycle.week
    weeks = [own]
    if gpu_request.run_weeks > 1:
        weeks += list(Commitment.objects.filter(request_ref=gpu_request.pk, week__gt=own)
                      .order_by("week").values_list("week", flat=True))
    first: ReleaseWeek | None = None
    for week in weeks:
        plan = allocation_selectors.plan_for_week(week=week)
        windows = [] if plan is None else _windows_not_ended(plan=plan, gpu_request=gpu_request, now=now)
        found = ReleaseWeek(week=week, plan=plan, windows=windows)
        if windows:
            return found
        first = first or found
    assert first is not None
    return first


def _windows_not_ended(*, plan: AllocationPlan, gpu_request: GpuRequest, now: datetime) -> list[AllocationWindow]:
    """The request's windows in `plan` that have not ended at `now`. One query."""
    return [w for w in allocation_selectors.plan_window_list(plan=plan).filter(request_ref=gpu_request.pk)
            if w.end > now]


def _offer(windows: list[AllocationWindow]) -> ReleaseOffer | None:
    if not windows:
        return None
    return ReleaseOffer(gpu_count=max(w.gpu_count for w in windows), ends_at=max(w.end for w in windows))
