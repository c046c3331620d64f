"""The conversation around a request, stale scores and conflicts of interest.

Comments are the committee's alone; questions go to the request's team, which answers them on its
request page (each side is told: notifications `question_asked`, `question_answered`). A change
the team makes to a request the committee already scored marks each scorer's scores stale
(`scores_stale`) until they re-score or confirm. A member who declares a conflict of interest on
a request is recused from scoring and deciding it and their scores leave its totals; the
declaration can be withdrawn until the week is finalized, and is frozen after.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _

from committee import limits, selectors, weeks
from committee.models import (
    ConflictDeclaration,
    ConflictWaiver,
    CycleStatus,
    GpuRequest,
    NotificationKind,
    QuestionStatus,
    RequestComment,
    RequestQuestion,
    RequestStatus,
    ReviewCycle,
    Score,
    ScoreStaleness,
)
from committee.models.discussion import (
    ANSWER_MAX_LENGTH,
    COMMENT_MAX_LENGTH,
    CONFLICT_REASON_MAX_LENGTH,
    QUESTION_MAX_LENGTH,
    WAIVER_REASON_MAX_LENGTH,
)
from committee.selectors.discussion import CHANGE_FIELDS
from committee.services.notifications import notifications_record
from committee.services.ranking import cycle_ranking_changed
from core.audit import fit, person_name
from core.errors import StateConflict
from core.locks import write_transaction

DISCUSSED_STATUSES = (CycleStatus.OPEN, CycleStatus.IN_REVIEW)
VALUE_MAX_LENGTH = 120  # how much of a changed text the stale note keeps


def _lock_cycle(cycle_id: int) -> ReviewCycle:
    return ReviewCycle.objects.select_for_update(no_key=True).get(pk=cycle_id)


def _require_week_not_finalized(cycle: ReviewCycle, doing: str) -> None:
    if cycle.status not in DISCUSSED_STATUSES:
        raise StateConflict(
            _("Week %(week)s is %(status)s: you can no longer %(doing)s.")
            % {"week": cycle.week, "status": cycle.get_status_display().lower(), "doing": doing}
        )


def _text(field: str, value: str, max_length: int, missing: str) -> str:
    value = (value or "").strip()
    if not value:
        raise ValidationError({field: [missing]})
    too_long = limits.length_errors(field, value, max_length)
    if too_long:
        raise ValidationError(too_long)
    return value


def _team_ids(gpu_request: GpuRequest) -> list[int]:
    return selectors.team_member_ids(team_ids=[gpu_request.team_id]).get(gpu_request.team_id, [])


def _params(gpu_request: GpuRequest, **extra: Any) -> dict[str, Any]:
    return {"team": gpu_request.team.name, "title": gpu_request.title, "week": gpu_request.cycle.week, **extra}


# --- comments and questions ----------------------------------------------------------------------


@write_transaction
def request_comment_add(*, actor: User, gpu_request: GpuRequest, body: str) -> RequestComment:
    """A committee member's comment on a request, for the committee only (the team never sees it).

    Refused (PermissionDenied) for anyone without a seat or in the request's team; (StateConflict) once
    the week is finalized; (ValidationError, nothing written) for an empty or too long comment.
    """
    selectors.decide_guard(actor=actor, gpu_request=gpu_request, act=selectors.Act.COMMENT)
    body = _text("body", body, COMMENT_MAX_LENGTH, _("Write the comment."))
    _require_week_not_finalized(_lock_cycle(gpu_request.cycle_id), _("comment on its requests"))
    return RequestComment.objects.create(
        request=gpu_request, author=actor, author_name=person_name(actor), body=body, created_at=timezone.now()
    )


@write_transaction
def request_question_ask(*, actor: User, gpu_request: GpuRequest, body: str) -> RequestQuestion:
    """A committee member asks the request's team a question; the team's members are told (`question_asked`).

    Same refusals as a comment; only a submitted request is asked about. While a question is open the
    team may revise the request even after intake closed (selectors.request_revisable_in_review).
    """
    selectors.decide_guard(actor=actor, gpu_request=gpu_request, act=selectors.Act.ASK)
    body = _text("body", body, QUESTION_MAX_LENGTH, _("Write the question."))
    _require_week_not_finalized(_lock_cycle(gpu_request.cycle_id), _("ask about its requests"))
    locked = GpuRequest.objects.select_related("team", "cycle").get(pk=gpu_request.pk)
    if locked.status != RequestStatus.SUBMITTED:
        raise StateConflict(
            _("Only a submitted request is asked about; this one is %(status)s.")
            % {"status": locked.get_status_display().lower()}
        )
    question = RequestQuestion.objects.create(
        request=locked, asked_by=actor, asked_by_name=person_name(actor), body=body, asked_at=timezone.now()
    )
    notifications_record(
        recipient_ids=_team_ids(locked),
        kind=NotificationKind.QUESTION_ASKED,
        key=f"question:{question.pk}:asked",
        params=_params(locked, by=question.asked_by_name, question=fit(body, VALUE_MAX_LENGTH),
                       path=reverse("committee:request-detail", args=[locked.pk]) + f"#question-{question.pk}"),
    )
    return question


@write_transaction
def request_question_answer(*, actor: User, question: RequestQuestion, answer: str) -> RequestQuestion:
    """A member of the request's team answers an open question; the committee members outside the team are
    told (`question_answered`).

    Refused (PermissionDenied) for anyone outside the team; (StateConflict) for an answered question or a
    finalized week; (ValidationError, nothing written) for an empty or too long answer.
    """
    gpu_request = GpuRequest.objects.select_related("team", "cycle").get(pk=question.request_id)
    if not selectors.user_is_team_member(user=actor, team=gpu_request.team):
        raise PermissionDenied(
            _("Only members of %(team)s answer the committee's questions on its requests.")
            % {"team": gpu_request.team.name}
        )
    answer = _text("answer", answer, ANSWER_MAX_LENGTH, _("Write the answer."))
    _require_week_not_finalized(_lock_cycle(gpu_request.cycle_id), _("answer questions"))
    locked = RequestQuestion.objects.select_for_update(no_key=True).get(pk=question.pk)
    if locked.status != QuestionStatus.OPEN:
        raise StateConflict(_("This question was already answered by %(name)s.") % {"name": locked.answered_by_name})
    locked.answer = answer
    locked.status = QuestionStatus.ANSWERED
    locked.answered_by = actor
    locked.answered_by_name = person_name(actor)
    locked.answered_at = timezone.now()
    locked.save(update_fields=["answer", "status", "answered_by", "answered_by_name", "answered_at"])
    team = set(_team_ids(gpu_request))
    notifications_record(
        recipient_ids=[uid for uid in selectors.committee_member_ids() if uid not in team],
        kind=NotificationKind.QUESTION_ANSWERED,
        key=f"question:{locked.pk}:answered",
        params=_params(gpu_request, by=locked.answered_by_name, question=fit(locked.body, VALUE_MAX_LENGTH),
                       path=reverse("committee:review-cycle", args=[gpu_request.cycle.week])
                       + f"#request-{gpu_request.pk}"),
    )
    return locked


# --- stale scores ----------------------------------------------------------------------------------


def _when(value: datetime | None) -> str:
    if value is None:
        return "—"
    return value.astimezone(weeks.committee_zone()).strftime("%Y-%m-%d %H:%M")


def _number(value: Decimal | int | None) -> str:
    if value is None:
        return "—"
    return f"{value.normalize():,f}" if isinstance(value, Decimal) else f"{value:,}"


def request_parts(*, gpu_request: GpuRequest) -> dict[str, str]:
    """The parts of a request a member's score rests on, each as short text (the stale note's old → new)."""
    r = (
        GpuRequest.objects.select_related("pool", "pool__cluster", "usage_report", "impact_forecast")
        .prefetch_related("alternatives")
        .get(pk=gpu_request.pk)
    )
    usage = getattr(r, "usage_report", None)
    forecast = getattr(r, "impact_forecast", None)
    parts = {
        "title": r.title,
        "pool": r.pool.key,
        "gpu_count": str(r.gpu_count),
        "min_gpu_count": str(r.min_gpu_count),
        "duration_hours": str(r.duration_hours),
        "window": f"{_when(r.earliest_start)} – {_when(r.latest_end)}",
        "preemptible_ok": _("yes") if r.preemptible_ok else _("no"),
        "deadline": _when(r.deadline),
        "slip_consequence": r.slip_consequence or "—",
        "baseline_gpu_hours": _number(r.baseline_gpu_hours),
        "usage": (
            _("%(used)s of %(granted)s GPU-hours, %(util)s%%")
            % {"used": _number(usage.gpu_hours_used), "granted": _number(usage.gpu_hours_granted),
               "util": _number(usage.mean_utilization_pct)}
            if usage else "—"
        ),
        "forecast": (
            f"{_number(forecast.estimated_value)} {forecast.value_unit} ({forecast.get_confidence_display()}): "
            f"{forecast.narrative}"
            if forecast else "—"
        ),
        "alternatives": "; ".join(
            f"{a.description} ({_number(a.gpu_hours)})" + ("" if a.feasible else " ✗")
            for a in sorted(r.alternatives.all(), key=lambda a: a.pk)
        ) or "—",
    }
    return {key: fit(value, VALUE_MAX_LENGTH) for key, value in parts.items()}


def _merge(previous: list[dict[str, str]], new: list[dict[str, str]]) -> list[dict[str, str]]:
    """Changes since the member scored: each part's first old value and latest new one; a part changed back drops."""
    merged = {c["field"]: dict(c) for c in previous}
    for change in new:
        if change["field"] in merged:
            merged[change["field"]]["new"] = change["new"]
        else:
            merged[change["field"]] = dict(change)
    order = list(CHANGE_FIELDS)
    return sorted(
        (c for c in merged.values() if c["old"] != c["new"]),
        key=lambda c: order.index(c["field"]) if c["field"] in order else len(order),
    )


