"""The one guard for "may this person change this request's outcome", and the rubric's precondition for a grant.

Every path that scores, decides or changes a decision asks here, and nowhere else are these rules
written: the review's scores and decisions (the review page, the grid, the API), a correction after
finalize, an appeal's answer and amendment, an emergency's approval and its after-the-fact review; and
the committee's comments and questions on a request, which change no outcome but keep the same people out.

Who (`decide_refusal`, `decide_guard`), in this order:
1. a committee seat;
2. not a member of the request's team;
3. no conflict of interest declared on the request and in force, nor one found from the organisation that the
   chair has not waived (committee.selectors.conflicts: same department, the manager chain): recused;
4. the role that records it: a decision, an amendment and an emergency's review are recorded by the
   chair when DOCKET_DECISIONS_RECORDED_BY is "chair" (the default), by any committee member when it
   is "committee"; a correction is always the chair's. When every active chair is in the request's
   team or recused from it, another committee member records (or corrects) it instead.

What (`grant_refusal`): a grant (full, partial or of the alternative) needs a ranked request, every
member-scored criterion with its quorum of counted scores (a recused member's do not count), unless
the chair states an exception, whose text is stored with the decision or correction and shown in the
week's record. An emergency's placement is its own exception: the chair and one other member approve
it with the team's justification, archived on the request (docs/emergencies.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Exists, OuterRef, QuerySet
from django.utils.translation import gettext as _

from committee import limits, scoring
from committee.models import (
    PLACING_OUTCOMES,
    CommitteeSeat,
    ConflictDeclaration,
    GpuRequest,
    ReviewCycle,
    Score,
    SeatRole,
    TeamMembership,
    criterion_label,
)
from committee.selectors.conflicts import FoundConflict, found_conflicts_map
from committee.selectors.cycles import rubric_for_week
from committee.selectors.governance import governance_for_week
from committee.selectors.people import Viewer, viewer_roles
from core.audit import person_name

GRANTS = PLACING_OUTCOMES


class Act(StrEnum):
    """What a person does to a request's outcome."""

    SCORE = "score"  # the review page, the grid, the API
    DECIDE = "decide"  # the review's decision
    CORRECT = "correct"  # a correction after finalize
    ANSWER_APPEAL = "answer_appeal"  # uphold an appeal (the outcome stays)
    AMEND = "amend"  # amend on appeal: a correction
    APPROVE_EMERGENCY = "approve_emergency"  # approve or reject an emergency request
    REVIEW_EMERGENCY = "review_emergency"  # the review's after-the-fact verdict on a placed emergency
    REVOKE_FAST_LANE = "revoke_fast_lane"  # the review revokes a fast-lane grant that has not started
    COMMENT = "comment"  # the committee's comment on a request (no outcome changes, the same people are kept out)
    ASK = "ask"  # the committee's question to the team


# Which role records the act: None (any seat), "recording" (DOCKET_DECISIONS_RECORDED_BY) or "chair".
_RECORDER: dict[Act, str | None] = {
    Act.SCORE: None,
    Act.DECIDE: "recording",
    Act.CORRECT: "chair",
    Act.ANSWER_APPEAL: None,
    Act.AMEND: "recording",
    Act.APPROVE_EMERGENCY: None,
    Act.REVIEW_EMERGENCY: "chair",
    Act.REVOKE_FAST_LANE: "chair",
    Act.COMMENT: None,
    Act.ASK: None,
}


def _doing(act: Act) -> str | None:
    """The verb of the review's own acts, for their messages ("Only committee members score.")."""
    return {Act.SCORE: _("score"), Act.DECIDE: _("decide on"), Act.COMMENT: _("comment on"),
            Act.ASK: _("ask about")}.get(act)


def _no_seat(act: Act) -> str:
    doing = _doing(act)
    if doing is not None:
        return _("Only committee members %(doing)s.") % {"doing": doing}
    return {
        Act.CORRECT: _("Only the chair corrects a decision."),
        Act.ANSWER_APPEAL: _("Only committee members decide appeals."),
        Act.AMEND: _("Only committee members decide appeals."),
        Act.APPROVE_EMERGENCY: _("Only committee members approve emergency requests."),
        Act.REVIEW_EMERGENCY: _("Only the chair records the review's decision on an emergency."),
        Act.REVOKE_FAST_LANE: _("Only the chair revokes a fast-lane grant."),
    }[act]


