"""A committee member's queue of the week in review, and the requests × criteria scores grid.

Reads only what one member needs to score: which requests they have scored, in queue order (not
scored by me first), one page at a time. Nothing here ranks the cycle: the ranking is computed on
the review page and its own views, never per score saved. Queries stay constant in the number of
requests: one small query of (id, team, my score count) over the cycle, then one page of rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from django.db.models import Count, Exists, IntegerField, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce

from allocations.models import Department, Team
from committee import scoring
from committee.models import ConflictDeclaration, GpuRequest, ReviewCycle, Score, criterion_label
from committee.selectors.conflicts import found_conflicts_map
from committee.selectors.cycles import rubric_for_week
from committee.selectors.deciding import Act, Parties, decide_refusal
from committee.selectors.people import Viewer, viewer_roles
from committee.selectors.review import REVIEWED_STATUSES
from core.audit import person_name

GRID_PAGE_SIZE = 50

# Where a request stands in a member's queue, which is also its sort key: to score first, then done.
TO_SCORE, SCORED, NOT_SCORABLE = 0, 1, 2


def score_refusal(
    *, viewer: Viewer, gpu_request: GpuRequest, recused: bool = False, found: str | None = None
) -> str | None:
    """Why `viewer` may not score `gpu_request`, or None when they may: the decide guard's answer
    (committee.selectors.deciding, Act.SCORE), with `recused` (declared) and `found` (why a conflict found from the
    organisation and not waived keeps them out) read by the caller for a whole page at once. Reads the viewer's
    roles, cached on the user: no query per request.
    """
    if found is not None and viewer.pk is not None:
        recused = True
    parties = Parties(
        request_id=gpu_request.pk,
        team_id=gpu_request.team_id,
        team_name=gpu_request.team.name,
        title=gpu_request.title,
        recused_ids=frozenset({viewer.pk}) if recused and viewer.pk is not None else frozenset(),
        chairs_kept_out=False,  # scoring is not recorded by a role
        found={viewer.pk: found} if found is not None and viewer.pk is not None else {},
    )
    return decide_refusal(actor=viewer, parties=parties, act=Act.SCORE)


def _recused(*, viewer: Viewer) -> Exists:
    """A request the viewer has a conflict of interest in force on (committee.ConflictDeclaration)."""
    return Exists(
        ConflictDeclaration.objects.filter(request=OuterRef("pk"), member_id=viewer.pk, withdrawn_at__isnull=True)
    )


@dataclass(frozen=True)
class GridCell:
    criterion: str
    value: int | None


@dataclass
class GridRow:
    """One request of the grid: the member's value for each member-scored criterion, or why not scorable."""

    request: GpuRequest
    cells: list[GridCell]
    refusal: str | None
    position: int  # 1-based place in the member's queue

    @property
    def done(self) -> bool:
        return self.refusal is None and all(c.value is not None for c in self.cells)


@dataclass(frozen=True)
class QueueEntry:
    request_id: int
    team_id: int
    mine: int  # how many criteria of it the member has scored
    department_id: int | None = None  # the team's department (the org chart as it is now)
    recused: bool = False  # the member declared a conflict of interest on it, or one was found and not waived
    found: str | None = None  # why a conflict found from the organisation (not waived) keeps the member out

    def state(self, team_ids: frozenset[int]) -> int:
        if self.team_id in team_ids or self.recused:
            return NOT_SCORABLE
        return SCORED if self.mine >= len(scoring.MEMBER_SCORED) else TO_SCORE


@dataclass
class MemberQueue:
    """A member's queue of a cycle: `scored` of `scorable` requests done, and one page of rows in queue order."""

    cycle: ReviewCycle
    scorable: int
    scored: int
    in_review: int
    order: list[int]  # request ids in queue order, after the filter
    unscored_only: bool
    page: int
    pages: int
    rows: list[GridRow] = field(default_factory=list)
    found: dict[int, str] = field(default_factory=dict)  # request id -> why a found conflict keeps the member out

    @property
    def to_score(self) -> int:
        return self.scorable - self.scored

    def neighbours(self, request_id: int) -> tuple[int | None, int | None]:
        """The requests before and after `request_id` in queue order (None at either end)."""
        if request_id not in self.order:
            return None, None
        index = self.order.index(request_id)
        before = self.order[index - 1] if index > 0 else None
        after = self.order[index + 1] if index + 1 < len(self.order) else None
        return before, after

    def page_of(self, request_id: int, per_page: int = GRID_PAGE_SIZE) -> int:
        return self.order.index(request_id) // per_page + 1 if request_id in self.order else 1


def _found_for(*, viewer: Viewer, requests: Sequence[GpuRequest]) -> dict[int, str]:
    """Why a conflict found from the organisation and not waived keeps the viewer out of each request (at most five
    queries for any number of requests)."""
    if viewer.pk is None or not viewer_roles(user=viewer).committee:
        return {}
    return {
        pk: conflict.text
        for pk, found in found_conflicts_map(requests=requests, members={viewer.pk: person_name(viewer)}).items()
        if (conflict := found.by_member.get(viewer.pk)) is not None and not conflict.waived
    }


