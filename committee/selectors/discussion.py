"""Reads of the conversation around a request: comments, questions, stale scores, conflicts of interest."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from django.conf import settings
from django.db.models import Exists, OuterRef, QuerySet
from django.http import Http404
from django.utils.translation import gettext as _

from committee.models import (
    CommitteeSeat,
    ConflictDeclaration,
    CycleStatus,
    Decision,
    GpuRequest,
    QuestionStatus,
    RequestComment,
    RequestQuestion,
    RequestStatus,
    Score,
    ScoreStaleness,
    SeatRole,
    TeamMembership,
)
from committee.selectors.people import Viewer, viewer_roles

# The request's parts a change marks scores stale for, in the order the review lists them.
CHANGE_FIELDS = (
    "title", "pool", "gpu_count", "min_gpu_count", "duration_hours", "window", "preemptible_ok", "deadline",
    "slip_consequence", "baseline_gpu_hours", "usage", "forecast", "alternatives",
)


def change_label(key: str) -> str:
    """The words for one changed part of a request (the keys of ScoreStaleness.changes), in the reader's language."""
    labels = {
        "title": _("title"),
        "pool": _("pool"),
        "gpu_count": _("GPUs"),
        "min_gpu_count": _("minimum GPUs"),
        "duration_hours": _("hours"),
        "window": _("window"),
        "preemptible_ok": _("preemptible"),
        "deadline": _("deadline"),
        "slip_consequence": _("what slips"),
        "baseline_gpu_hours": _("baseline GPU-hours"),
        "usage": _("last week's usage"),
        "forecast": _("forecast"),
        "alternatives": _("alternatives"),
    }
    return labels.get(key, key)


def scores_counted() -> QuerySet[Score]:
    """Scores that count in a request's totals: all but those of a member recused from it (a conflict in force)."""
    recused = ConflictDeclaration.objects.filter(
        request_id=OuterRef("request_id"), member_id=OuterRef("member_id"), withdrawn_at__isnull=True
    )
    return Score.objects.exclude(Exists(recused))


def conflict_in_force(*, member: Viewer, gpu_request: GpuRequest) -> ConflictDeclaration | None:
    if not member.is_authenticated:
        return None
    return ConflictDeclaration.objects.filter(
        request=gpu_request, member_id=member.pk, withdrawn_at__isnull=True
    ).first()


def decisions_recorded_by_chair_only() -> bool:
    return settings.DOCKET_DECISIONS_RECORDED_BY == "chair"


def chair_conflicted(*, gpu_request: GpuRequest) -> bool:
    """Every active chair is in the request's team or recused from it: someone else must record its decision."""
    chair_ids = set(
        CommitteeSeat.objects.active()
        .filter(role=SeatRole.CHAIR, user__is_active=True)
        .values_list("user_id", flat=True)
    )
    if not chair_ids:
        return True
    in_team = set(
        TeamMembership.objects.filter(team_id=gpu_request.team_id, user_id__in=chair_ids).values_list(
            "user_id", flat=True
        )
    )
    recused = set(
        ConflictDeclaration.objects.filter(
            request=gpu_request, member_id__in=chair_ids, withdrawn_at__isnull=True
        ).values_list("member_id", flat=True)
    )
    return chair_ids <= in_team | recused


def user_may_record_decisions(*, user: Viewer, gpu_request: GpuRequest | None = None) -> bool:
    """DOCKET_DECISIONS_RECORDED_BY: the chair alone ("chair", the default) or every committee member ("committee").

    With "chair", a request the chair may not decide (their own team's, or one they are recused from)
    is recorded by any other committee member; pass `gpu_request` to ask about one request.
    """
    roles = viewer_roles(user=user)
    if not decisions_recorded_by_chair_only() or roles.chair:
        return roles.committee
    return roles.committee and gpu_request is not None and chair_conflicted(gpu_request=gpu_request)


