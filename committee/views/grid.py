"""A member's queue and the requests × criteria scores grid (committee only).

The grid saves as the member types (static/docket/grid.js posts one cell to `grid_cell_save`, which
answers with that cell's state and the member's count, never the ranking), and works without
JavaScript as one form: one submit saves the page's changed cells, or none when any is wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, JsonResponse
from django.http.response import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from allocations.forms import OrgFilterForm, org_filter
from committee import scoring, selectors, services
from committee.models import CycleStatus, GpuRequest, ReviewCycle, criterion_label
from committee.selectors import grid as grid_selectors
from committee.services.scores import (
    SCORE_REFUSED,
    ScoreAnswer,
    ScoreForbidden,
    ScoreInvalid,
    score_answer,
    score_seat_required,
    score_target,
    score_value,
)
from committee.views.review import require_committee
from core.http import AuthenticatedHttpRequest
from core.locks import write_transaction
from core.parsers import parse_whole_number

CELL_NAME = re.compile(r"cell-([0-9]{1,12})-([a-z_]{1,30})")  # ASCII digits, the whole name (fullmatch)


def _count_text(queue: grid_selectors.MemberQueue) -> str:
    return ngettext(
        "You have scored %(n)s of %(m)s request.", "You have scored %(n)s of %(m)s requests.", queue.scorable
    ) % {"n": queue.scored, "m": queue.scorable}


def _page_number(raw: str | None) -> int:
    number = parse_whole_number(raw, max_digits=6)
    return 1 if number is None else number


def _unscored_only(request: HttpRequest) -> bool:
    return (request.GET.get("mine") or request.POST.get("mine")) == "unscored"


@dataclass(frozen=True)
class CellView:
    """One input of the grid as the page shows it: the value typed (kept after an error) and its error."""

    criterion: str
    label: str
    name: str
    value: str
    error: str | None


def _grid_entries(
    rows: list[grid_selectors.GridRow], posted: dict[str, str], errors: dict[str, str]
) -> list[tuple[grid_selectors.GridRow, list[CellView]]]:
    labels = {c: criterion_label(c) for c in scoring.MEMBER_SCORED}
    entries = []
    for row in rows:
        cells = []
        for cell in row.cells:
            name = f"cell-{row.request.pk}-{cell.criterion}"
            shown = posted[name] if name in posted else ("" if cell.value is None else str(cell.value))
            cells.append(CellView(criterion=cell.criterion, label=labels[cell.criterion], name=name, value=shown,
                                  error=errors.get(name)))
        entries.append((row, cells))
    return entries


def _grid_context(
    request: AuthenticatedHttpRequest, cycle: ReviewCycle, *, page: int, unscored_only: bool, org: OrgFilterForm,
    posted: dict[str, str] | None = None, errors: dict[str, str] | None = None,
) -> dict[str, Any]:
    department, team = org.chosen()
    queue = grid_selectors.member_queue(cycle=cycle, viewer=request.user, unscored_only=unscored_only, page=page,
                                        department=department, team=team)
    mine = "unscored" if unscored_only else ""
    return {
        "cycle": cycle,
        "queue": queue,
        "count_text": _count_text(queue),
        "criteria": grid_selectors.grid_criteria(cycle=cycle),
        "entries": _grid_entries(queue.rows, posted or {}, errors or {}),
        "errors": errors or {},
        "in_review": cycle.status == CycleStatus.IN_REVIEW,
        "mine": mine,
        # A department's or a team's requests: the links and the form without JavaScript keep it.
        "org_form": org,
        "org_query": urlencode(org.query()),
        "pager_query": urlencode({**({"mine": mine} if mine else {}), **org.query()}),
    }




def _requests_in_review(cycle: ReviewCycle, ids: set[int]) -> dict[int, GpuRequest]:
    return GpuRequest.objects.select_related("team", "cycle").filter(
        cycle=cycle, pk__in=ids, status__in=grid_selectors.REVIEWED_STATUSES, is_emergency=False
    ).in_bulk()


@login_required
@require_http_methods(["GET", "POST"])
def review_grid(request: AuthenticatedHttpRequest, week: str) -> HttpResponse:
    """GET: the member's grid, one page of their queue. POST (the form without JavaScript): save the
    page's changed cells together, or none of them when any is wrong (400, every error shown)."""
    try:
        score_seat_required(actor=request.user)
    except ScoreForbidden as exc:  # the page on GET; a save is refused in the words of every surface
        require_committee(request, refusal=score_answer(exc).message if request.method == "POST" else None)
    cycle = selectors.cycle_get(week=week)
    unscored_only = _unscored_only(request)
    org = org_filter(request.GET if request.method == "GET" else request.POST)
    if request.method == "GET":
        page = _page_number(request.GET.get("page"))
        return render(request, "committee/review_grid.html",
                      _grid_context(request, cycle, page=page, unscored_only=unscored_only, org=org))
    page = _page_number(request.POST.get("page"))
    posted: dict[str, str] = {}
    cells: list[tuple[int, str, str]] = []
    for key in request.POST:
        raw = request.POST.get(key, "")
        match = CELL_NAME.fullmatch(key)
        if match and match[2] in scoring.MEMBER_SCORED:
            posted[key] = raw
            if raw.strip():  # an empty cell is left as it is
                cells.append((int(match[1]), match[2], key))
    in_review = _requests_in_review(cycle, {pk for pk, _c, _k in cells})
    current = grid_selectors.member_scores(viewer=request.user, request_ids=list(in_review))

    @write_transaction  # one transaction for the page's scores; a deadlock's victim runs again (core/locks.py)
    def save_all() -> int:
        refused: dict[str, str] = {}
        changed: dict[int, dict[str, str]] = {}  # a request's changed cells: criterion -> the cell's name
        for pk, criterion, key in cells:
            try:
                score_target(cycle=cycle, pk=pk, in_review=in_review)
                if _unchanged(current.get((pk, criterion)), posted[key]):
                    continue  # nothing to write
                score_value(posted[key])  # each wrong cell is named, not only a row's first
            except SCORE_REFUSED as exc:
                refused[key] = score_answer(exc).message
            else:
                changed.setdefault(pk, {})[criterion] = key
        count = 0
        for pk, keys in changed.items():  # a row's cells in one call: its checks and locks once
            if any(key in refused for key in keys.values()):
                continue
            try:
                services.scores_record(actor=request.user, gpu_request=in_review[pk],
                                       values={criterion: posted[key] for criterion, key in keys.items()})
            except SCORE_REFUSED as exc:
                at_fault = [keys[exc.criterion]] if isinstance(exc, ScoreInvalid) and exc.criterion else keys.values()
                refused.update(dict.fromkeys(at_fault, score_answer(exc).message))
            else:
                count += len(keys)
        if refused:
            raise _RollBack(refused)
        return count

    errors: dict[str, str] = {}
    saved = 0
    try:
        saved = save_all()
    except _RollBack as rollback:
        errors = rollback.refused
    if errors:
        context = _grid_context(request, cycle, page=page, unscored_only=unscored_only, org=org, posted=posted,
                                errors=errors)
        context["error_count"] = len(errors)
        return render(request, "committee/review_grid.html", context, status=400)
    messages.success(request, ngettext("%(n)s score saved.", "%(n)s scores saved.", saved) % {"n": saved})
    query = urlencode({"page": page, **({"mine": "unscored"} if unscored_only else {}), **org.query()})
    return redirect(reverse("committee:review-grid", args=[cycle.week]) + "?" + query)


