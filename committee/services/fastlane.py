"""The fast lane: a small request of the running week, granted on submission when it passes four checks.

A team files it for the running week (like an emergency: from now, or its earliest start, to the week's end). In one
transaction Docket checks, in order, and the first that fails says why in plain words: its GPU-hours (GPUs x hours)
are within `fast_lane.max_gpu_hours`; its department's budget has room for its charge
(committee.selectors.budgets); the team is not above its fair share (committee.selectors.fair_share_live); it fits
in the pool's fast-lane reserve for its whole duration beside every published window (allocations.fastlane). All
pass: a grant (the decision says "granted in the fast lane"), a standard window, the week's next plan version
published (committee.services.running_week, as an emergency is), the team told. One fails: nothing is granted, the
request page says why and the request goes to the next weekly review as a normal request (a draft of its intake,
for the team to complete with the evidence every request carries and submit, or withdraw). The next review lists
the week's fast-lane grants; the chair may revoke one that has not started (`fast_lane_revoke`).
See docs/fast-lane.md.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _

from allocations import engine
from allocations.explanations import reasons_as_json
from allocations.fastlane import FastLaneRoom, fast_lane_place
from allocations.models import AllocationPlan, GpuPool, Team
from committee import limits, selectors
from committee.models import (
    CycleStatus,
    Decision,
    DecisionOutcome,
    FastLaneCheck,
    FastLaneRequest,
    FastLaneStatus,
    GpuRequest,
    NotificationKind,
    RequestStatus,
    ReviewCycle,
)
from committee.quarters import quarter_of, quarters_of_span
from committee.selectors.budgets import department_budgets, request_charge, request_prices
from committee.services.notification_kinds import published_params
from committee.services.notifications import notification_enqueue, notifications_record
from committee.services.requests import actor_name, request_event_record
from committee.services.running_week import next_review, running_cycle, running_week_of, running_week_publish
from core.errors import StateConflict
from core.locks import write_transaction
from core.texts import stored_text, text_render
from governed.params import FAST_LANE_MAX_GPU_HOURS, as_int
from governed.selectors import policy_value


@dataclass(frozen=True)
class Refusal:
    check: str  # a FastLaneCheck
    text: dict[str, Any]  # core.texts.stored_text: why, in any language


def _running_cycle(now: datetime) -> ReviewCycle:
    return running_cycle(now=now, refused=_("No allocation week is running now, so there is no fast lane to file in."))


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def fast_lane_checks(*, gpu_request: GpuRequest, now: datetime) -> tuple[Refusal | None, engine.EngineWindow | None]:
    """The four checks in order on a fast-lane `gpu_request` of the running week: the first refusal, or the window
    it would get. Reads only."""
    cycle = gpu_request.cycle
    gpu_hours = gpu_request.gpu_count * gpu_request.duration_hours
    ceiling = as_int(policy_value(key=FAST_LANE_MAX_GPU_HOURS, week=cycle.week))
    if gpu_hours > ceiling:
        return Refusal(FastLaneCheck.CEILING, stored_text(
            "fast_lane_over_ceiling", gpus=gpu_request.gpu_count, hours=gpu_request.duration_hours,
            gpu_hours=gpu_hours, ceiling=ceiling)), None
    department_id = gpu_request.team.department_id
    if department_id is not None:
        quarter = quarter_of(cycle.starts_at)
        budgets = department_budgets(quarter=quarter, department_ids=[department_id])
        if budgets and budgets[0].has_budget:
            price = request_prices(requests=[gpu_request], week=cycle.week)[gpu_request.pool_id]
            charge = request_charge(gpu_request, price_per_gpu_hour=price)
            if charge > budgets[0].left:
                return Refusal(FastLaneCheck.BUDGET, stored_text(
                    "fast_lane_over_budget", department=budgets[0].name, quarter=quarter, charge=str(charge),
                    left=str(max(budgets[0].left, Decimal(0))))), None
    share = selectors.fair_share_live(as_of=now, week=cycle.week).get(gpu_request.team_id)
    if share is not None and share.effective_usage > share.entitled_share:
        return Refusal(FastLaneCheck.FAIR_SHARE, stored_text(
            "fast_lane_over_fair_share", team=gpu_request.team.name,
            used_pct=round(100 * share.effective_usage, 1), entitled_pct=round(100 * share.entitled_share, 1))), None
    week = running_week_of(cycle=cycle)
    capacity = week.capacity(gpu_request.pool.key)
    fast_lane_refs = set(GpuRequest.objects.filter(
        pk__in=[w.ref for w in week.fixed], is_fast_lane=True).values_list("pk", flat=True))
    placed = fast_lane_place(
        pool=capacity, week_start=cycle.starts_at, hours=cycle.hours, fixed=week.fixed, fast_lane_refs=fast_lane_refs,
        ref=gpu_request.pk, gpu_count=gpu_request.gpu_count, duration_hours=gpu_request.duration_hours,
        earliest_start=max(now, gpu_request.earliest_start),
    )
    if isinstance(placed, FastLaneRoom):
        return Refusal(FastLaneCheck.ROOM, stored_text(
            "fast_lane_no_room", pool=capacity.key, reserve=placed.reserve_gpus, free=placed.most_gpus_free,
            gpus=gpu_request.gpu_count, hours=gpu_request.duration_hours)), None
    return None, placed


@write_transaction
def fast_lane_request_file(
    *,
    actor: User,
    team: Team,
    pool: GpuPool,
    title: str,
    gpu_count: int,
    duration_hours: int,
    justification: str = "",
    earliest_start: datetime | None = None,
    now: datetime | None = None,
) -> FastLaneRequest:
    """File a fast-lane request of `team` for the running week and decide it at once.

    Only a member of `team` (PermissionDenied). Refused (ValidationError keyed by field, nothing written) for no
    title, GPUs outside 1..the pool's, or a duration that does not end by the week's end from its start (now, or
    `earliest_start` if later, rounded up to the hour): a fast-lane request never runs past the week's end.
    StateConflict when no week is running. Then the checks (`fast_lane_checks`): all pass, it is granted and placed,
    a new plan version published, the team notified; one fails, the request moves to the next weekly review as a
    draft of its intake (or, with none open, or when the team already has a request for the pool there, stays
    withdrawn), with the reason on its page.
    """
    if not selectors.user_is_team_member(user=actor, team=team):
        raise PermissionDenied(_("Only a member of %(team)s files its fast-lane requests.") % {"team": team.name})
    now = now or timezone.now()
    cycle = _running_cycle(now)
    title, justification = (title or "").strip(), (justification or "").strip()
    start = max(now, earliest_start or now)
    errors: dict[str, list[Any]] = {}
    if not title:
        errors["title"] = [_("Name the work that needs the GPUs.")]
    errors.update(limits.length_errors("justification", justification, limits.JUSTIFICATION_MAX_LENGTH))
    if not _whole(gpu_count) or not 1 <= gpu_count <= pool.gpu_count:
        errors["gpu_count"] = [_("From 1 to %(count)d GPUs (the pool %(pool)s).") % {"count": pool.gpu_count,
                                                                                     "pool": pool.key}]
    if start >= cycle.ends_at:
        errors["earliest_start"] = [_("The fast lane places work in the running week, which ends %(end)s.")
                                    % {"end": f"{cycle.ends_at:%Y-%m-%d %H:%M} UTC"}]
    hours_left = int((cycle.ends_at - start).total_seconds() // 3600)
    if not _whole(duration_hours) or not 1 <= duration_hours <= hours_left:
        errors["duration_hours"] = [
            _("From 1 to %(hours)d hours: a fast-lane request ends by the end of week %(week)s, %(end)s. "
              "File a longer one for the weekly review.")
            % {"hours": max(hours_left, 0), "week": cycle.week, "end": f"{cycle.ends_at:%Y-%m-%d %H:%M} UTC"}
        ]
    if errors:
        raise ValidationError(errors)
    gpu_request = GpuRequest.objects.create(
        team=team, cycle=cycle, pool=pool, title=title, gpu_count=gpu_count, min_gpu_count=gpu_count,
        duration_hours=duration_hours, earliest_start=start, latest_end=cycle.ends_at, preemptible_ok=False,
        status=RequestStatus.SUBMITTED, is_fast_lane=True, created_by=actor, submitted_by=actor, submitted_at=now,
    )
    fast = FastLaneRequest(request=gpu_request, filed_at=now, filed_week=cycle.week, review_cycle=next_review(now=now))
    request_event_record(request=gpu_request, actor=actor, action="fast lane", detail=justification)
    refusal, window = fast_lane_checks(gpu_request=gpu_request, now=now)
    if refusal is not None:
        _refuse(fast=fast, refusal=refusal, actor=actor)
        return fast
    assert window is not None
    week = running_week_of(cycle=cycle)
    capacity = week.capacity(pool.key)
    placed_reason = engine.Reason("placed", {
        "start": engine.instant_param(window.start), "end": engine.instant_param(window.end),
        "gpu_count": window.gpu_count, "gpu_model": capacity.gpu_model, "preemptible": False, "fast_lane": True})
    plan = running_week_publish(
        week=week, actor=actor, source_ref=f"fast-lane:{gpu_request.pk}", gpu_request=gpu_request, window=window,
        explanation=engine.Explanation(ref=gpu_request.pk, placed=True, shortened=False, reasons=(placed_reason,)),
        note_text=stored_text("fast_lane_placed", title=title, team=team.name, gpu_count=gpu_count,
                              hours=duration_hours),
    )
    gpu_request.status = RequestStatus.DECIDED
    gpu_request.save(update_fields=["status", "updated_at"])
    rationale = stored_text("fast_lane_granted", gpu_hours=gpu_count * duration_hours)
    decision = Decision.objects.create(
        request=gpu_request, cycle=cycle, outcome=DecisionOutcome.GRANT, requested_gpu_count=gpu_count,
        granted_gpu_count=gpu_count, rationale=text_render(rationale)[: limits.RATIONALE_MAX_LENGTH],
        rationale_text=rationale, decided_by=None, decided_by_name="fast lane", team_name=team.name,
        request_title=title, cycle_week=cycle.week,
    )
    fast.status = FastLaneStatus.GRANTED
    fast.plan = plan
    fast.save()
    published = stored_text("fast_lane_published", version=plan.version, reasons=reasons_as_json([placed_reason]),
                            week_start=cycle.starts_at.isoformat())
    request_event_record(request=gpu_request, actor=actor, action="published", detail=text_render(published),
                         detail_text=published)
    outcome = selectors.request_outcome_get(gpu_request=gpu_request)
    notifications_record(
        recipient_ids=selectors.team_member_ids(team_ids=[team.pk]).get(team.pk, []),
        kind=NotificationKind.DECISION_PUBLISHED,
        key=f"decision:{gpu_request.pk}:plan-v{plan.version}",
        params=published_params(decision=decision, cycle=cycle, plan=plan, outcome=outcome),
    )
    notification_enqueue(kind=NotificationKind.BUDGET_ALERT, quarters=quarters_of_span(cycle.starts_at, cycle.ends_at),
                         ref=f"{cycle.week}:v{plan.version}")
    return fast


def _refuse(*, fast: FastLaneRequest, refusal: Refusal, actor: User) -> None:
    """Nothing granted: the reason kept, and the request moved to the next weekly review as a draft of its intake."""
    gpu_request = fast.request
    fast.status = FastLaneStatus.REFUSED
    fast.failed_check = refusal.check
    fast.reason_text = refusal.text
    fast.reason = text_render(refusal.text)[: limits.RATIONALE_MAX_LENGTH]
    fast.save()
    request_event_record(request=gpu_request, actor=actor, action="fast lane refused", detail=fast.reason,
                         detail_text=refusal.text)
    review = ReviewCycle.objects.filter(status=CycleStatus.OPEN, starts_at__gt=gpu_request.cycle.starts_at).order_by(
        "starts_at").first()
    taken = review is not None and GpuRequest.objects.filter(
        team=gpu_request.team, pool=gpu_request.pool, cycle=review, is_emergency=False, is_fast_lane=False,
    ).filter(~Q(status=RequestStatus.WITHDRAWN)).exists()
    if review is None or taken:
        gpu_request.status = RequestStatus.WITHDRAWN
        gpu_request.save(update_fields=["status", "updated_at"])
        moved = stored_text("fast_lane_not_moved", taken=taken)
        request_event_record(request=gpu_request, actor=actor, action="withdrawn", detail=text_render(moved),
                             detail_text=moved)
        return
    # A draft of that week's intake, its window the whole week: the team adds the evidence every request of the
    # review carries (last week's usage, the forecast) and submits it, or withdraws it.
    gpu_request.cycle = review
    gpu_request.is_fast_lane = False
    gpu_request.status = RequestStatus.DRAFT
    gpu_request.submitted_at = None
    gpu_request.submitted_by = None
    gpu_request.earliest_start = review.starts_at
    gpu_request.latest_end = review.ends_at
    gpu_request.save(update_fields=["cycle", "is_fast_lane", "status", "submitted_at", "submitted_by",
                                    "earliest_start", "latest_end", "updated_at"])
    moved = stored_text("fast_lane_moved", week=review.week)
    request_event_record(request=gpu_request, actor=actor, action="moved", detail=text_render(moved),
                         detail_text=moved)


@write_transaction
def fast_lane_revoke(*, actor: User, fast: FastLaneRequest, reason: str, now: datetime | None = None) -> AllocationPlan:
    """The review revokes a fast-lane grant whose window has not started: the week's next plan version without it,
    and its decision a reject whose rationale gives the reason (no later placement of the week places it again).

    The decide guard's Act.REVOKE_FAST_LANE (the chair, not of the team nor recused), else PermissionDenied.
    Refused (ValidationError, nothing written) without a reason; (StateConflict) unless it is granted and not yet
    revoked, or once its window has started (a running job is not taken away: the window stays).
    """
    locked = FastLaneRequest.objects.select_for_update(of=("self",), no_key=True).select_related(
        "request__team", "request__pool__cluster", "request__cycle").get(pk=fast.pk)
    gpu_request = locked.request
    selectors.decide_guard(actor=actor, gpu_request=gpu_request, act=selectors.Act.REVOKE_FAST_LANE)
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({"reason": [_("Say why the grant is revoked: the team reads it.")]})
    errors = limits.length_errors("reason", reason, limits.RATIONALE_MAX_LENGTH)
    if errors:
        raise ValidationError(errors)
    if locked.status != FastLaneStatus.GRANTED:
        raise StateConflict(_("Only a fast-lane grant in force can be revoked; this one is %(status)s.")
                            % {"status": locked.get_status_display().lower()})
    now = now or timezone.now()
    week = running_week_of(cycle=gpu_request.cycle)
    window = next((w for w in week.fixed if w.ref == gpu_request.pk), None)
    if window is None:
        raise StateConflict(_("This fast-lane grant has no window in the week's current plan."))
    if window.start <= now:
        raise StateConflict(_("This fast-lane window started %(start)s: a started window is not revoked (the team "
                              "may give it back).") % {"start": f"{window.start:%Y-%m-%d %H:%M} UTC"})
    plan = running_week_publish(
        week=week, actor=actor, source_ref=f"fast-lane-revoke:{gpu_request.pk}", gpu_request=gpu_request,
        remove=True,
        explanation=engine.Explanation(ref=gpu_request.pk, placed=False, shortened=False, reasons=(
            engine.Reason("revoked", {"reason": reason}),)),
        note_text=stored_text("fast_lane_revoked", title=gpu_request.title, team=gpu_request.team.name, reason=reason),
    )
    # The grant is undone: a reject whose rationale says why, so that no later placement of the week (a correction, a
    # release's re-plan) places the request again.
    revoked = stored_text("fast_lane_revoked", title=gpu_request.title, team=gpu_request.team.name, reason=reason)
    decision = Decision.objects.select_for_update(no_key=True).get(request=gpu_request)
    decision.outcome = DecisionOutcome.REJECT
    decision.granted_gpu_count = None
    decision.rationale = text_render(revoked)[: limits.RATIONALE_MAX_LENGTH]
    decision.rationale_text = revoked
    decision.decided_by = actor
    decision.decided_by_name = actor_name(actor)
    decision.save(update_fields=["outcome", "granted_gpu_count", "rationale", "rationale_text", "decided_by",
                                 "decided_by_name"])
    locked.status = FastLaneStatus.REVOKED
    locked.revoked_at = now
    locked.revoked_by_name = actor_name(actor)
    locked.revoke_reason = reason
    locked.save(update_fields=["status", "revoked_at", "revoked_by_name", "revoke_reason"])
    request_event_record(request=gpu_request, actor=actor, action="fast lane revoked", detail=text_render(revoked),
                         detail_text=revoked)
    notifications_record(
        recipient_ids=selectors.team_member_ids(team_ids=[gpu_request.team_id]).get(gpu_request.team_id, []),
        kind=NotificationKind.DECISION_PUBLISHED,
        key=f"decision:{gpu_request.pk}:plan-v{plan.version}",
        params={**published_params(decision=decision, cycle=gpu_request.cycle, plan=plan,
                                   outcome=selectors.request_outcome_get(gpu_request=gpu_request)),
                "path": reverse("committee:request-detail", args=[gpu_request.pk])},
    )
    return plan
