"""After the week is finalized: the chair corrects a decision, a team appeals its outcome.

A correction changes a decision of a finalized or published week, with a required reason, and
keeps the old values in a `DecisionCorrection` row. In a published week it also publishes the
week's next plan version through `cycle_plan_place` (the windows that have started stay as they
are). Either way the week's decision record is rewritten (`cycle_transition`, with the reason in
the revision's summary) and the request's team is told.

An appeal is a team member's statement against a published outcome, filed within
settings.DOCKET_APPEAL_WINDOW_HOURS of the week's first publication. A committee member who is not
a member of the team decides it: upheld (with a reason) or amended, and an amendment is a
correction through the same code. Every write here locks the cycle row first, as the review does.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from allocations import selectors as allocation_selectors
from committee import limits, selectors
from committee.models import (
    Alternative,
    Appeal,
    AppealStatus,
    CycleStatus,
    Decision,
    DecisionCorrection,
    DecisionOutcome,
    GpuRequest,
    NotificationKind,
    ReviewCycle,
)
from committee.services.notifications import notification_enqueue
from committee.services.publishing import cycle_plan_place
from committee.services.ranking import cycle_ranking_changed
from committee.services.requests import actor_name, request_event_record
from committee.services.review import alternative_checked, alternative_gpus, cycle_transition_record
from core.datetimes import format_when
from core.errors import StateConflict
from core.locks import write_transaction
from core.texts import stored_text, text_render

APPEAL_UPHOLD = "uphold"
APPEAL_AMEND = "amend"


def _lock_cycle(cycle: ReviewCycle) -> ReviewCycle:
    return ReviewCycle.objects.select_for_update(no_key=True).get(pk=cycle.pk)


def _new_values(
    *, decision: Decision, outcome: str, rationale: str, granted_gpu_count: int | None, alternative: int | None
) -> tuple[int | None, str, Alternative | None]:
    """The corrected decision's granted GPUs, rationale and alternative granted, or ValidationError naming each bad
    field. The same choices as the review's decision form: grant, partial, grant the alternative, defer, reject."""
    request = decision.request
    errors: dict[str, list[Any]] = {}
    rationale = (rationale or "").strip()
    if not rationale:
        errors["rationale"] = [_("Write the rationale: the team reads it with the decision.")]
    errors.update(limits.length_errors("rationale", rationale, limits.RATIONALE_MAX_LENGTH))
    granted: int | None = None
    chosen: Alternative | None = None
    if outcome not in DecisionOutcome.values:
        errors["outcome"] = [_("Choose grant, partial, grant the alternative, defer or reject.")]
    elif outcome == DecisionOutcome.ALTERNATIVE:
        chosen, alternative_errors = alternative_checked(gpu_request=request, alternative=alternative)
        errors.update(alternative_errors)
        if chosen is not None:
            granted = alternative_gpus(gpu_request=request, alternative_gpu_hours=chosen.gpu_hours)
    elif alternative is not None:
        errors["alternative"] = [_("Only a grant of the alternative names an alternative.")]
    if outcome == DecisionOutcome.GRANT:
        granted = request.gpu_count
    elif outcome == DecisionOutcome.PARTIAL:
        if granted_gpu_count is None or not request.min_gpu_count <= granted_gpu_count < request.gpu_count:
            errors["granted_gpu_count"] = [
                _("A partial grant gives from %(min)d to %(max)d GPUs (the request's minimum to one less than asked).")
                % {"min": request.min_gpu_count, "max": request.gpu_count - 1}
            ]
        else:
            granted = granted_gpu_count
    if errors:
        raise ValidationError(errors)
    same_alternative = (chosen.pk if chosen else None) == decision.alternative_id
    if (outcome, granted, rationale) == (decision.outcome, decision.granted_gpu_count, decision.rationale) and (
        same_alternative
    ):
        raise ValidationError(
            {"outcome": [_("This correction changes nothing: the decision already says exactly that.")]}
        )
    return granted, rationale, chosen


@dataclass(frozen=True)
class CorrectionValues:
    """A correction's or an amendment's new decision, checked (`correction_check`): what the confirmation shows."""

    decision: Decision
    outcome: str
    granted_gpu_count: int | None
    rationale: str
    alternative: Alternative | None
    exception: str


