"""Reads of the conversation around a request: comments, questions, stale scores, conflicts of interest."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from django.http import Http404
from django.utils.translation import gettext as _

from committee.models import (
    ConflictDeclaration,
    ConflictWaiver,
    CycleStatus,
    Decision,
    GpuRequest,
    QuestionStatus,
    RequestComment,
    RequestQuestion,
    RequestStatus,
    ScoreStaleness,
)
from committee.selectors.conflicts import FoundConflict
from committee.selectors.deciding import Act, decide_refusal, parties_map
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


def conflict_in_force(*, member: Viewer, gpu_request: GpuRequest) -> ConflictDeclaration | None:
    if not member.is_authenticated:
        return None
    return ConflictDeclaration.objects.filter(
        request=gpu_request, member_id=member.pk, withdrawn_at__isnull=True
    ).first()


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
    # Whether the viewer may record this request's decision (committee.selectors.deciding: seat, team, recusal,
    # DOCKET_DECISIONS_RECORDED_BY).
    viewer_may_decide: bool = False
    # The likely conflicts found from the organisation (committee.selectors.conflicts), waived or not.
    found: list[FoundConflict] = field(default_factory=list)

    @property
    def viewer_found(self) -> FoundConflict | None:
        """The viewer's own likely conflict on the request, waived or not."""
        return next((c for c in self.found if c.member_id == self.viewer_id), None)

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
    """Whether the viewer may record each request's decision (committee.selectors.deciding), and the conflicts found
    from the organisation on it: at most eight more queries."""
    if not viewer_roles(user=viewer).committee:
        return
    for pk, parties in parties_map(requests=requests).items():
        out[pk].viewer_may_decide = decide_refusal(actor=viewer, parties=parties, act=Act.DECIDE) is None
        out[pk].found = list(parties.found_conflicts)


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


def conflict_waiver_list_for_cycle(*, cycle_id: int) -> list[ConflictWaiver]:
    """Every waiver of a conflict found on the week's requests, in force or withdrawn, oldest first (the record's)."""
    return list(
        ConflictWaiver.objects.filter(request__cycle_id=cycle_id)
        .select_related("request", "request__team")
        .order_by("waived_at", "id")
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
