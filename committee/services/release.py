"""A team gives GPUs of a granted window back; the freed GPU-hours go to that week's waitlist.

A lead of the request's team releases some or all of the GPUs its window holds in the week's current
plan, at once (from the next whole hour of the week's grid) or from an hour it names. The week's next
plan version is published through the one re-plan of a published week (`cycle_plan_place`, as a
correction is): the released request's windows take their new shape and stay fixed, every other
team's window stays as it is, and the week's waitlist, the grants the current plan shortened or left
unplaced, is placed again by rank, from now on, into what is free. A shortened grant whose window
has already started keeps it (a running job does not move): only grants not running yet can gain.
A run over several weeks gives back from the week it runs in (or its next one published), and its
later weeks not published yet keep at most what it keeps.
The request's history, the week's decision record (a revision, through `cycle_plan_place`) and the
plan's note say who gave what back and why; every team whose window changed is told in its
"decision published" notice, and the `window.released` lifecycle event goes to the team's inbox, the chat and
the webhooks (committee/services/events.py). A run over several weeks whose team gives every GPU back from an hour
ends there: its later weeks are released (`later_weeks_released` in the event). See docs/release.md.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone
from django.utils.translation import gettext as _

from allocations import engine
from allocations import selectors as allocation_selectors
from allocations.models import AllocationPlan, AllocationWindow, CommitmentState
from allocations.services import commitments_give_back
from committee import limits, selectors
from committee.models import CycleStatus, GpuRequest, LifecycleEventType, ReviewCycle
from committee.services.events import lifecycle_event_record, window_event_data
from committee.services.publishing import cycle_plan_place
from committee.services.requests import actor_name, request_event_record
from core.datetimes import format_when
from core.errors import StateConflict
from core.locks import write_transaction
from core.texts import stored_text, text_render

_HOUR = timedelta(hours=1)


@dataclasses.dataclass(frozen=True)
class Release:
    """What a release did: the plan version it published, the hour it took effect and the GPUs it freed."""

    plan: AllocationPlan
    effective_from: datetime
    released_gpu_count: int
    kept_gpu_count: int


def _next_grid_hour(*, cycle: ReviewCycle, at: datetime) -> datetime:
    """The first whole hour of the week's grid at or after `at`."""
    hours = -(-(at - cycle.starts_at) // _HOUR)
    return cycle.starts_at + max(hours, 0) * _HOUR


def _effective_hour(*, cycle: ReviewCycle, effective_from: datetime | None, now: datetime) -> datetime:
    if effective_from is None:
        return _next_grid_hour(cycle=cycle, at=now)
    if effective_from.tzinfo is None:
        raise ValidationError({"effective_from": [_("Give the hour with its time zone.")]})
    if effective_from < now:
        raise ValidationError({"effective_from": [
            _("%(when)s is in the past: name an hour from now on, or give the GPUs back at once.")
            % {"when": format_when(effective_from)}
        ]})
    if (effective_from - cycle.starts_at) % _HOUR:
        raise ValidationError({"effective_from": [_("Name a whole hour (minutes and seconds 0).")]})
    return effective_from


def _released_shape(
    windows: list[AllocationWindow], *, pool_key: str, released: int, hour: datetime
) -> list[engine.EngineWindow]:
    """The request's windows once `released` GPUs are given back from `hour`: before it they stay, from it each
    holds `released` fewer (none when that leaves nothing); a window running across `hour` is split there."""
    shape = []
    for window in windows:
        parts = [(window.start, window.end, window.gpu_count)]
        if window.end > hour:
            left = window.gpu_count - released
            parts = [(window.start, hour, window.gpu_count)] if window.start < hour else []
            if left > 0:
                parts.append((max(window.start, hour), window.end, left))
        shape += [
            engine.EngineWindow(ref=window.request_ref or 0, pool=pool_key, gpu_count=count, start=start, end=end,
                                tier=window.tier)
            for start, end, count in parts
        ]
    return shape


def _waitlist(*, cycle: ReviewCycle, plan: AllocationPlan, windows: list[AllocationWindow]) -> set[int]:
    """The week's grants the plan shortened (fewer GPUs than decided) or left unplaced, but not those that hold fewer
    because their team gave GPUs back."""
    held: dict[int, int] = {}
    for window in windows:
        if window.request_ref is not None:
            held[window.request_ref] = max(held.get(window.request_ref, 0), window.gpu_count)
    short = {demand.ref for demand, _decision in selectors.cycle_demands(cycle=cycle)
             if held.get(demand.ref, 0) < demand.gpu_count}
    return short - selectors.requests_given_back(refs=short)  # what a team gave back is not given to it again


@write_transaction
def window_release(
    *,
    actor: User,
    gpu_request: GpuRequest,
    gpu_count: int,
    effective_from: datetime | None = None,
    reason: str = "",
    now: datetime | None = None,
) -> Release:
    """Give `gpu_count` GPUs of `gpu_request`'s window back from `effective_from` (None: the next whole hour), and
    publish the week's next plan version with the freed GPU-hours placed for the week's waitlist, by rank.

    Only a lead of the request's team. Refused, nothing written: PermissionDenied for anyone else;
    StateConflict when the week is not published, the request holds no window in the current plan, or its
    windows have ended; ValidationError keyed by field for an hour in the past, not on the hour or not before the
    window ends, for GPUs outside 1..what the window holds from that hour, or a reason too long. Side effects, in
    the one transaction: the plan version (`cycle_plan_place`: the week's decision record gets a revision and the
    teams whose windows changed a "decision published" notification through the outbox) and a "released" event
    in the request's history. A run over several weeks: the week is the one it runs in (`release_week`), and its
    later weeks with no plan yet hold at most the GPUs it keeps to that week's end, or are released when it keeps
    none (`allocations.services.commitments_give_back`).
    """
    if not selectors.user_is_team_lead(user=actor, team=gpu_request.team):
        raise PermissionDenied(
            _("Only a lead of %(team)s gives back its GPUs.") % {"team": gpu_request.team.name}
        )
    now = now or timezone.now()
    # A run over several weeks gives back from the week it runs in (or its next one published), not its first.
    week = selectors.release_week(gpu_request=gpu_request, now=now).week
    cycle = ReviewCycle.objects.select_for_update(no_key=True).get(week=week)
    reason = (reason or "").strip()
    errors: dict[str, list[Any]] = dict(limits.length_errors("reason", reason, limits.REASON_MAX_LENGTH))
    if errors:
        raise ValidationError(errors)
    plan = allocation_selectors.plan_for_week(week=cycle.week)
    if cycle.status != CycleStatus.PUBLISHED or plan is None:
        raise StateConflict(_("Week %(week)s is not published: there is no window to give back.")
                            % {"week": cycle.week})
    all_windows = list(allocation_selectors.plan_window_list(plan=plan))
    windows = [window for window in all_windows if window.request_ref == gpu_request.pk]
    if not windows:
        raise StateConflict(_("“%(title)s” holds no window in the current plan of week %(week)s.")
                            % {"title": gpu_request.title, "week": cycle.week})
    ends = max(window.end for window in windows)
    if ends <= now:
        raise StateConflict(_("The window of “%(title)s” ended %(when)s: there is nothing left to give back.")
                            % {"title": gpu_request.title, "when": format_when(ends)})
    hour = _effective_hour(cycle=cycle, effective_from=effective_from, now=now)
    if hour >= ends:
        raise ValidationError({"effective_from": [
            _("The window ends %(when)s: name an earlier hour.") % {"when": format_when(ends)}
        ]})
    held = min(window.gpu_count for window in windows if window.end > hour)
    if isinstance(gpu_count, bool) or not isinstance(gpu_count, int) or not 1 <= gpu_count <= held:
        raise ValidationError({"gpu_count": [
            _("From 1 to %(held)d GPUs: what the window holds from %(when)s.")
            % {"held": held, "when": format_when(hour)}
        ]})

    kept = held - gpu_count
    shape = _released_shape(windows, pool_key=gpu_request.pool.key, released=gpu_count, hour=hour)
    waitlist = _waitlist(cycle=cycle, plan=plan, windows=all_windows)
    # Every other window stays where it is; only the waitlist's grants that are not running are placed again.
    keep = {w.request_ref for w in all_windows if w.request_ref is not None} - waitlist - {gpu_request.pk}
    params = {"team": gpu_request.team.name, "title": gpu_request.title, "start": hour.isoformat(),
              "released": gpu_count, "kept": kept, "reason": reason}
    reason_text = stored_text("plan_released", **params)
    explanation = engine.Explanation(
        ref=gpu_request.pk, placed=bool(shape), shortened=False,
        reasons=(engine.Reason("released", {"start": engine.instant_param(hour), "released": gpu_count,
                                            "gpu_count": kept}),),
    )
    published = cycle_plan_place(
        actor=actor, cycle=cycle, reason=text_render(reason_text), reason_text=reason_text, now=now, keep=keep,
        replace={gpu_request.pk: shape}, replace_explanations=(explanation,),
    )
    # The run's later weeks not published yet hold at most what it keeps to the end of this week (none: released:
    # the run ends there, and the event lists them).
    changed = commitments_give_back(request_ref=gpu_request.pk, after_week=cycle.week, gpu_count=kept,
                                    by_name=actor_name(actor), now=now)
    weeks_released = [c.week for c in changed if c.state == CommitmentState.RELEASED]
    detail = stored_text("window_released", **params)
    request_event_record(request=gpu_request, actor=actor, action="released", detail=text_render(detail),
                         detail_text=detail)
    first = windows[0]
    # A run's later week has plan versions of its own: its key names the week.
    version = f"v{published.version}" if cycle.pk == gpu_request.cycle_id else f"{cycle.week}:v{published.version}"
    lifecycle_event_record(
        type=LifecycleEventType.WINDOW_RELEASED, key=f"window.released:{gpu_request.pk}:{version}",
        team_id=gpu_request.team_id, cluster_id=first.cluster_id, request_ref=gpu_request.pk, occurred_at=hour,
        data=window_event_data(first, released_gpu_count=gpu_count, kept_gpu_count=kept,
                               effective_from=hour.isoformat(), plan_version=published.version, reason=reason,
                               later_weeks_released=weeks_released),
    )
    return Release(plan=published, effective_from=hour, released_gpu_count=gpu_count, kept_gpu_count=kept)