def correction_check(
    *,
    actor: User,
    gpu_request: GpuRequest,
    act: selectors.Act,
    outcome: str,
    rationale: str,
    granted_gpu_count: int | None = None,
    alternative: int | None = None,
    exception: str = "",
    reason: str = "",
) -> CorrectionValues:
    """Every check a correction (`act` CORRECT) or an amendment (AMEND) makes before it writes, writing nothing:
    the decide guard (PermissionDenied), the reason, the new values and the rubric's precondition (ValidationError
    keyed by field), a week not finalized (StateConflict). The confirmation page previews the returned values."""
    selectors.decide_guard(actor=actor, gpu_request=gpu_request, act=act)
    if act == selectors.Act.CORRECT:
        _reason_checked(reason, field="reason", missing=_("Say why the decision is corrected."))
    else:
        _reason_checked(reason, field="reason", missing=_("Say why the appeal is decided this way."))
    try:
        decision = Decision.objects.select_related("request__team", "request__pool", "cycle").get(
            request=gpu_request)
    except Decision.DoesNotExist:
        raise StateConflict(_("This request has no decision to correct or appeal.")) from None
    if decision.cycle.status not in (CycleStatus.FINALIZED, CycleStatus.PUBLISHED):
        raise StateConflict(_("The week is not finalized: change the decision on the review page."))
    granted, rationale, chosen = _new_values(decision=decision, outcome=outcome, rationale=rationale,
                                             granted_gpu_count=granted_gpu_count, alternative=alternative)
    exception_reason = selectors.grant_refusal(actor=actor, gpu_request=decision.request, cycle=decision.cycle,
                                               outcome=outcome, exception=exception)
    return CorrectionValues(decision=decision, outcome=outcome, granted_gpu_count=granted, rationale=rationale,
                            alternative=chosen, exception=exception_reason)


def _reason_checked(reason: str, *, field: str, missing: str) -> str:
    reason = (reason or "").strip()
    if not reason:
        raise ValidationError({field: [missing]})
    too_long = limits.length_errors(field, reason, limits.REASON_MAX_LENGTH)
    if too_long:
        raise ValidationError(too_long)
    return reason


