"""The weekly review: closing intake, scoring, deciding, finalizing.

The cycle moves open → in_review (cycle_close_intake) → finalized (cycle_finalize); publishing
(finalized → published) lives in committee/services/publishing.py, scoring in committee/services/scores.py.
Every write here locks the cycle row first, so a score or a decision cannot slip in while the chair finalizes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from allocations.models import AllocationPlan, Team
from committee import limits, scoring, selectors, signals
from committee.models import (
    PLACING_OUTCOMES,
    Alternative,
    CycleStatus,
    Decision,
    DecisionOutcome,
    FairShareSnapshot,
    GpuRequest,
    NotificationKind,
    RequestStatus,
    ReviewCycle,
    criterion_label,
)
from committee.quarters import quarter_of
from committee.services.notifications import notification_enqueue
from committee.services.ranking import cycle_ranking_changed
from committee.services.requests import actor_name, request_events_record
from core.bulk import rows_update
from core.errors import StateConflict
from core.locks import write_transaction
from core.numbers import format_money
from core.texts import stored_text

AUTO_DEFER_NAME = "Docket"


def _lock_cycle(cycle: ReviewCycle) -> ReviewCycle:
    return ReviewCycle.objects.select_for_update(no_key=True).get(pk=cycle.pk)


def _require_status(cycle: ReviewCycle, status: str, doing: str) -> None:
    if cycle.status != status:
        raise StateConflict(
            _("Cannot %(doing)s: week %(week)s is %(status)s, not %(expected)s.")
            % {
                "doing": doing,
                "week": cycle.week,
                "status": cycle.get_status_display().lower(),
                "expected": CycleStatus(status).label.lower(),
            }
        )


def lock_request_in_review(*, gpu_request: GpuRequest, doing: str) -> tuple[GpuRequest, ReviewCycle]:
    """Lock the request's cycle, then the request: StateConflict unless the cycle is in review and it is submitted."""
    cycle = _lock_cycle(gpu_request.cycle)
    _require_status(cycle, CycleStatus.IN_REVIEW, doing)
    locked = GpuRequest.objects.select_related("team").get(pk=gpu_request.pk)
    if locked.status != RequestStatus.SUBMITTED:
        raise StateConflict(
            _("Only submitted requests are reviewed; this one is %(status)s.")
            % {"status": locked.get_status_display().lower()}
        )
    return locked, cycle


def cycle_transition_record(
    *, cycle: ReviewCycle, actor: User | None, plan: AllocationPlan | None, refused: str, reason: str = ""
) -> None:
    """Inside a finalize, publish, correction or appeal: let the apps that record the week (the archive) ask for it.
    Also for the weekly clock (`actor` None), when the week's agent actions came after its record
    (committee/services/records.py).

    The archive writes the week's record after the caller's transaction commits, through an outbox message
    written in it (so a committed change always gets its record). `reason` is why the week's record changes after
    the fact (a correction, an appeal), for the revision's summary. A receiver's ValidationError (what the archive
    can tell at once: an address the record needs is taken) becomes StateConflict(`refused` % {week, reason}) (the
    API's 409), raised out of the caller's transaction, so the change is rolled back and the actor reads why.
    """
    try:
        signals.cycle_transition.send(sender=ReviewCycle, cycle=cycle, actor=actor, plan=plan, reason=reason)
    except ValidationError as exc:
        raise StateConflict(refused % {"week": cycle.week, "reason": " ".join(exc.messages)}) from exc