def request_revisable_in_review(*, gpu_request: GpuRequest) -> bool:
    """After intake closed, the team may still revise a submitted, undecided request the committee has an open
    question on (answering may mean changing the numbers); members' scores of it then go stale."""
    return (
        gpu_request.cycle.status == CycleStatus.IN_REVIEW
        and gpu_request.status == RequestStatus.SUBMITTED
        and not Decision.objects.filter(request=gpu_request).exists()
        and RequestQuestion.objects.filter(request=gpu_request, status=QuestionStatus.OPEN).exists()
    )


@dataclass(frozen=True)
class ChangeText:
    label: str
    old: str
    new: str


@dataclass(frozen=True)
class StaleNote:
    """One member's scores of a request went stale: what the team changed since."""

    member_id: int
    member_name: str
    changes: tuple[ChangeText, ...]

    @property
    def summary(self) -> str:
        return "; ".join(f"{c.label} {c.old} → {c.new}" for c in self.changes)


@dataclass
class RequestDiscussion:
    """What the review shows of a request's conversation, for one committee member."""

    comments: list[RequestComment] = field(default_factory=list)
    questions: list[RequestQuestion] = field(default_factory=list)
    stale: list[StaleNote] = field(default_factory=list)
    recusals: list[ConflictDeclaration] = field(default_factory=list)
    viewer_recused: ConflictDeclaration | None = None
    viewer_id: int | None = None
    # DOCKET_DECISIONS_RECORDED_BY: whether the viewer may record this request's decision (own team and
    # recusal aside, which the review checks on its own).
    viewer_may_decide: bool = False

    @property
    def open_questions(self) -> list[RequestQuestion]:
        return [q for q in self.questions if q.status == QuestionStatus.OPEN]

    @property
    def recused_ids(self) -> set[int]:
        return {c.member_id for c in self.recusals}

    @property
    def my_stale(self) -> StaleNote | None:
        return next((s for s in self.stale if s.member_id == self.viewer_id), None)

    @property
    def recused_names(self) -> str:
        return ", ".join(c.member_name for c in self.recusals)


def stale_note(row: ScoreStaleness) -> StaleNote:
    return StaleNote(
        member_id=row.member_id,
        member_name=row.member_name,
        changes=tuple(
            ChangeText(label=change_label(c.get("field", "")), old=str(c.get("old", "")), new=str(c.get("new", "")))
            for c in row.changes
        ),
    )


def review_discussion_map(*, requests: Iterable[GpuRequest], viewer: Viewer) -> dict[int, RequestDiscussion]:
    """Each request's comments, questions, stale scores and recusals: four queries for any number of requests.

    Committee comments are for the committee only: the caller shows this to committee members, and the
    comments on a request of the viewer's own team are left out (a committee member in that team is the team).
    """
    ids = [r.pk for r in requests]
    viewer_id = viewer.pk if viewer.is_authenticated else None
    out = {pk: RequestDiscussion(viewer_id=viewer_id) for pk in ids}
    if not ids:
        return out
    # The committee's comments are never shown on a request of the viewer's own team (a member of the team).
    own = {r.pk for r in requests if r.team_id in viewer_roles(user=viewer).team_ids}
    for comment in RequestComment.objects.filter(request_id__in=ids).exclude(request_id__in=own).order_by(
        "created_at", "id"
    ):
        out[comment.request_id].comments.append(comment)
    for question in RequestQuestion.objects.filter(request_id__in=ids).order_by("asked_at", "id"):
        out[question.request_id].questions.append(question)
    for stale in ScoreStaleness.objects.filter(request_id__in=ids).order_by("member_name", "id"):
        out[stale.request_id].stale.append(stale_note(stale))
    for conflict in ConflictDeclaration.objects.filter(request_id__in=ids, withdrawn_at__isnull=True).order_by(
        "member_name", "id"
    ):
        discussion = out[conflict.request_id]
        discussion.recusals.append(conflict)
        if conflict.member_id == viewer_id:
            discussion.viewer_recused = conflict
    _may_decide_fill(out=out, requests=requests, viewer=viewer)
    return out