def scores_mark_stale(*, gpu_request: GpuRequest, before: dict[str, str]) -> int:
    """After the team changed a request: mark each member's scores of it stale with what changed.

    `before` is request_parts() taken before the change. Nothing happens when no scored part changed
    or no one has scored it. Each member told is told once per change (`scores_stale`). Returns how
    many members' scores went stale. Stale scores still count in the totals (docs/rubric.md).
    """
    after = request_parts(gpu_request=gpu_request)
    changes = [
        {"field": key, "old": before.get(key, ""), "new": value} for key, value in after.items()
        if before.get(key) != value
    ]
    if not changes:
        return 0
    members = dict(
        Score.objects.filter(request=gpu_request).values_list("member_id", "member_name").distinct()
    )
    if not members:
        return 0
    now = timezone.now()
    existing = {s.member_id: s for s in ScoreStaleness.objects.select_for_update().filter(request=gpu_request)}
    for member_id, name in members.items():
        row = existing.get(member_id)
        if row is None:
            ScoreStaleness.objects.create(
                request=gpu_request, member_id=member_id, member_name=name, changes=_merge([], changes), marked_at=now
            )
        else:
            row.changes = _merge(row.changes, changes)
            row.marked_at = now
            row.save(update_fields=["changes", "marked_at"])
    ScoreStaleness.objects.filter(request=gpu_request, changes=[]).delete()
    locked = GpuRequest.objects.select_related("team", "cycle").get(pk=gpu_request.pk)
    notifications_record(
        recipient_ids=list(members),
        kind=NotificationKind.SCORES_STALE,
        key=f"stale:{locked.pk}:{now.isoformat()}",
        params=_params(
            locked,
            changes=", ".join(selectors.change_label(c["field"]) for c in changes),
            path=reverse("committee:review-cycle", args=[locked.cycle.week]) + f"#request-{locked.pk}",
        ),
    )
    return len(members)