@write_transaction
def cycle_close_intake(
    *, cycle: ReviewCycle, actor: User | None = None, now: datetime | None = None
) -> ReviewCycle:
    """Close intake: the cycle goes to review, its requests freeze, the fair-share factors are frozen.

    `actor` is the chair closing by hand, or None for the scheduled clock (Celery beat). Refused
    with a ValidationError unless the cycle is open. Writes one FairShareSnapshot per team, from the
    usage reported before this moment, which the review then ranks with. Enqueues (outbox, in
    this transaction) the committee's "intake closed" notification.
    """
    if actor is not None and not selectors.user_is_chair(user=actor):
        raise PermissionDenied(_("Only the chair closes intake."))
    locked = _lock_cycle(cycle)
    _require_status(locked, CycleStatus.OPEN, _("close intake"))
    now = now or timezone.now()
    shares = selectors.fair_share_live(as_of=now, week=locked.week)
    names = dict(Team.objects.filter(pk__in=shares).values_list("pk", "name"))
    FairShareSnapshot.objects.bulk_create(
        FairShareSnapshot(
            cycle=locked,
            team_id=team_id,
            team_name=names[team_id],
            weight=share.weight,
            total_weight=share.total_weight,
            decayed_gpu_hours=scoring.rounded(share.decayed_gpu_hours),
            total_decayed_gpu_hours=scoring.rounded(share.total_decayed_gpu_hours),
            department_weight=share.department_weight,
            top_total_weight=share.top_total_weight,
            department_decayed_gpu_hours=scoring.rounded(share.department_decayed_gpu_hours),
            as_of=now,
        )
        for team_id, share in shares.items()
    )
    locked.status = CycleStatus.IN_REVIEW
    locked.intake_closed_at = now
    locked.save(update_fields=["status", "intake_closed_at"])
    notification_enqueue(kind=NotificationKind.INTAKE_CLOSED, cycle=locked)
    return locked


@write_transaction
def request_decide(
    *,
    actor: User,
    gpu_request: GpuRequest,
    outcome: str,
    rationale: str,
    granted_gpu_count: int | None = None,
    alternative: Alternative | int | None = None,
    exception: str = "",
    granted_weeks: int | None = None,
) -> Decision:
    """Record (or revise) the committee's decision on a request while the cycle is in review.

    A grant of a run over several weeks (`request.run_weeks`) covers `granted_weeks` of them: the whole run (the
    default) or its first weeks only; a deferral or rejection covers none (`granted_weeks` must not be given).

    Grant gives every GPU asked for; partial a count from the request's minimum up to one less
    than asked; defer and reject none. "Grant the alternative" (`alternative`: one of the
    request's own feasible Alternative rows, or its id, cheaper than the request) gives the
    alternative's GPU-hours over the request's duration: ceil(alternative GPU-hours / duration)
    GPUs, at most the GPUs asked (`alternative_gpus`); its words and GPU-hours are copied onto the
    decision. Errors name the field (`alternative`). A rationale is required. Who may decide and the
    rubric's precondition for a grant are committee.selectors.deciding's (`decide_guard`, Act.DECIDE:
    seat, own team, declared conflicts, DOCKET_DECISIONS_RECORDED_BY; refused with PermissionDenied,
    the API's 403; `grant_refusal`: a ranked request with its quorum, or the chair's `exception`, stored
    on the decision). When the policy in force that week refuses a grant over budget
    (`charges.refuse_over_budget`), a grant, partial or alternative whose charge exceeds what its department has
    left in the quarter, the week's other grants counted (`selectors.grant_over_budget`), is refused
    (ValidationError on `outcome`, nothing written). The team sees the decision once the cycle is finalized; no
    event is written on the request until then.
    """
    selectors.decide_guard(actor=actor, gpu_request=gpu_request, act=selectors.Act.DECIDE)
    locked, cycle = lock_request_in_review(gpu_request=gpu_request, doing=_("record a decision"))
    errors: dict[str, list[Any]] = {}
    rationale = (rationale or "").strip()
    if not rationale:
        errors["rationale"] = [_("Write the rationale: the team reads it with the decision.")]
    errors.update(limits.length_errors("rationale", rationale, limits.RATIONALE_MAX_LENGTH))
    if outcome not in DecisionOutcome.values:
        errors["outcome"] = [_("Choose grant, partial, grant the alternative, defer or reject.")]
    granted: int | None = None
    chosen: Alternative | None = None
    if outcome == DecisionOutcome.ALTERNATIVE:
        chosen, alternative_errors = alternative_checked(gpu_request=locked, alternative=alternative)
        errors.update(alternative_errors)
        if chosen is not None:
            granted = alternative_gpus(gpu_request=locked, alternative_gpu_hours=chosen.gpu_hours)
    elif alternative is not None and outcome in DecisionOutcome.values:
        errors["alternative"] = [_("Only a grant of the alternative names an alternative.")]
    if outcome == DecisionOutcome.GRANT:
        granted = locked.gpu_count
    elif outcome == DecisionOutcome.PARTIAL:
        if granted_gpu_count is None or not locked.min_gpu_count <= granted_gpu_count < locked.gpu_count:
            errors["granted_gpu_count"] = [
                _("A partial grant gives from %(min)d to %(max)d GPUs (the request's minimum to one less than asked).")
                % {"min": locked.min_gpu_count, "max": locked.gpu_count - 1}
            ]
        else:
            granted = granted_gpu_count
    weeks_granted: int | None = None
    if outcome in PLACING_OUTCOMES:
        weeks_granted = locked.run_weeks if granted_weeks is None else granted_weeks
        if not 1 <= weeks_granted <= locked.run_weeks:
            errors["granted_weeks"] = [ngettext(
                "The request spans %(weeks)d week: grant it, or defer it.",
                "The request spans %(weeks)d weeks: grant from 1 to %(weeks)d of them (the first ones).",
                locked.run_weeks,
            ) % {"weeks": locked.run_weeks}]
    elif granted_weeks is not None and outcome in DecisionOutcome.values:
        errors["granted_weeks"] = [_("Only a grant covers weeks.")]
    exception_reason = ""
    if outcome in DecisionOutcome.values:
        try:
            exception_reason = selectors.grant_refusal(
                actor=actor, gpu_request=locked, cycle=cycle, outcome=outcome, exception=exception
            )
        except ValidationError as exc:
            for key, messages in exc.message_dict.items():
                errors.setdefault(key, []).extend(messages)
    if granted and not errors:
        over = selectors.grant_over_budget(
            gpu_request=locked, cycle_week=cycle.week, quarter=quarter_of(cycle.starts_at), gpu_count=granted)
        if over is not None:
            errors["outcome"] = [_(
                "The policy refuses a grant over budget: granting %(gpus)d GPUs charges %(charge)s to %(department)s, "
                "which has %(left)s left in %(quarter)s once this week's other grants are counted (over by "
                "%(over)s). Grant fewer GPUs, defer or reject; nothing was recorded.") % {
                "gpus": granted, "charge": format_money(over.charge), "department": over.budget.name,
                "left": format_money(over.budget.left), "quarter": over.budget.quarter,
                "over": format_money(over.over_by)}]
    if errors:
        raise ValidationError(errors)
    decision, _created = Decision.objects.update_or_create(
        request=locked,
        defaults={
            "cycle": cycle,
            "outcome": outcome,
            "requested_gpu_count": locked.gpu_count,
            "granted_gpu_count": granted,
            # The whole run is stored as None (Decision.weeks_granted), so a correction that keeps the run keeps it.
            "granted_weeks": weeks_granted if weeks_granted and weeks_granted < locked.run_weeks else None,
            "alternative": chosen,
            "alternative_description": chosen.description if chosen else "",
            "alternative_gpu_hours": chosen.gpu_hours if chosen else None,
            "rationale": rationale,
            "exception_reason": exception_reason,
            "decided_by": actor,
            "decided_by_name": actor_name(actor),
            "decided_at": timezone.now(),
            "team_name": locked.team.name,
            "request_title": locked.title,
            "cycle_week": cycle.week,
        },
    )
    cycle_ranking_changed(cycle=cycle)
    return decision


