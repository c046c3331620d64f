"""Fast-lane requests as each viewer may read them, the review's list of the week's grants, and the policy in force."""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet
from django.http import Http404
from django.utils import timezone

from allocations import engine
from allocations import selectors as allocation_selectors
from allocations.models import AllocationWindow, GpuPool
from committee import weeks
from committee.models import FastLaneRequest, FastLaneStatus, ReviewCycle
from committee.selectors.people import Viewer, viewer_roles
from governed.params import FAST_LANE_MAX_GPU_HOURS, as_int
from governed.selectors import policy_value


def _fast_lane() -> QuerySet[FastLaneRequest]:
    return FastLaneRequest.objects.select_related(
        "request", "request__team", "request__pool", "request__pool__cluster", "request__cycle", "plan",
        "review_cycle",
    )


def fast_lane_get(*, viewer: Viewer, pk: int) -> FastLaneRequest:
    """One fast-lane request the viewer may read (the committee every one, a team member their teams'); else 404."""
    roles = viewer_roles(user=viewer)
    found = _fast_lane().filter(pk=pk)
    if not roles.committee:
        found = found.filter(request__team_id__in=roles.team_ids)
    fast = found.first()
    if fast is None:
        raise Http404("No such fast-lane request")
    return fast


def fast_lane_list_for_review(*, cycle: ReviewCycle) -> list[FastLaneRequest]:
    """The fast-lane grants a week's review lists (granted or revoked since the last review), each with `window` (its
    window in the week's current plan, None once revoked) and `started` (now past its start: not revocable). A grant
    filed when no review was coming is listed at every later review. Three queries."""
    grants = list(
        _fast_lane()
        .filter(status__in=[FastLaneStatus.GRANTED, FastLaneStatus.REVOKED])
        .filter(Q(review_cycle=cycle) | Q(review_cycle__isnull=True, request__cycle__starts_at__lt=cycle.starts_at))
        .order_by("filed_at", "id")
    )
    plans = {g.request.cycle.week for g in grants}
    windows: dict[int, AllocationWindow] = {}
    for week in plans:
        plan = allocation_selectors.plan_for_week(week=week)
        if plan is not None:
            for window in allocation_selectors.plan_window_list(plan=plan).filter(
                    request_ref__in=[g.request_id for g in grants]).select_related("pool"):
                windows[window.request_ref or 0] = window
    now = timezone.now()
    for grant in grants:
        held = windows.get(grant.request_id) if grant.status == FastLaneStatus.GRANTED else None
        grant.window = held  # type: ignore[attr-defined]
        grant.started = held is not None and held.start <= now  # type: ignore[attr-defined]
    return grants


def fast_lane_policy_now() -> dict[str, Any]:
    """What the filing page says of the policy in force this week: the ceiling in GPU-hours and each pool's fast-lane
    reserve in GPUs (pools without one left out). Two queries."""
    week = weeks.current_week_label(timezone.now())
    pools = allocation_selectors.pool_reserves_for_week(
        week=week, pools=GpuPool.objects.select_related("cluster").order_by("cluster__name", "slug"))
    reserves = [(pool, pool.fast_lane_pct, engine.fast_lane_gpus(allocation_selectors.pool_capacity(pool=pool)))
                for pool in pools]
    return {
        "fast_lane_ceiling": as_int(policy_value(key=FAST_LANE_MAX_GPU_HOURS, week=week)),
        "fast_lane_reserves": [r for r in reserves if r[2] > 0],
    }