def _queue_entries(*, cycle: ReviewCycle, viewer: Viewer) -> list[QueueEntry]:
    """Every request in review of the cycle with how many criteria the viewer has scored and whether they are
    recused: one query, and at most five for the conflicts found from the organisation."""
    mine = (
        Score.objects.filter(request=OuterRef("pk"), member_id=viewer.pk)
        .values("request")
        .annotate(n=Count("id"))
        .values("n")
    )
    rows = (
        GpuRequest.objects.filter(cycle=cycle, status__in=REVIEWED_STATUSES, is_emergency=False)
        .select_related("team")
        .only("pk", "team_id", "team__name", "team__department_id")
        .annotate(mine=Coalesce(Subquery(mine, output_field=IntegerField()), Value(0)), recused=_recused(viewer=viewer))
        .order_by("submitted_at", "id")
    )
    requests = list(rows)
    found = _found_for(viewer=viewer, requests=requests)
    return [
        QueueEntry(request_id=r.pk, team_id=r.team_id, mine=r.mine, department_id=r.team.department_id,
                   recused=r.recused or r.pk in found, found=found.get(r.pk))
        for r in requests
    ]


def member_queue(
    *, cycle: ReviewCycle, viewer: Viewer, unscored_only: bool = False, page: int = 1,
    per_page: int = GRID_PAGE_SIZE, with_rows: bool = True, department: Department | None = None,
    team: Team | None = None,
) -> MemberQueue:
    """The viewer's queue: requests they have not fully scored first (in submission order), then
    those they have, then their own team's (not scorable). `unscored_only` keeps only the first; `department` and
    `team` only the requests of that department's teams, of that team (the order and its pages; the counts stay
    the member's whole queue).

    Three queries for any number of requests (the viewer's roles are cached on the user): the queue,
    the page's requests, the viewer's scores of them. `with_rows=False` stops after the first.
    """
    team_ids = frozenset(viewer_roles(user=viewer).team_ids)
    entries = _queue_entries(cycle=cycle, viewer=viewer)
    states = {e.request_id: e.state(team_ids) for e in entries}
    ordered = sorted(entries, key=lambda e: states[e.request_id])  # stable: submission order within a state
    if unscored_only:
        ordered = [e for e in ordered if states[e.request_id] == TO_SCORE]
    if department is not None:
        ordered = [e for e in ordered if e.department_id == department.pk]
    if team is not None:
        ordered = [e for e in ordered if e.team_id == team.pk]
    order = [e.request_id for e in ordered]
    pages = max(1, -(-len(order) // per_page))
    page = min(max(1, page), pages)
    queue = MemberQueue(
        cycle=cycle,
        scorable=sum(1 for s in states.values() if s != NOT_SCORABLE),
        scored=sum(1 for s in states.values() if s == SCORED),
        in_review=len(entries),
        order=order,
        unscored_only=unscored_only,
        page=page,
        pages=pages,
        found={e.request_id: e.found for e in entries if e.found is not None},
    )
    if with_rows:
        start = (page - 1) * per_page
        queue.rows = grid_rows(viewer=viewer, request_ids=order[start:start + per_page], first_position=start + 1,
                               found=queue.found)
    return queue


def grid_rows(
    *, viewer: Viewer, request_ids: list[int], first_position: int = 1, found: dict[int, str] | None = None
) -> list[GridRow]:
    """The grid's rows for `request_ids`, in that order: two queries, and at most four for the conflicts found
    from the organisation unless the caller read them (`found`: request id -> why, as the queue has them)."""
    if not request_ids:
        return []
    requests = (
        GpuRequest.objects.select_related("team", "pool", "pool__cluster")
        .annotate(recused=_recused(viewer=viewer))
        .in_bulk(request_ids)
    )
    if found is None:
        found = _found_for(viewer=viewer, requests=list(requests.values()))
    values: dict[int, dict[str, int]] = {}
    for request_id, criterion, value in Score.objects.filter(
        request_id__in=request_ids, member_id=viewer.pk
    ).values_list("request_id", "criterion", "value"):
        values.setdefault(request_id, {})[criterion] = value
    rows = []
    for position, request_id in enumerate(request_ids, start=first_position):
        gpu_request = requests[request_id]
        mine = values.get(request_id, {})
        rows.append(
            GridRow(
                request=gpu_request,
                cells=[GridCell(criterion=c, value=mine.get(c)) for c in scoring.MEMBER_SCORED],
                refusal=score_refusal(viewer=viewer, gpu_request=gpu_request, recused=gpu_request.recused,
                                      found=found.get(request_id)),
                position=position,
            )
        )
    return rows


def grid_criteria(*, cycle: ReviewCycle) -> list[tuple[str, str, int]]:
    """The grid's columns: (criterion, label, weight %) for each member-scored criterion."""
    weights = rubric_for_week(week=cycle.week).weights
    return [(c, criterion_label(c), weights[c]) for c in scoring.MEMBER_SCORED]


def member_scores(*, viewer: Viewer, request_ids: list[int]) -> dict[tuple[int, str], int]:
    """The viewer's current scores of these requests, keyed (request id, criterion): one query."""
    return {
        (request_id, criterion): value
        for request_id, criterion, value in Score.objects.filter(
            request_id__in=request_ids, member_id=viewer.pk
        ).values_list("request_id", "criterion", "value")
    }


def request_evidence(*, request_id: int, cycle: ReviewCycle | None = None) -> GpuRequest:
    """One request in review with what its evidence shows (usage, forecast, alternatives): two queries.

    Raises Http404 for a request that is not in review (in `cycle`, when given).
    """
    from django.http import Http404

    found = (
        GpuRequest.objects.filter(pk=request_id, status__in=REVIEWED_STATUSES, is_emergency=False)
        .select_related("team", "cycle", "pool", "pool__cluster", "usage_report", "impact_forecast")
        .prefetch_related("alternatives")
    )
    if cycle is not None:
        found = found.filter(cycle=cycle)
    gpu_request = found.first()
    if gpu_request is None:
        raise Http404("No such request in review")
    return gpu_request