def _correct(
    *,
    actor: User,
    cycle: ReviewCycle,
    decision: Decision,
    outcome: str,
    rationale: str,
    reason: str,
    granted_gpu_count: int | None,
    alternative: int | None,
    exception: str,
    now: datetime,
    appeal: Appeal | None,
    preview_digest: str | None = None,
    keep_other_teams: bool | None = None,
) -> DecisionCorrection:
    """The correction itself, for a caller that asked the decide guard and locked the cycle.

    The rubric's precondition for a grant is checked here (`selectors.grant_refusal`): a request
    below quorum is granted only with the chair's stated exception, stored on the correction and the decision.
    """
    if cycle.status not in (CycleStatus.FINALIZED, CycleStatus.PUBLISHED):
        raise StateConflict(
            _("Decisions of week %(week)s are corrected after the week is finalized; it is %(status)s, so change "
              "the decision on the review page instead.")
            % {"week": cycle.week, "status": cycle.get_status_display().lower()}
        )
    granted, rationale, chosen = _new_values(
        decision=decision, outcome=outcome, rationale=rationale, granted_gpu_count=granted_gpu_count,
        alternative=alternative,
    )
    exception_reason = selectors.grant_refusal(
        actor=actor, gpu_request=decision.request, cycle=cycle, outcome=outcome, exception=exception
    )
    published = cycle.status == CycleStatus.PUBLISHED
    current = allocation_selectors.plan_for_week(week=cycle.week) if published else None
    correction = DecisionCorrection.objects.create(
        decision=decision,
        cycle=cycle,
        appeal=appeal,
        team_name=decision.team_name,
        request_title=decision.request_title,
        previous_outcome=decision.outcome,
        previous_granted_gpu_count=decision.granted_gpu_count,
        previous_rationale=decision.rationale,
        previous_decided_by_name=decision.decided_by_name,
        previous_alternative_description=decision.alternative_description,
        outcome=outcome,
        granted_gpu_count=granted,
        rationale=rationale,
        alternative_description=chosen.description if chosen else "",
        alternative_gpu_hours=chosen.gpu_hours if chosen else None,
        exception_reason=exception_reason,
        reason=reason,
        corrected_by=actor,
        corrected_by_name=actor_name(actor),
        corrected_at=now,
        plan_version=current.version + 1 if current is not None else None,
    )
    decision.outcome = outcome
    decision.granted_gpu_count = granted
    decision.rationale = rationale
    decision.rationale_text = {}  # the chair's own words now, not Docket's
    decision.decided_by = actor
    decision.decided_by_name = actor_name(actor)
    decision.decided_at = now
    decision.exception_reason = exception_reason
    decision.alternative = chosen
    decision.alternative_description = chosen.description if chosen else ""
    decision.alternative_gpu_hours = chosen.gpu_hours if chosen else None
    decision.save(update_fields=["outcome", "granted_gpu_count", "rationale", "rationale_text", "decided_by",
                                 "decided_by_name", "decided_at", "alternative", "alternative_description",
                                 "alternative_gpu_hours", "exception_reason"])
    cycle_ranking_changed(cycle=cycle)
    corrected = stored_text("decision_corrected", previous_outcome=correction.previous_outcome,
                            previous_granted_gpu_count=correction.previous_granted_gpu_count, outcome=outcome,
                            granted_gpu_count=granted, reason=reason)
    request_event_record(request=decision.request, actor=actor, action="corrected", detail=text_render(corrected),
                         detail_text=corrected)
    reason_text = stored_text("plan_corrected", title=decision.request_title, team=decision.team_name, reason=reason)
    record_reason = text_render(reason_text)
    if published:
        if keep_other_teams is None:
            keep_other_teams = settings.DOCKET_CORRECTIONS_KEEP_OTHER_TEAMS
        keep = selectors.other_teams_refs(gpu_request=decision.request) if keep_other_teams else frozenset()
        plan = cycle_plan_place(actor=actor, cycle=cycle, reason=record_reason, reason_text=reason_text, now=now,
                                expect_digest=preview_digest, keep=keep)
        if plan.version != correction.plan_version:  # the cycle is locked: nobody else can publish meanwhile
            raise StateConflict(_("Another plan version was published meanwhile; try again."))
    else:
        cycle_transition_record(
            cycle=cycle,
            actor=actor,
            plan=None,
            reason=record_reason,
            refused=_("The decision on week %(week)s was not corrected and nothing was saved: its decision record "
                      "could not be written to the archive. %(reason)s"),
        )
    if appeal is None:  # an amendment's team hears of it as the appeal's answer
        notification_enqueue(kind=NotificationKind.DECISION_CORRECTED, correction=correction)
    return correction


def _decision_of(gpu_request: GpuRequest) -> Decision:
    try:
        # Only the decision's row: its lock is what orders two corrections or appeals of one request. Without
        # of=("self",) the join would lock the team and pool rows too, which every other writer of that team or pool
        # takes in another order (a deadlock under concurrent writes).
        return Decision.objects.select_for_update(of=("self",), no_key=True).select_related(
            "request__team", "request__pool").get(request=gpu_request)
    except Decision.DoesNotExist:
        raise StateConflict(_("This request has no decision to correct or appeal.")) from None


