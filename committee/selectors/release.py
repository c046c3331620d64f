"""Whether a viewer may give GPUs of a request's window back, and what the window holds (the request page's form)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from allocations import selectors as allocation_selectors
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
    return _offer(gpu_request=gpu_request, now=now)


def release_offer(*, viewer: Viewer, gpu_request: GpuRequest, now: datetime) -> ReleaseOffer | None:
    """The offer for a lead of the request's team while its window in the week's current plan has not ended; None
    for anyone else, a week not published, a request without a window or one that ended. Three queries."""
    if gpu_request.cycle.status != CycleStatus.PUBLISHED or not user_is_team_lead(user=viewer, team=gpu_request.team):
        return None
    return _offer(gpu_request=gpu_request, now=now)


def _offer(*, gpu_request: GpuRequest, now: datetime) -> ReleaseOffer | None:
    plan = allocation_selectors.plan_for_week(week=gpu_request.cycle.week)
    if plan is None:
        return None
    windows = [w for w in allocation_selectors.plan_window_list(plan=plan).filter(request_ref=gpu_request.pk)
               if w.end > now]
    if not windows:
        return None
    return ReleaseOffer(gpu_count=max(w.gpu_count for w in windows), ends_at=max(w.end for w in windows))