def alternative_gpus(*, gpu_request: GpuRequest, alternative_gpu_hours: int) -> int:
    """The GPUs a grant of the alternative places: its GPU-hours over the request's duration, rounded up.

    The request's duration and window stay as the team planned them; the GPU count shrinks, at
    most to the GPUs asked. 1,500 GPU-hours over a 48-hour request: ceil(1500 / 48) = 32 GPUs.
    """
    return min(gpu_request.gpu_count, -(-alternative_gpu_hours // gpu_request.duration_hours))


def alternative_checked(
    *, gpu_request: GpuRequest, alternative: Alternative | int | None
) -> tuple[Alternative | None, dict[str, list[Any]]]:
    """The request's alternative named by `alternative`, or the errors (keyed `alternative`) why not."""
    if alternative is None:
        return None, {"alternative": [_("Choose which of the request's alternatives is granted.")]}
    alternative_id = alternative.pk if isinstance(alternative, Alternative) else alternative
    if isinstance(alternative_id, bool) or not isinstance(alternative_id, int):
        return None, {"alternative": [_("Name the alternative by its id.")]}
    chosen = Alternative.objects.filter(pk=alternative_id, request=gpu_request).first()
    if chosen is None:
        return None, {"alternative": [_("That is not one of this request's alternatives.")]}
    if not chosen.feasible:
        return None, {
            "alternative": [_("The team marked “%(alternative)s” as not feasible for it.") % {"alternative": chosen}]
        }
    if chosen.gpu_hours >= gpu_request.requested_gpu_hours:
        return None, {
            "alternative": [
                _("“%(alternative)s” needs %(alt)d GPU-hours, no fewer than the %(asked)d asked: grant the request.")
                % {"alternative": chosen, "alt": chosen.gpu_hours, "asked": gpu_request.requested_gpu_hours}
            ]
        }
    return chosen, {}


@write_transaction
def cycle_finalize(*, cycle: ReviewCycle, actor: User) -> ReviewCycle:
    """Close the review: every ranked request must have a decision.

    Freezes each decision's rank and weighted total, gives requests below quorum that have no
    decision an automatic "defer" (with a rationale naming the missing scores), sets every request
    in review to decided, writes a "decided" event on each, and marks the cycle finalized. Refused
    (ValidationError, nothing written) unless the cycle is in review and every ranked request is
    decided. Before commit, the archive asks for the week's decision record (`cycle_transition`: an outbox
    message, the record written after commit): if it can tell it cannot write it, nothing is finalized
    (ValidationError naming the cause).
    """
    if not selectors.user_is_chair(user=actor):
        raise PermissionDenied(_("Only the chair finalizes the week."))
    locked = _lock_cycle(cycle)
    _require_status(locked, CycleStatus.IN_REVIEW, _("finalize"))
    rows = selectors.cycle_ranking(cycle=locked)
    undecided = [row.request.title for row in rows if row.result.rank is not None and row.decision is None]
    if undecided:
        raise StateConflict(
            _("Every ranked request needs a decision first; still undecided: %(titles)s.")
            % {"titles": "; ".join(undecided)}
        )
    now = timezone.now()
    quorum = selectors.governance_for_week(week=locked.week).score_quorum
    automatic: list[Decision] = []
    frozen: list[Decision] = []
    events: list[tuple[GpuRequest, dict[str, Any]]] = []
    for row in rows:
        request, result = row.request, row.result
        decision = row.decision
        if decision is None:
            decision = Decision(
                request=request,
                cycle=locked,
                outcome=DecisionOutcome.DEFER,
                requested_gpu_count=request.gpu_count,
                rationale=_(
                    "Deferred automatically: not ranked, because %(criteria)s had fewer than %(quorum)d member "
                    "scores when the week was finalized."
                )
                % {
                    "criteria": ", ".join(criterion_label(c).lower() for c in result.missing),
                    "quorum": quorum,
                },
                decided_by=None,
                decided_by_name=AUTO_DEFER_NAME,
                decided_at=now,
                team_name=request.team.name,
                request_title=request.title,
                cycle_week=locked.week,
            )
            automatic.append(decision)
        else:
            frozen.append(decision)
        decision.priority_rank = result.rank
        decision.weighted_total = result.total
        events.append((request, stored_text(
            "request_decided", outcome=decision.outcome, granted_gpu_count=decision.granted_gpu_count,
            alternative=decision.alternative_description if decision.outcome == DecisionOutcome.ALTERNATIVE else "",
            alternative_gpu_hours=(str(decision.alternative_gpu_hours)
                                   if decision.outcome == DecisionOutcome.ALTERNATIVE else None))))
    # One write per kind of row, whatever the number of requests.
    Decision.objects.bulk_create(automatic)
    rows_update(Decision, frozen, ["priority_rank", "weighted_total"])
    request_events_record(details=events, actor=actor, action="decided")
    GpuRequest.objects.filter(pk__in=[row.request.pk for row in rows]).update(
        status=RequestStatus.DECIDED, updated_at=now
    )
    locked.status = CycleStatus.FINALIZED
    locked.finalized_at = now
    locked.finalized_by_name = actor_name(actor)
    locked.save(update_fields=["status", "finalized_at", "finalized_by_name"])
    cycle_transition_record(
        cycle=locked,
        actor=actor,
        plan=None,
        refused=_("Week %(week)s is not finalized and nothing was saved: its decision record could not be "
                  "written to the archive. %(reason)s"),
    )
    return locked