@write_transaction
def decision_correct(
    *,
    actor: User,
    gpu_request: GpuRequest,
    outcome: str,
    rationale: str,
    reason: str,
    granted_gpu_count: int | None = None,
    alternative: int | None = None,
    exception: str = "",
    preview_digest: str | None = None,
    keep_other_teams: bool | None = None,
    now: datetime | None = None,
) -> DecisionCorrection:
    """The chair changes the decision on a request of a finalized or published week, saying why.

    Refused with PermissionDenied unless the decide guard allows it (`selectors.decide_guard`,
    Act.CORRECT: the chair, not of the request's team, not recused from it; another member when every
    chair is); ValidationError (nothing changes) without a reason or rationale, for an outcome, GPU
    count or alternative the decision form would refuse, a grant of an unranked request without the
    chair's stated `exception`, or when it changes nothing; StateConflict before the week is finalized
    (the review page decides then), and when `preview_digest` (the confirmation page's
    `selectors.decision_change_preview(...).digest`) no longer matches what would be published.
    `keep_other_teams` (default DOCKET_CORRECTIONS_KEEP_OTHER_TEAMS): other teams' windows that have not
    started stay as they are instead of being placed again.

    Writes a `DecisionCorrection` with the old and the new values, updates the decision, writes a
    "corrected" event on the request. In a published week it publishes the next plan version
    (`cycle_plan_place`: the windows started by `now` are kept, the rest is placed again, the record
    rewritten); in a finalized week it rewrites the week's decision record (`cycle_transition`).
    The revision's summary carries the reason. Enqueues (outbox) the "decision corrected" notification:
    the request's team hears of it.
    """
    selectors.decide_guard(actor=actor, gpu_request=gpu_request, act=selectors.Act.CORRECT)
    reason = _reason_checked(reason, field="reason", missing=_("Say why the decision is corrected."))
    cycle = _lock_cycle(gpu_request.cycle)
    decision = _decision_of(gpu_request)
    return _correct(
        actor=actor,
        cycle=cycle,
        decision=decision,
        outcome=outcome,
        rationale=rationale,
        reason=reason,
        granted_gpu_count=granted_gpu_count,
        alternative=alternative,
        exception=exception,
        now=now or timezone.now(),
        appeal=None,
        preview_digest=preview_digest,
        keep_other_teams=keep_other_teams,
    )


@write_transaction
def appeal_file(*, actor: User, gpu_request: GpuRequest, statement: str, now: datetime | None = None) -> Appeal:
    """A member of the request's team appeals its outcome, with a statement, within the appeal window.

    Refused with PermissionDenied unless the actor is a member of the request's team; StateConflict
    unless the week is published, before the window opens or after it closes
    (DOCKET_APPEAL_WINDOW_HOURS after the first publication; the message says when it closed), or
    when the request already has an open appeal; ValidationError without a statement. Writes the
    appeal, an "appealed" event on the request, and the week's decision record (which lists appeals).
    Enqueues (outbox) the "appeal filed" notification: the committee members outside the team hear of it.
    """
    if not selectors.user_is_team_member(user=actor, team=gpu_request.team):
        raise PermissionDenied(
            _("Only members of %(team)s appeal the outcome of its requests.") % {"team": gpu_request.team.name}
        )
    statement = (statement or "").strip()
    if not statement:
        raise ValidationError({"statement": [_("Say what the committee should reconsider, and why.")]})
    too_long = limits.length_errors("statement", statement, limits.STATEMENT_MAX_LENGTH)
    if too_long:
        raise ValidationError(too_long)
    cycle = _lock_cycle(gpu_request.cycle)
    if cycle.status != CycleStatus.PUBLISHED:
        raise StateConflict(
            _("Appeals open when week %(week)s is published; it is %(status)s.")
            % {"week": cycle.week, "status": cycle.get_status_display().lower()}
        )
    decision = _decision_of(gpu_request)
    now = now or timezone.now()
    window = selectors.appeal_window_for_cycle(cycle=cycle)
    closes_at = window[1] if window is not None else None
    if closes_at is None or now > closes_at:
        raise StateConflict(
            _("The appeal window for week %(week)s closed on %(when)s, %(hours)d hours after the plan was published.")
            % {
                "week": cycle.week,
                "when": format_when(closes_at) if closes_at else "—",
                "hours": settings.DOCKET_APPEAL_WINDOW_HOURS,
            }
        )
    already_open = _("This request already has an open appeal; the committee has not decided it yet.")
    if Appeal.objects.filter(request=gpu_request, status=AppealStatus.OPEN).exists():
        raise StateConflict(already_open)
    try:
        with transaction.atomic():  # the cycle's lock serializes appeals; the constraint holds without it too
            appeal = Appeal.objects.create(
                request=decision.request,
                cycle=cycle,
                team_name=decision.team_name,
                request_title=decision.request_title,
                statement=statement,
                filed_by=actor,
                filed_by_name=actor_name(actor),
                filed_at=now,
            )
    except IntegrityError:
        raise StateConflict(already_open) from None
    request_event_record(request=decision.request, actor=actor, action="appealed", detail=statement)
    cycle_transition_record(
        cycle=cycle,
        actor=actor,
        plan=None,
        reason=_("appeal filed by %(team)s on “%(title)s”") % {"team": appeal.team_name, "title": appeal.request_title},
        refused=_("The appeal on week %(week)s was not filed and nothing was saved: its decision record could not "
                  "be written to the archive. %(reason)s"),
    )
    notification_enqueue(kind=NotificationKind.APPEAL_FILED, appeal=appeal)
    return appeal


