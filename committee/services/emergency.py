"""Out-of-cycle emergency requests: filed any day, approved by the chair and one other member, placed at once.

A team files an emergency into the running week (even when that week is published, or next
week's intake is closed): a `GpuRequest` with `is_emergency` set, and its `EmergencyRequest`
(the justification, the approvals). The chair and one other committee member who is not of the
team approve it; either can reject it. On the second approval, in the same transaction, it is
placed (allocations.emergency.emergency_place: every published window stays as it is, the
emergency goes to the preemptible tier in the burst reserve and, if the chair says so, the cold
standby) and the week's next plan version is published (allocations.services.plan_publish).
The next weekly review lists it for an after-the-fact decision (`emergency_review_record`).
See docs/emergencies.md.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _

from allocations import engine
from allocations import selectors as allocation_selectors
from allocations.emergency import EmergencyPlacement, emergency_place
from allocations.explanations import reasons_as_json
from allocations.models import AllocationPlan, GpuPool, Team
from committee import limits, selectors
from committee.models import (
    Decision,
    DecisionOutcome,
    EmergencyApproval,
    EmergencyRequest,
    EmergencyStatus,
    GpuRequest,
    LifecycleEventType,
    NotificationKind,
    PostHocOutcome,
    RequestStatus,
    ReviewCycle,
)
from committee.quarters import quarters_of_span
from committee.services.events import lifecycle_event_record, window_event_data
from committee.services.notifications import notification_enqueue, notifications_record
from committee.services.requests import actor_name, request_event_record
from committee.services.review import cycle_transition_record
from committee.services.running_week import next_review, running_cycle, running_week_of, running_week_publish
from core.errors import StateConflict
from core.locks import write_transaction
from core.texts import stored_text, text_render

# An emergency that cannot start within this long after its second approval is refused rather
# than placed later in the week: it is needed now, and the weekly review can take it otherwise.
START_WITHIN = timedelta(hours=1)


def _running_cycle(now: datetime) -> ReviewCycle:
    return running_cycle(
        now=now, refused=_("No allocation week is running now, so there is no plan to place an emergency in.")
    )


def _notify(*, emergency: EmergencyRequest, event: str, team_too: bool, by: str) -> None:
    gpu_request = emergency.request
    recipients = set(selectors.committee_member_ids())
    if team_too:
        recipients |= set(selectors.team_member_ids(team_ids=[gpu_request.team_id]).get(gpu_request.team_id, []))
    notifications_record(
        recipient_ids=recipients,
        kind=NotificationKind.EMERGENCY,
        key=f"emergency:{emergency.pk}:{event}",
        params={
            "event": event,
            "team": gpu_request.team.name,
            "title": gpu_request.title,
            "week": gpu_request.cycle.week,
            "by": by,
            "count": gpu_request.gpu_count,
            "path": reverse("committee:emergency-detail", args=[emergency.pk]),
        },
    )


@write_transaction
def emergency_request_file(
    *,
    actor: User,
    team: Team,
    pool: GpuPool,
    title: str,
    gpu_count: int,
    duration_hours: int,
    justification: str,
    min_gpu_count: int | None = None,
    now: datetime | None = None,
) -> EmergencyRequest:
    """File an emergency request for `team` into the running week; it waits for two approvals.

    Only a member of `team`. Any day of the week, whatever the state of the week's cycle (open,
    in review, finalized, published) or of next week's intake. The GPUs are wanted from `now` for
    `duration_hours`, before the running week ends. Refused (ValidationError keyed by field,
    nothing written) for a missing title or justification, counts outside 1..the pool's GPUs, a
    minimum above the count, or more hours than the week has left; StateConflict when no week is
    running. Writes a "filed" event on the request and records an "emergency" notification for
    every committee member (their digest; the review page lists it at once).
    """
    if not selectors.user_is_team_member(user=actor, team=team):
        raise PermissionDenied(_("Only a member of %(team)s files its emergency requests.") % {"team": team.name})
    now = now or timezone.now()
    cycle = _running_cycle(now)
    title, justification = (title or "").strip(), (justification or "").strip()
    minimum = gpu_count if min_gpu_count is None else min_gpu_count
    errors: dict[str, list[Any]] = {}
    if not title:
        errors["title"] = [_("Name the work that needs the GPUs.")]
    if not justification:
        errors["justification"] = [_("Say why this cannot wait for the weekly review.")]
    errors.update(limits.length_errors("justification", justification, limits.JUSTIFICATION_MAX_LENGTH))
    if not _whole(gpu_count) or not 1 <= gpu_count <= pool.gpu_count:
        errors["gpu_count"] = [_("From 1 to %(count)d GPUs (the pool %(pool)s).") % {"count": pool.gpu_count,
                                                                                     "pool": pool.key}]
    elif not _whole(minimum) or not 1 <= minimum <= gpu_count:
        errors["min_gpu_count"] = [_("The minimum is from 1 to the GPUs asked (%(count)d).") % {"count": gpu_count}]
    hours_left = int((cycle.ends_at - now).total_seconds() // 3600)
    if not _whole(duration_hours) or not 1 <= duration_hours <= hours_left:
        errors["duration_hours"] = [
            _("From 1 to %(hours)d hours: week %(week)s ends %(end)s.")
            % {"hours": max(hours_left, 0), "week": cycle.week, "end": f"{cycle.ends_at:%Y-%m-%d %H:%M} UTC"}
        ]
    if errors:
        raise ValidationError(errors)
    gpu_request = GpuRequest.objects.create(
        team=team,
        cycle=cycle,
        pool=pool,
        title=title,
        gpu_count=gpu_count,
        min_gpu_count=minimum,
        duration_hours=duration_hours,
        earliest_start=now,
        latest_end=cycle.ends_at,
        preemptible_ok=True,
        status=RequestStatus.SUBMITTED,
        is_emergency=True,
        created_by=actor,
        submitted_by=actor,
        submitted_at=now,
    )
    emergency = EmergencyRequest.objects.create(
        request=gpu_request,
        justification=justification,
        filed_by_name=actor_name(actor),
        filed_at=now,
        review_cycle=next_review(now=now),
    )
    request_event_record(request=gpu_request, actor=actor, action="emergency", detail=justification)
    _notify(emergency=emergency, event="filed", team_too=False, by=actor_name(actor))
    return emergency


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@write_transaction
def emergency_request_decide(
    *,
    actor: User,
    emergency: EmergencyRequest,
    approve: bool,
    use_standby: bool = False,
    note: str = "",
    now: datetime | None = None,
) -> EmergencyRequest:
    """One committee member's approval or rejection; the second approval (one of them the chair) places it.

    Refused (PermissionDenied) unless the decide guard allows it (`selectors.decide_guard`,
    Act.APPROVE_EMERGENCY: a seat, not of the emergency's team, not recused from it); (StateConflict)
    unless it waits for approval, or when the actor has already given a verdict; (ValidationError) for
    `use_standby` from anyone but the chair, and for a rejection without a note. A rejection ends it:
    a "reject" decision with the note, the team and committee notified. When the chair and one other
    member have approved, the emergency is placed (`emergency_place`) and the running week's next plan
    version published in this transaction, with a decision (grant, or partial when fewer GPUs were
    free) naming both approvers; the team and committee are notified. The two approvals (one the
    chair's) with the team's justification are the exception to the rubric that lets an unscored
    emergency be granted. It must start within START_WITHIN (an hour) of the second approval; if it
    does not fit, ValidationError (keyed `gpu_count`) says what was free and
    nothing is written, not even this approval.
    """
    # The emergency's row alone orders two approvals (of=: not the joined request, team, pool and cycle rows, which
    # other writers lock in another order).
    locked = EmergencyRequest.objects.select_for_update(of=("self",), no_key=True).select_related(
        "request__team", "request__pool", "request__cycle").get(pk=emergency.pk)
    gpu_request = locked.request
    selectors.decide_guard(actor=actor, gpu_request=gpu_request, act=selectors.Act.APPROVE_EMERGENCY)
    if locked.status != EmergencyStatus.PENDING:
        raise StateConflict(
            _("This emergency request is already %(status)s.") % {"status": locked.get_status_display().lower()}
        )
    if locked.approvals.filter(member=actor).exists():
        raise StateConflict(_("You have already given your verdict on this emergency request."))
    chair = selectors.user_is_chair(user=actor)
    note = (note or "").strip()
    errors: dict[str, list[Any]] = {}
    if use_standby and not chair:
        errors["use_standby"] = [_("Only the chair wakes the cold standby.")]
    if not approve and not note:
        errors["note"] = [_("Say why: the team reads it.")]
    errors.update(limits.length_errors("note", note, limits.SCORE_NOTE_MAX_LENGTH))
    if errors:
        raise ValidationError(errors)
    now = now or timezone.now()
    EmergencyApproval.objects.create(
        emergency=locked, member=actor, member_name=actor_name(actor), as_chair=chair, approve=approve, note=note,
        at=now,
    )
    if not approve:
        _decision_write(gpu_request=gpu_request, actor=actor, outcome=DecisionOutcome.REJECT, granted=None,
                        rationale=stored_text("emergency_rejected", name=actor_name(actor), note=note))
        locked.status = EmergencyStatus.REJECTED
        locked.save(update_fields=["status"])
        request_event_record(request=gpu_request, actor=actor, action="emergency rejected", detail=note)
        _notify(emergency=locked, event="rejected", team_too=True, by=actor_name(actor))
        return locked
    if chair:
        locked.use_standby = use_standby
        locked.save(update_fields=["use_standby"])
    approvals = list(locked.approvals.filter(approve=True))
    request_event_record(request=gpu_request, actor=actor, action="emergency approved", detail=note)
    if len(approvals) >= 2 and any(a.as_chair for a in approvals):
        _place(emergency=locked, actor=actor, approvers=[a.member_name for a in approvals], now=now)
    else:
        _notify(emergency=locked, event=f"approved-by-{actor.pk}", team_too=False, by=actor_name(actor))
    return locked


def _decision_write(
    *, gpu_request: GpuRequest, actor: User, outcome: str, granted: int | None, rationale: dict[str, Any]
) -> Decision:
    """The emergency's decision; its rationale is Docket's (a code, core.texts), kept also as written now."""
    gpu_request.status = RequestStatus.DECIDED
    gpu_request.save(update_fields=["status", "updated_at"])
    return Decision.objects.create(
        request=gpu_request,
        cycle=gpu_request.cycle,
        outcome=outcome,
        requested_gpu_count=gpu_request.gpu_count,
        granted_gpu_count=granted,
        rationale=text_render(rationale)[: limits.RATIONALE_MAX_LENGTH],
        rationale_text=rationale,
        decided_by=actor,
        decided_by_name=actor_name(actor),
        team_name=gpu_request.team.name,
        request_title=gpu_request.title,
        cycle_week=gpu_request.cycle.week,
    )


def _place(*, emergency: EmergencyRequest, actor: User, approvers: list[str], now: datetime) -> AllocationPlan:
    """Place the approved emergency beside the running week's plan and publish the next version."""
    gpu_request = emergency.request
    cycle = gpu_request.cycle
    week = running_week_of(cycle=cycle)
    pool = week.pools[gpu_request.pool.key]
    capacity = week.capacity(pool.key)
    placed = emergency_place(
        pool=capacity,
        week_start=cycle.starts_at,
        hours=cycle.hours,
        fixed=week.fixed,
        ref=gpu_request.pk,
        gpu_count=gpu_request.gpu_count,
        min_gpu_count=gpu_request.min_gpu_count,
        duration_hours=gpu_request.duration_hours,
        earliest_start=max(now, gpu_request.earliest_start),
        latest_end=min(gpu_request.latest_end, max(now, gpu_request.earliest_start) + START_WITHIN
                       + timedelta(hours=gpu_request.duration_hours)),
        use_standby=emergency.use_standby,
    )
    if not isinstance(placed, EmergencyPlacement):
        where = _("the burst reserve and the cold standby") if emergency.use_standby else _("the burst reserve")
        raise ValidationError(
            {
                "gpu_count": [
                    _(
                        "No room: %(pool)s has at most %(free)d GPUs free in %(where)s for %(hours)d h starting "
                        "within the hour, fewer than the %(minimum)d needed. Nothing was approved or published."
                    )
                    % {"pool": pool.key, "free": placed.most_gpus_free, "where": where,
                       "hours": gpu_request.duration_hours, "minimum": gpu_request.min_gpu_count}
                ]
            }
        )
    window = placed.window
    placed_reason = engine.Reason(
        "placed",
        {"start": engine.instant_param(window.start), "end": engine.instant_param(window.end),
         "gpu_count": window.gpu_count, "gpu_model": capacity.gpu_model, "preemptible": True},
    )
    plan = running_week_publish(
        week=week,
        actor=actor,
        source_ref=f"emergency:{emergency.pk}",
        gpu_request=gpu_request,
        window=window,
        explanation=engine.Explanation(ref=gpu_request.pk, placed=True,
                                       shortened=window.gpu_count < gpu_request.gpu_count, reasons=(placed_reason,)),
        standby_gpus={gpu_request.pk: placed.standby_gpu_count},
        note_text=stored_text("emergency_placed", title=gpu_request.title, team=gpu_request.team.name,
                              approvers=approvers, gpu_count=window.gpu_count,
                              standby_gpu_count=placed.standby_gpu_count, tier=window.tier),
    )
    granted = window.gpu_count
    _decision_write(
        gpu_request=gpu_request,
        actor=actor,
        outcome=DecisionOutcome.GRANT if granted == gpu_request.gpu_count else DecisionOutcome.PARTIAL,
        granted=granted,
        rationale=stored_text("emergency_approved", approvers=approvers, justification=emergency.justification),
    )
    emergency.status = EmergencyStatus.PLACED
    emergency.plan = plan
    emergency.placed_at = now
    emergency.standby_gpu_count = placed.standby_gpu_count
    emergency.save(update_fields=["status", "plan", "placed_at", "standby_gpu_count"])
    published = stored_text("emergency_published", version=plan.version, reasons=reasons_as_json([placed_reason]),
                            week_start=cycle.starts_at.isoformat(), standby_gpu_count=placed.standby_gpu_count)
    request_event_record(request=gpu_request, actor=actor, action="published", detail=text_render(published),
                         detail_text=published)
    _notify(emergency=emergency, event="placed", team_too=True, by=actor_name(actor))
    # The emergency's plan charges its department: a budget reaching 80 % or 100 % is told (once per threshold).
    notification_enqueue(kind=NotificationKind.BUDGET_ALERT, quarters=quarters_of_span(cycle.starts_at, cycle.ends_at),
                         ref=f"{cycle.week}:v{plan.version}")
    if emergency.extends_id is not None:  # an extension of a granted window (committee/services/extension.py)
        placed_window = next(w for w in allocation_selectors.plan_window_list(plan=plan)
                             if w.request_ref == gpu_request.pk)
        lifecycle_event_record(
            type=LifecycleEventType.GRANT_EXTENDED, key=f"grant.extended:{emergency.pk}", team_id=gpu_request.team_id,
            cluster_id=placed_window.cluster_id, request_ref=emergency.extends_id, occurred_at=now,
            data=window_event_data(placed_window, request_id=emergency.extends_id, extension_request_id=gpu_request.pk,
                                   approvers=approvers, plan_version=plan.version),
        )
        # The week's decision record lists it (its grants given back and extended): a revision, after commit.
        cycle_transition_record(
            cycle=cycle, actor=actor, plan=None,
            reason=_("extension of R-%(request)s placed (plan version %(version)s)") % {
                "request": emergency.extends_id, "version": plan.version},
            refused=_("The extension on week %(week)s was not placed and nothing was saved: its decision record "
                      "could not be written to the archive. %(reason)s"),
        )
    return plan


@write_transaction
def emergency_review_record(
    *, actor: User, emergency: EmergencyRequest, outcome: str, note: str = "", now: datetime | None = None
) -> EmergencyRequest:
    """The weekly review's after-the-fact decision on a placed emergency: endorsed or not, with a note.

    The decide guard's Act.REVIEW_EMERGENCY: the chair, not of the emergency's team nor recused from it
    (another member when every chair is), else PermissionDenied. Refused
    (StateConflict) unless it was placed and not yet reviewed; (ValidationError) for an unknown
    outcome, or "not endorsed" without a note. Writes an event on the request.
    """
    locked = EmergencyRequest.objects.select_for_update(of=("self",), no_key=True).select_related("request__team").get(
        pk=emergency.pk)
    selectors.decide_guard(actor=actor, gpu_request=locked.request, act=selectors.Act.REVIEW_EMERGENCY)
    if locked.status != EmergencyStatus.PLACED or locked.posthoc_outcome:
        raise StateConflict(_("Only a placed emergency that the review has not decided on yet can be reviewed."))
    note = (note or "").strip()
    errors: dict[str, list[Any]] = {}
    if outcome not in PostHocOutcome.values:
        errors["outcome"] = [_("Choose endorsed or not endorsed.")]
    elif outcome == PostHocOutcome.NOT_ENDORSED and not note:
        errors["note"] = [_("Say why the review does not endorse it: the team reads it.")]
    errors.update(limits.length_errors("note", note, limits.RATIONALE_MAX_LENGTH))
    if errors:
        raise ValidationError(errors)
    locked.posthoc_outcome = outcome
    locked.posthoc_note = note
    locked.posthoc_by_name = actor_name(actor)
    locked.posthoc_at = now or timezone.now()
    locked.save(update_fields=["posthoc_outcome", "posthoc_note", "posthoc_by_name", "posthoc_at"])
    reviewed = stored_text("emergency_reviewed", outcome=outcome, note=note)
    request_event_record(request=locked.request, actor=actor, action="emergency reviewed",
                         detail=text_render(reviewed), detail_text=reviewed)
    return locked