def scores_clear_stale(*, member: User, gpu_request: GpuRequest) -> None:
    """The member re-scored the request: their scores are current again."""
    ScoreStaleness.objects.filter(request=gpu_request, member=member).delete()


@write_transaction
def scores_confirm(*, actor: User, gpu_request: GpuRequest) -> None:
    """One click: the member read what changed and their scores of the request still hold.

    Refused (StateConflict) when their scores are not stale or the week is no longer in review.
    """
    cycle = _lock_cycle(gpu_request.cycle_id)
    if cycle.status != CycleStatus.IN_REVIEW:
        raise StateConflict(_("Week %(week)s is not in review: scores no longer change.") % {"week": cycle.week})
    deleted, _rows = ScoreStaleness.objects.filter(request=gpu_request, member=actor).delete()
    if not deleted:
        raise StateConflict(_("Your scores of this request are not stale: nothing to confirm."))


# --- conflicts of interest -------------------------------------------------------------------------


@write_transaction
def conflict_declare(*, actor: User, gpu_request: GpuRequest, reason: str = "") -> ConflictDeclaration:
    """A member declares a conflict of interest on a request (beyond their own team's, which is excluded anyway).

    They are then recused: score_record and request_decide refuse them, and their scores of it leave its
    totals (selectors.scores_counted). Refused (PermissionDenied) without a seat or for an own-team request,
    (StateConflict) once the week is finalized or when a declaration is already in force, (ValidationError)
    for a reason over the limit.
    """
    if not selectors.user_is_committee(user=actor):
        raise PermissionDenied(_("Only committee members declare a conflict of interest."))
    if selectors.user_is_team_member(user=actor, team=gpu_request.team):
        raise PermissionDenied(
            _("You are a member of %(team)s: you are already kept out of its requests.")
            % {"team": gpu_request.team.name}
        )
    reason = (reason or "").strip()
    too_long = limits.length_errors("reason", reason, CONFLICT_REASON_MAX_LENGTH)
    if too_long:
        raise ValidationError(too_long)
    cycle = _lock_cycle(gpu_request.cycle_id)
    _require_week_not_finalized(cycle, _("declare a conflict of interest"))
    if selectors.conflict_in_force(member=actor, gpu_request=gpu_request) is not None:
        raise StateConflict(_("You have already declared a conflict of interest on this request."))
    declaration = ConflictDeclaration.objects.create(
        request=gpu_request, member=actor, member_name=person_name(actor), reason=reason, declared_at=timezone.now()
    )
    cycle_ranking_changed(cycle=cycle)  # the member's scores of it stop counting
    return declaration