def _own_team(act: Act, team: str) -> str:
    doing = _doing(act)
    if doing is not None:
        return _("You are a member of %(team)s: you do not %(doing)s its requests.") % {"team": team, "doing": doing}
    return {
        Act.CORRECT: _("You are a member of %(team)s: you do not correct the decisions on its requests."),
        Act.ANSWER_APPEAL: _("You are a member of %(team)s: you do not decide its appeals."),
        Act.AMEND: _("You are a member of %(team)s: you do not decide its appeals."),
        Act.APPROVE_EMERGENCY: _("You are a member of %(team)s: you do not approve its emergency requests."),
        Act.REVIEW_EMERGENCY: _("You are a member of %(team)s: you do not review its emergency requests."),
        Act.REVOKE_FAST_LANE: _("You are a member of %(team)s: you do not revoke its fast-lane grants."),
    }[act] % {"team": team}


def _recused(act: Act, title: str) -> str:
    doing = _doing(act)
    if doing is not None:
        return _(
            "You declared a conflict of interest on “%(title)s”: you are recused and do not %(doing)s it. "
            "Withdraw the declaration first if it no longer holds."
        ) % {"title": title, "doing": doing}
    return _("You declared a conflict of interest on “%(title)s”: you are recused from its decision, its "
             "corrections and its appeals.") % {"title": title}


def _found(title: str, why: str) -> str:
    return _(
        "Likely conflict of interest on “%(title)s”, found from the organisation: %(why)s. You are recused from it "
        "unless the chair waives the conflict, with a reason."
    ) % {"title": title, "why": why}


def _not_recorder(act: Act) -> str:
    if act == Act.CORRECT:
        return _("Only the chair corrects a decision.")
    if act == Act.REVIEW_EMERGENCY:
        return _("Only the chair records the review's decision on an emergency.")
    if act == Act.REVOKE_FAST_LANE:
        return _("Only the chair revokes a fast-lane grant.")
    return _("Only the chair records the committee's decisions (DOCKET_DECISIONS_RECORDED_BY is “chair”).")


@dataclass(frozen=True)
class Parties:
    """Who stands where to one request: its team, the members recused from it, whether every chair is kept out."""

    request_id: int
    team_id: int
    team_name: str
    title: str
    recused_ids: frozenset[int]  # declared, or found from the organisation and not waived
    chairs_kept_out: bool  # every active chair is in the team or recused (or there is no chair)
    found: dict[int, str] = field(default_factory=dict)  # member id -> why, for a conflict found and not waived
    found_conflicts: tuple[FoundConflict, ...] = ()  # every conflict found from the organisation, waived or not


def parties_map(
    *, requests: Iterable[GpuRequest], chairs: bool = True, members: dict[int, str] | None = None
) -> dict[int, Parties]:
    """Each request's `Parties`: eight queries for any number of requests (the team is select_related by callers);
    six without `chairs` (then `chairs_kept_out` is False: for an act no role records, or an actor who is the chair).
    The conflicts found from the organisation are read for every seated member (committee.selectors.conflicts), or
    only for `members` (id -> name: the one actor a guard asks about, without `chairs`; one query fewer)."""
    requests = list(requests)
    ids = [r.pk for r in requests]
    recused: dict[int, set[int]] = {pk: set() for pk in ids}
    for request_id, member_id in ConflictDeclaration.objects.filter(
        request_id__in=ids, withdrawn_at__isnull=True
    ).values_list("request_id", "member_id"):
        recused[request_id].add(member_id)
    found_all = found_conflicts_map(requests=requests, members=members)
    found = {pk: {c.member_id: c.text for c in found_all[pk].conflicts if not c.waived} for pk in found_all}
    for pk, texts in found.items():
        recused[pk] |= set(texts)
    chair_ids: set[int] = set()
    chair_teams: dict[int, set[int]] = {}
    if chairs:
        seats = CommitteeSeat.objects.active().filter(role=SeatRole.CHAIR, user__is_active=True)
        chair_ids = set(seats.values_list("user_id", flat=True))
        for user_id, team_id in TeamMembership.objects.filter(user_id__in=chair_ids).values_list("user_id", "team_id"):
            chair_teams.setdefault(team_id, set()).add(user_id)
    return {
        r.pk: Parties(
            request_id=r.pk,
            team_id=r.team_id,
            team_name=r.team.name,
            title=r.title,
            recused_ids=frozenset(recused[r.pk]),
            chairs_kept_out=chairs and chair_ids <= (chair_teams.get(r.team_id, set()) | recused[r.pk]),
            found=found[r.pk],
            found_conflicts=tuple(found_all[r.pk].conflicts),
        )
        for r in requests
    }


def decide_refusal(*, actor: Viewer, parties: Parties, act: Act) -> str | None:
    """Why `actor` may not do `act` to the request, or None when they may. No query (the roles are cached)."""
    roles = viewer_roles(user=actor)
    if not roles.committee:
        return _no_seat(act)
    if parties.team_id in roles.team_ids:
        return _own_team(act, parties.team_name)
    if actor.pk in parties.recused_ids:
        why = parties.found.get(actor.pk) if actor.pk is not None else None
        return _recused(act, parties.title) if why is None else _found(parties.title, why)
    if not _needs_recorder(actor=actor, act=act) or parties.chairs_kept_out:
        return None
    return _not_recorder(act)


