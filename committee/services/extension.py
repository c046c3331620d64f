"""A team asks for more hours on a granted window, within the running week: an emergency that continues the window.

The chair and one other member approve it from the burst reserve, as an emergency (docs/emergencies.md): the same
`EmergencyRequest`, the same two-person rule and decide guard, the same placement (`emergency_place`, preemptible,
beside every published window) and plan version, the same after-the-fact review. What differs is where it starts:
where the granted window ends, so the job runs on. Its `EmergencyRequest.extends` names the grant; once placed, the
`grant.extended` lifecycle event goes to the team, the chat and the webhooks. More weeks go through the next weekly
review as a request of their own. See docs/release.md ("More hours").
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone
from django.utils.translation import gettext as _

from allocations import selectors as allocation_selectors
from committee import selectors
from committee.models import EmergencyRequest, GpuRequest
from committee.services.emergency import emergency_request_file
from core.datetimes import format_when
from core.errors import StateConflict
from core.locks import write_transaction


@write_transaction
def grant_extension_file(
    *, actor: User, gpu_request: GpuRequest, hours: int, justification: str, now: datetime | None = None
) -> EmergencyRequest:
    """Ask for `hours` more of `gpu_request`'s window, from where it ends, before its week ends.

    Only a member of the request's team. Files an emergency (`emergency_request_file`: the committee is notified,
    it waits for the chair and one member) with the window's GPUs, rigid from the window's end for `hours`, and
    `extends` naming the grant. Refused, nothing written: PermissionDenied for anyone else; StateConflict when the
    request holds no window in its week's current plan, or its window has ended; ValidationError keyed `hours` for
    a count outside 1..the hours from the window's end to the week's end, keyed `justification` without one.
    """
    if not selectors.user_is_team_member(user=actor, team=gpu_request.team):
        raise PermissionDenied(
            _("Only a member of %(team)s asks to extend its grants.") % {"team": gpu_request.team.name})
    now = now or timezone.now()
    cycle = gpu_request.cycle
    if not cycle.starts_at <= now < cycle.ends_at:
        raise StateConflict(_("Week %(week)s is not running: more hours are asked for within the week, more weeks at "
                              "the next weekly review.") % {"week": cycle.week})
    plan = allocation_selectors.plan_for_week(week=cycle.week)
    windows = [w for w in allocation_selectors.plan_window_list(plan=plan) if w.request_ref == gpu_request.pk] \
        if plan is not None else []
    if not windows:
        raise StateConflict(_("“%(title)s” holds no window in the current plan of week %(week)s.")
                            % {"title": gpu_request.title, "week": cycle.week})
    last = max(windows, key=lambda w: w.end)
    if last.end <= now:
        raise StateConflict(_("The window of “%(title)s” ended %(when)s: ask the next weekly review instead.")
                            % {"title": gpu_request.title, "when": format_when(last.end)})
    left = int((cycle.ends_at - last.end) // timedelta(hours=1))
    if isinstance(hours, bool) or not isinstance(hours, int) or not 1 <= hours <= left:
        raise ValidationError({"hours": [
            _("From 1 to %(left)d hours: the window ends %(end)s and its week %(week_end)s; more weeks go to the "
              "next weekly review.") % {"left": max(left, 0), "end": format_when(last.end),
                                         "week_end": format_when(cycle.ends_at)}
        ]})
    emergency = emergency_request_file(
        actor=actor, team=gpu_request.team, pool=gpu_request.pool, title=gpu_request.title,
        gpu_count=last.gpu_count, min_gpu_count=last.gpu_count, duration_hours=hours,
        justification=justification, now=now,
    )
    extension = emergency.request
    extension.earliest_start = last.end
    extension.latest_end = last.end + timedelta(hours=hours)
    extension.save(update_fields=["earliest_start", "latest_end"])
    emergency.extends = gpu_request
    emergency.save(update_fields=["extends"])
    return emergency