def _unchanged(current: int | None, raw: str) -> bool:
    """Whether the cell still holds what was typed (then nothing is written); a refused value is not unchanged."""
    try:
        return current == score_value(raw)
    except SCORE_REFUSED:
        return False


class _RollBack(Exception):
    """Undo every score of a page's submit when one of them is refused (`refused`: the cells' messages)."""

    def __init__(self, refused: dict[str, str]) -> None:
        super().__init__(refused)
        self.refused = refused


@login_required
@require_POST
def grid_cell_save(request: AuthenticatedHttpRequest, week: str) -> JsonResponse:
    """Save one cell of the grid (static/docket/grid.js): answers that cell's state and the member's count.

    Nothing is re-ranked: the answer is a few hundred bytes, whatever the number of requests.
    A refused score (nothing stored) answers the status and the words of every surface
    (committee/services/scores.py): 400 for a criterion or a value that is not 0–10, 403 for a request
    the member may not score, 404 for a request not in this week's review, 409 when the week is not in review.
    """
    try:
        score_seat_required(actor=request.user)
    except ScoreForbidden as exc:
        refusal = score_answer(exc)
        return JsonResponse({"state": "error", "error": refusal.message}, status=refusal.status)
    cycle = selectors.cycle_get(week=week)
    pk = parse_whole_number(request.POST.get("request", ""), max_digits=12)
    candidates = _requests_in_review(cycle, set() if pk is None else {pk})
    refused: ScoreAnswer | None = None
    try:
        gpu_request = score_target(cycle=cycle, pk=pk, in_review=candidates)
        score = services.score_record(actor=request.user, gpu_request=gpu_request,
                                      criterion=request.POST.get("criterion", ""), value=request.POST.get("value", ""))
    except SCORE_REFUSED as exc:
        refused = score_answer(exc)
    queue = grid_selectors.member_queue(cycle=cycle, viewer=request.user, with_rows=False)
    answer: dict[str, Any] = {
        "state": "error" if refused is not None else "saved",
        "scored": queue.scored,
        "scorable": queue.scorable,
        "count_text": _count_text(queue),
    }
    if refused is not None:
        answer["error"] = refused.message
        return JsonResponse(answer, status=refused.status)
    answer["value"] = score.value
    answer["message"] = _("Saved.")
    return JsonResponse(answer)