def _may_decide_fill(*, out: dict[int, RequestDiscussion], requests: Iterable[GpuRequest], viewer: Viewer) -> None:
    """user_may_record_decisions for every request at once: at most two more queries."""
    roles = viewer_roles(user=viewer)
    if not roles.committee:
        return
    if not decisions_recorded_by_chair_only() or roles.chair:
        for discussion in out.values():
            discussion.viewer_may_decide = True
        return
    chair_ids = set(
        CommitteeSeat.objects.active()
        .filter(role=SeatRole.CHAIR, user__is_active=True)
        .values_list("user_id", flat=True)
    )
    chair_teams: dict[int, set[int]] = {}
    for user_id, team_id in TeamMembership.objects.filter(user_id__in=chair_ids).values_list("user_id", "team_id"):
        chair_teams.setdefault(team_id, set()).add(user_id)
    for r in requests:
        discussion = out[r.pk]
        kept_out = chair_teams.get(r.team_id, set()) | discussion.recused_ids
        discussion.viewer_may_decide = chair_ids <= kept_out


def request_questions_for_viewer(*, gpu_request: GpuRequest, viewer: Viewer) -> list[RequestQuestion]:
    """The committee's questions on a request, for its team's members and the committee (never the comments)."""
    roles = viewer_roles(user=viewer)
    if not (roles.committee or gpu_request.team_id in roles.team_ids):
        return []
    return list(RequestQuestion.objects.filter(request=gpu_request).order_by("asked_at", "id"))


def question_list_open_for_teams(*, viewer: Viewer) -> list[RequestQuestion]:
    """The committee's questions still waiting for an answer from the viewer's teams, oldest first (one query):
    what the team's landing page puts first."""
    team_ids = viewer_roles(user=viewer).team_ids
    if not team_ids:
        return []
    return list(
        RequestQuestion.objects.filter(request__team_id__in=team_ids, status=QuestionStatus.OPEN)
        .select_related("request", "request__team")
        .order_by("asked_at", "id")
    )


def conflict_list_for_cycle(*, cycle_id: int) -> list[ConflictDeclaration]:
    """Every declaration on the week's requests, in force or withdrawn, oldest first (the record's recusals)."""
    return list(
        ConflictDeclaration.objects.filter(request__cycle_id=cycle_id)
        .select_related("request", "request__team")
        .order_by("declared_at", "id")
    )


def request_comment_list(*, gpu_request: GpuRequest, viewer: Viewer) -> list[RequestComment]:
    """The committee's comments on a request, oldest first: for committee members outside its team, else none."""
    roles = viewer_roles(user=viewer)
    if not roles.committee or gpu_request.team_id in roles.team_ids:
        return []
    return list(RequestComment.objects.filter(request=gpu_request).order_by("created_at", "id"))


def question_get_for_viewer(*, pk: int, viewer: Viewer) -> RequestQuestion:
    """One question to a team, for the team's members and the committee; Http404 for anyone else."""
    roles = viewer_roles(user=viewer)
    question = (
        RequestQuestion.objects.select_related("request__team", "request__cycle").filter(pk=pk).first()
    )
    if question is None or not (roles.committee or question.request.team_id in roles.team_ids):
        raise Http404("No such question")
    return question


def request_conflict_list(*, gpu_request: GpuRequest) -> list[ConflictDeclaration]:
    """Every declaration on a request, in force or withdrawn, oldest first (the committee's view of its recusals)."""
    return list(
        ConflictDeclaration.objects.filter(request=gpu_request).select_related("member").order_by("declared_at", "id")
    )


@dataclass(frozen=True)
class ScoreFlags:
    """What a request's list of scores says beside each score: whose are stale (and why), whose do not count."""

    stale: dict[int, ScoreStaleness]
    recused_ids: frozenset[int]


def request_score_flags(*, gpu_request: GpuRequest) -> ScoreFlags:
    """The members whose scores of the request are stale, and those recused from it: two queries."""
    stale = {row.member_id: row for row in ScoreStaleness.objects.filter(request=gpu_request)}
    recused = ConflictDeclaration.objects.filter(request=gpu_request, withdrawn_at__isnull=True)
    return ScoreFlags(stale=stale, recused_ids=frozenset(recused.values_list("member_id", flat=True)))