def _needs_recorder(*, actor: Viewer, act: Act) -> bool:
    """Whether the act is recorded by a role the actor lacks (then only a chair kept out of the request lets them)."""
    recorder = _RECORDER[act]
    if recorder is None or viewer_roles(user=actor).chair:
        return False
    return not (recorder == "recording" and settings.DOCKET_DECISIONS_RECORDED_BY == "committee")


def no_seat_refusal(*, act: Act) -> str:
    """The words refusing `act` to someone without a committee seat (decide_guard's, for a surface's own role gate)."""
    return _no_seat(act)


def decide_guard(*, actor: Viewer, gpu_request: GpuRequest, act: Act) -> None:
    """PermissionDenied (the API's and the pages' 403) unless `actor` may do `act` to `gpu_request`.

    No query without a seat; three to five (the conflicts, declared and found from the organisation) when the actor
    holds the role the act needs; two more otherwise.
    """
    refusal = _refusal_for(actor=actor, gpu_request=gpu_request, act=act)
    if refusal is not None:
        raise PermissionDenied(refusal)


def user_may_decide(*, actor: Viewer, gpu_request: GpuRequest, act: Act = Act.DECIDE) -> bool:
    """Whether `decide_guard` lets `actor` do `act` (the pages' forms are shown by this)."""
    return _refusal_for(actor=actor, gpu_request=gpu_request, act=act) is None


def _refusal_for(*, actor: Viewer, gpu_request: GpuRequest, act: Act) -> str | None:
    if not viewer_roles(user=actor).committee:
        return _no_seat(act)
    chairs = _needs_recorder(actor=actor, act=act)
    members = None if chairs or actor.pk is None else {actor.pk: person_name(actor)}
    parties = parties_map(requests=[gpu_request], chairs=chairs, members=members)[gpu_request.pk]
    return decide_refusal(actor=actor, parties=parties, act=act)


def scores_counted() -> QuerySet[Score]:
    """Scores that count in a request's totals: all but those of a member recused from it (a conflict in force)."""
    recused = ConflictDeclaration.objects.filter(
        request_id=OuterRef("request_id"), member_id=OuterRef("member_id"), withdrawn_at__isnull=True
    )
    return Score.objects.exclude(Exists(recused))


def quorum_missing_for(*, gpu_request: GpuRequest, cycle: ReviewCycle) -> tuple[str, ...]:
    """The member-scored criteria of the request below the week's quorum of counted scores (empty: ranked)."""
    counted = scores_counted().filter(request=gpu_request).values_list("criterion", "value")
    sheet: dict[str, list[int]] = {c: [] for c in scoring.MEMBER_SCORED}
    for criterion, value in counted:
        sheet.setdefault(criterion, []).append(value)
    quorum = governance_for_week(week=cycle.week).score_quorum
    return scoring.quorum_missing(member_scores=sheet, weights=rubric_for_week(week=cycle.week).weights, quorum=quorum)


def grant_refusal(
    *, actor: Viewer, gpu_request: GpuRequest, cycle: ReviewCycle, outcome: str, exception: str
) -> str:
    """The rubric's precondition: the exception text to store ("" when none is needed), or ValidationError.

    A grant of an unranked request (a criterion below quorum) needs `exception`, stated by the chair;
    an exception is refused on a ranked request and on an outcome that grants nothing (keyed `exception`).
    A non-chair stating one is refused with PermissionDenied.
    """
    exception = (exception or "").strip()
    too_long = limits.length_errors("exception", exception, limits.REASON_MAX_LENGTH)
    if too_long:
        raise ValidationError(too_long)
    if outcome not in GRANTS:
        if exception:
            raise ValidationError({"exception": [_("Only a grant is made as an exception to the rubric.")]})
        return ""
    missing = quorum_missing_for(gpu_request=gpu_request, cycle=cycle)
    if not missing:
        if exception:
            raise ValidationError(
                {"exception": [_("This request is ranked: its grant needs no exception to the rubric.")]}
            )
        return ""
    if not exception:
        quorum = governance_for_week(week=cycle.week).score_quorum
        raise ValidationError(
            {
                "outcome": [
                    _("Not ranked yet: %(criteria)s need %(quorum)d member scores each before a grant.")
                    % {"criteria": ", ".join(criterion_label(c) for c in missing), "quorum": quorum}
                    + " "
                    + _("Only the chair grants it anyway, stating the exception (it is archived in the week's record).")
                ]
            }
        )
    if not viewer_roles(user=actor).chair:
        raise PermissionDenied(_("Only the chair states an exception to the rubric."))
    return exception