@login_required
@require_GET
def queue_request(request: AuthenticatedHttpRequest, week: str, pk: int) -> HttpResponse:
    """One request's evidence and the member's scores of it, with the previous and next in their queue."""
    require_committee(request)
    cycle = selectors.cycle_get(week=week)
    queue = grid_selectors.member_queue(cycle=cycle, viewer=request.user, with_rows=False)
    if pk not in queue.order:
        raise Http404("No such request in review this week")
    rows = grid_selectors.grid_rows(viewer=request.user, request_ids=[pk], first_position=queue.order.index(pk) + 1,
                                    found=queue.found)
    previous, following = queue.neighbours(pk)
    evidence = grid_selectors.request_evidence(request_id=pk)
    # What the request's card on the review page shows: measured usage beside the stated, fairness, questions.
    card = selectors.review_card(cycle=cycle, viewer=request.user, pk=pk)
    selectors.review_rows_measure(rows=[card])
    context = {
        "row": card,
        "cycle": cycle,
        "queue": queue,
        "count_text": _count_text(queue),
        "criteria": grid_selectors.grid_criteria(cycle=cycle),
        "entries": _grid_entries(rows, {}, {}),
        "errors": {},
        "r": evidence,
        "previous": previous,
        "following": following,
        "grid_page": queue.page_of(pk),
        "in_review": cycle.status == CycleStatus.IN_REVIEW,
        "mine": "",
    }
    return render(request, "committee/review_queue.html", context)


@login_required
@require_GET
def request_evidence(request: AuthenticatedHttpRequest, week: str, pk: int) -> HttpResponse:
    """The evidence of one request, loaded when the review page's "Evidence" is opened (htmx)."""
    require_committee(request)
    cycle = selectors.cycle_get(week=week)
    evidence = grid_selectors.request_evidence(request_id=pk, cycle=cycle)
    return render(request, "committee/_review_evidence.html", {"r": evidence, "cycle": cycle})