@write_transaction
def conflict_withdraw(*, actor: User, gpu_request: GpuRequest) -> ConflictDeclaration:
    """Withdraw the actor's declaration in force on a request, before the week is finalized; the row stays,
    with `withdrawn_at` (the decision record lists it). Their scores count again."""
    cycle = _lock_cycle(gpu_request.cycle_id)
    _require_week_not_finalized(cycle, _("withdraw a declaration"))
    declaration = ConflictDeclaration.objects.select_for_update(no_key=True).filter(
        request=gpu_request, member=actor, withdrawn_at__isnull=True
    ).first()
    if declaration is None:
        raise StateConflict(_("You have no conflict of interest declared on this request."))
    declaration.withdrawn_at = max(timezone.now(), declaration.declared_at)
    declaration.save(update_fields=["withdrawn_at"])
    cycle_ranking_changed(cycle=cycle)  # the member's scores of it count again
    return declaration


# --- conflicts found from the organisation: the chair's waiver -------------------------------------------


@write_transaction
def conflict_waive(*, actor: User, gpu_request: GpuRequest, member: User, reason: str) -> ConflictWaiver:
    """The chair waives a member's likely conflict on a request, found from the organisation
    (committee.selectors.conflicts), with a reason: the member scores and decides it again.

    The waiver keeps the conflict's words as found now; the week's decision record lists it with its reason
    (written to the archive at finalize, like the declarations). Refused (PermissionDenied) unless the actor is the
    chair, (ValidationError, keyed `reason`) without a reason or with one over the limit, (StateConflict) once the
    week is finalized, when no conflict is found for the member on the request, or when one is already waived.
    """
    if not selectors.user_is_chair(user=actor):
        raise PermissionDenied(_("Only the chair waives a conflict of interest."))
    reason = _text("reason", reason, WAIVER_REASON_MAX_LENGTH,
                   _("Say why the conflict does not keep this member out: the reason is archived."))
    cycle = _lock_cycle(gpu_request.cycle_id)
    _require_week_not_finalized(cycle, _("waive a conflict of interest"))
    found = selectors.found_conflict_get(gpu_request=gpu_request, member=member)
    if found is None:
        raise StateConflict(
            _("No conflict of interest is found from the organisation for %(member)s on this request: nothing to "
              "waive.") % {"member": person_name(member)}
        )
    if found.waived:
        raise StateConflict(
            _("The conflict of %(member)s on this request is already waived.") % {"member": found.member_name}
        )
    waiver = ConflictWaiver.objects.create(
        request=gpu_request, member=member, member_name=found.member_name, conflict=fit(found.text, 300),
        reason=reason, waived_by=actor, waived_by_name=person_name(actor), waived_at=timezone.now(),
    )
    cycle_ranking_changed(cycle=cycle)  # who may score it changed
    return waiver


@write_transaction
def conflict_waiver_withdraw(*, actor: User, gpu_request: GpuRequest, member: User) -> ConflictWaiver:
    """The chair withdraws the waiver in force for a member on a request, before the week is finalized: the member is
    recused again. The row stays, with `withdrawn_at` (the decision record lists both)."""
    if not selectors.user_is_chair(user=actor):
        raise PermissionDenied(_("Only the chair withdraws a waiver."))
    cycle = _lock_cycle(gpu_request.cycle_id)
    _require_week_not_finalized(cycle, _("withdraw a waiver"))
    waiver = ConflictWaiver.objects.select_for_update(no_key=True).filter(
        request=gpu_request, member=member, withdrawn_at__isnull=True
    ).first()
    if waiver is None:
        raise StateConflict(
            _("No waiver is in force for %(member)s on this request.") % {"member": person_name(member)}
        )
    waiver.withdrawn_at = max(timezone.now(), waiver.waived_at)
    waiver.withdrawn_by_name = person_name(actor)
    waiver.save(update_fields=["withdrawn_at", "withdrawn_by_name"])
    cycle_ranking_changed(cycle=cycle)
    return waiver