@write_transaction
def appeal_decide(
    *,
    actor: User,
    appeal: Appeal,
    decision: str,
    reason: str,
    outcome: str | None = None,
    rationale: str | None = None,
    granted_gpu_count: int | None = None,
    alternative: int | None = None,
    exception: str = "",
    preview_digest: str | None = None,
    keep_other_teams: bool | None = None,
    now: datetime | None = None,
) -> Appeal:
    """A committee member outside the team decides an open appeal: `decision` is "uphold" or "amend".

    Uphold: the decision stands; the reason is recorded. Amend: the decision is corrected to
    `outcome` (with `rationale` and, for a partial grant, `granted_gpu_count`) through the same
    code as `decision_correct`, with the reason as the correction's: a new plan version in a
    published week. Refused with PermissionDenied unless the decide guard allows it
    (`selectors.decide_guard`: Act.ANSWER_APPEAL to uphold, a seat outside the team and not recused;
    Act.AMEND to amend, also the role that records decisions, DOCKET_DECISIONS_RECORDED_BY);
    StateConflict for an appeal already decided; ValidationError (nothing changes) without a reason
    or with an amendment the decision form would refuse (a grant of an unranked request needs the
    chair's stated `exception`). `preview_digest` and `keep_other_teams` as for `decision_correct`. Writes an
    "appeal upheld"/"appeal amended" event on the request and the week's decision record.
    Enqueues (outbox) the "appeal decided" notification: the team hears the answer.
    """
    gpu_request = appeal.request
    act = selectors.Act.AMEND if decision == APPEAL_AMEND else selectors.Act.ANSWER_APPEAL
    selectors.decide_guard(actor=actor, gpu_request=gpu_request, act=act)
    if decision not in (APPEAL_UPHOLD, APPEAL_AMEND):
        raise ValidationError({"decision": [_("Choose to uphold the decision or to amend it.")]})
    reason = _reason_checked(reason, field="reason", missing=_("Say why the appeal is decided this way."))
    cycle = _lock_cycle(appeal.cycle)
    locked = Appeal.objects.select_for_update(no_key=True).get(pk=appeal.pk)
    if locked.status != AppealStatus.OPEN:
        raise StateConflict(
            _("This appeal was already decided (%(status)s by %(name)s).")
            % {"status": locked.get_status_display().lower(), "name": locked.decided_by_name}
        )
    now = now or timezone.now()
    locked.status = AppealStatus.UPHELD if decision == APPEAL_UPHOLD else AppealStatus.AMENDED
    locked.decided_by = actor
    locked.decided_by_name = actor_name(actor)
    locked.decided_at = now
    locked.decision_reason = reason
    locked.save(update_fields=["status", "decided_by", "decided_by_name", "decided_at", "decision_reason"])
    if decision == APPEAL_AMEND:
        _correct(
            actor=actor,
            cycle=cycle,
            decision=_decision_of(gpu_request),
            outcome=outcome or "",
            rationale=rationale or "",
            reason=_("appeal amended: %(reason)s") % {"reason": reason},
            granted_gpu_count=granted_gpu_count,
            alternative=alternative,
            exception=exception,
            now=now,
            appeal=locked,
            preview_digest=preview_digest,
            keep_other_teams=keep_other_teams,
        )
        request_event_record(request=gpu_request, actor=actor, action="appeal amended", detail=reason)
    else:
        request_event_record(request=gpu_request, actor=actor, action="appeal upheld", detail=reason)
        cycle_transition_record(
            cycle=cycle,
            actor=actor,
            plan=None,
            reason=_("appeal by %(team)s on “%(title)s” upheld: %(reason)s")
            % {"team": locked.team_name, "title": locked.request_title, "reason": reason},
            refused=_("The appeal on week %(week)s was not decided and nothing was saved: its decision record could "
                      "not be written to the archive. %(reason)s"),
        )
    notification_enqueue(kind=NotificationKind.APPEAL_DECIDED, appeal=locked)
    return locked

