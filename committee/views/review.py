"""The weekly review pages (committee only). Views parse input, call one service, render."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from allocations.elastic import selectors as elastic_selectors
from allocations.forms import org_filter
from allocations.models import Commitment
from committee import scoring, selectors, services
from committee.forms import DecisionForm, WeightsForm
from committee.matrix import priority_matrix_figure
from committee.models import CycleStatus, GpuRequest, ReviewCycle
from committee.quarters import quarter_of
from committee.selectors import grid as grid_selectors
from committee.services.scores import SCORE_REFUSED, ScoreForbidden, score_answer, score_seat_required
from committee.timeline import pool_timeline_figure, team_colours
from core.datetimes import format_when
from core.errors import RoleRequired, form_errors_add
from core.http import AuthenticatedHttpRequest
from core.parsers import parse_whole_number


def require_committee(request: HttpRequest, *, refusal: str | None = None) -> None:
    """RoleRequired (the 403 page) unless the viewer has a committee seat; `refusal`: the words, if not the review's."""
    if not selectors.user_is_committee(user=request.user):
        raise RoleRequired(
            refusal or _("The weekly review is for committee members."),
            role=_("a seat on the committee"),
            elsewhere=[(_("Your team's requests and their outcomes"), reverse("committee:portal"))],
        )


def require_chair(request: HttpRequest) -> None:
    if not selectors.user_is_chair(user=request.user):
        raise RoleRequired(
            _("Only the chair can do this."),
            role=_("the chair's seat"),
            elsewhere=[(_("The weekly review"), reverse("committee:review"))] if selectors.user_is_committee(
                user=request.user) else [],
        )


def _is_htmx(request: HttpRequest) -> bool:
    return request.headers.get("HX-Request") == "true"


def _request_in_cycle(cycle: ReviewCycle, pk: int) -> GpuRequest:
    try:
        return GpuRequest.objects.select_related("team", "cycle").get(pk=pk, cycle=cycle)
    except GpuRequest.DoesNotExist:
        raise Http404("No such request in this cycle") from None


def _anchor(cycle: ReviewCycle, pk: int) -> str:
    return reverse("committee:review-cycle", args=[cycle.week]) + f"#request-{pk}"


def _error_messages(exc: ValidationError) -> list[str]:
    return list(exc.messages)


PREVIEWED_STATUSES = (CycleStatus.IN_REVIEW, CycleStatus.FINALIZED)

# The review page shows one page of the ranking and one page of request cards: at 1,000 requests
# the page stays a few hundred KB (docs/benchmarks.md). The grid and the queue page the rest.
RANKING_PER_PAGE = 50
REQUESTS_PER_PAGE = 10


def _page_of(raw: str | None, count: int, per_page: int) -> tuple[int, int]:
    """(page, pages) for a `?page=`-style parameter: anything not a small number reads as page 1."""
    pages = max(1, -(-count // per_page))
    number = parse_whole_number(raw, max_digits=6)
    page = 1 if number is None else number
    return min(max(1, page), pages), pages


def _ranking_context(request: HttpRequest, review: selectors.CycleReview) -> dict[str, Any]:
    """The page of the ranking shown: `?ranking=<n>` of the page itself, or of the page an htmx save came from."""
    raw = request.GET.get("ranking")
    if raw is None and _is_htmx(request):
        raw = parse_qs(urlsplit(request.headers.get("HX-Current-URL", "")).query).get("ranking", [None])[0]
    page, pages = _page_of(raw, len(review.rows), RANKING_PER_PAGE)
    start = (page - 1) * RANKING_PER_PAGE
    return {"ranking_rows": review.rows[start:start + RANKING_PER_PAGE], "ranking_page": page,
            "ranking_pages": pages}


def _placement_context(cycle: ReviewCycle, review: selectors.CycleReview) -> dict[str, Any]:
    """The placement preview (the engine's dry run) while the week is in review or finalized, unpublished."""
    if cycle.status not in PREVIEWED_STATUSES:
        return {"placement": None}
    # Each pool's timeline (its figure) comes on its own request when the member opens it (`review_placement_pool`):
    # the first screen does not carry the whole week's figures.
    return {"placement": selectors.cycle_placement(cycle=cycle, rows=review.rows)}


@login_required
def review_home(request: AuthenticatedHttpRequest) -> HttpResponse:
    require_committee(request)
    cycle = selectors.cycle_for_review()
    if cycle is None:
        return render(request, "committee/review.html", {"review": None, "cycles": []})
    return redirect("committee:review-cycle", week=cycle.week)


def _cards(
    request: AuthenticatedHttpRequest, cycle: ReviewCycle, review: selectors.CycleReview, params: Any,
    *, with_queue: bool = True,
) -> dict[str, Any]:
    """The page of request cards `params` (the page's query) asks for, and the member's queue (read without
    `with_queue` only when "not scored by me" filters the cards)."""
    # The member's queue: their count, and "not scored by me" as a filter of the request cards.
    unscored_only = params.get("mine") == "unscored"
    queue = grid_selectors.member_queue(cycle=cycle, viewer=request.user, unscored_only=True, with_rows=False) \
        if with_queue or unscored_only else None
    to_score = set(queue.order) if queue is not None else set()
    cards = [row for row in review.rows if row.request.pk in to_score] if unscored_only else review.rows
    # A department's or a team's requests (the org chart as it is now; the ranking above stays the whole week's).
    org = org_filter(params)
    department, team = org.chosen()
    if department is not None:
        cards = [row for row in cards if row.request.team.department_id == department.pk]
    if team is not None:
        cards = [row for row in cards if row.request.team_id == team.pk]
    page, pages = _page_of(params.get("page"), len(cards), REQUESTS_PER_PAGE)
    cards = cards[(page - 1) * REQUESTS_PER_PAGE:page * REQUESTS_PER_PAGE]
    kept = {**{key: params[key] for key in ("mine", "ranking") if key in params}, **org.query()}
    # The decisions still missing, each with the page of cards that holds its decision form.
    card_page = {row.request.pk: index // REQUESTS_PER_PAGE + 1 for index, row in enumerate(review.rows)}
    return {
        "undecided": [(row, card_page[row.request.pk]) for row in review.undecided_ranked],
        "queue": queue,
        "first_to_score": queue.order[0] if queue is not None and queue.order else None,
        "cards": cards,
        "card_ids": {row.request.pk for row in cards},
        "cards_page": page,
        "cards_pages": pages,
        "unscored_only": unscored_only,
        "org_form": org,
        "org_query": urlencode(org.query()),
        "cards_query": urlencode({k: v for k, v in kept.items() if k != "page"}),
        # The cards' forms (questions, comments, conflicts) come back to this page of cards, not the first.
        "cards_back": urlencode([("mine", "unscored")] * unscored_only + list(org.query().items())
                                + [("page", str(page))] * (page > 1)),
        "ranking_query": urlencode({k: v for k, v in {**kept, "page": str(page)}.items() if k != "ranking"}),
        "refresh_query": urlencode({**kept, "page": str(page)}),
    }


def _shown(
    request: AuthenticatedHttpRequest, cycle: ReviewCycle, review: selectors.CycleReview, *, with_queue: bool = True,
) -> dict[str, Any]:
    """What the review page and its refresh after a save both draw: the matrix, the cards, the ranking's page and
    the placement preview."""
    return {
        "review": review,
        "cycle": cycle,
        "matrix": priority_matrix_figure(review),
        "in_review": cycle.status == CycleStatus.IN_REVIEW,
        **_cards(request, cycle, review, request.GET, with_queue=with_queue),
        **_ranking_context(request, review),
        **_placement_context(cycle, review),
    }


def _measure_shown(context: dict[str, Any]) -> None:
    """Last week's usage, stated and measured, for the rows the page shows (the ranking's page and the cards)."""
    shown = {row.request.pk: row for row in [*context["ranking_rows"], *context["cards"]]}
    selectors.review_rows_measure(rows=list(shown.values()))


@login_required
@require_GET
def review_cycle(request: AuthenticatedHttpRequest, week: str) -> HttpResponse:
    require_committee(request)
    cycle = selectors.cycle_get(week=week)
    review = selectors.cycle_review(cycle=cycle, viewer=request.user, detailed=False,
                                    rows=selectors.ranking_rows(cycle=cycle))  # the ranking kept once per change
    context = {
        **_shown(request, cycle, review),
        "cycles": list(selectors.cycle_list()[:12]),
        "quadrants": scoring.quadrant_labels(),
    }
    selectors.review_rows_detail(review=review, rows=context["cards"], viewer=request.user)
    _measure_shown(context)
    selectors.review_rows_budget(rows=context["cards"], quarter=quarter_of(cycle.starts_at), week=cycle.week)
    selectors.review_rows_track_record(rows=context["cards"], week=cycle.week)
    # The teams asking again whose current grants the cluster measured idle (docs/elastic.md).
    context["idle_grants"] = elastic_selectors.idle_grants(team_ids={row.request.team_id for row in review.rows})
    context["idle_team_ids"] = {action.team_id for action in context["idle_grants"]}
    if cycle.status in (CycleStatus.FINALIZED, CycleStatus.PUBLISHED):  # written after the change commits
        context["record_progress"] = selectors.cycle_record_progress(cycle=cycle)
    return render(request, "committee/review.html", context)


@login_required
@require_GET
def review_ranking(request: AuthenticatedHttpRequest, week: str) -> HttpResponse:
    """What a save can change beyond its own card, drawn again out of band (htmx, after a save says
    `ranking-changed`): the page of the ranking, the matrix's data, the placement preview and the cards'
    "would get" lines. The query is the review page's own (`?ranking=`, `?page=`, `?mine=`)."""
    require_committee(request)
    cycle = selectors.cycle_get(week=week)
    review = selectors.cycle_review(cycle=cycle, viewer=request.user, detailed=False,
                                    rows=selectors.ranking_rows(cycle=cycle))  # the ranking kept once per change
    context = {**_shown(request, cycle, review, with_queue=False), "oob": True}
    _measure_shown(context)
    return render(request, "committee/_ranking_refresh.html", context)


@login_required
@require_GET
def review_placement_pool(request: AuthenticatedHttpRequest, week: str, cluster: str, pool: str) -> JsonResponse:
    """One pool's timeline of the placement preview, as the Plotly figure the review page draws when the member
    opens it (the page's script fetches it; the placements' table beside it needs no script). 404 when the week
    has no preview or the pool no grant."""
    require_committee(request)
    cycle = selectors.cycle_get(week=week)
    if cycle.status not in PREVIEWED_STATUSES:
        raise Http404("This week has no placement preview")
    placement = selectors.cycle_placement(cycle=cycle, rows=list(selectors.ranking_rows(cycle=cycle)))
    shown = next((p for p in placement.pools if p.pool.cluster.slug == cluster and p.pool.slug == pool), None)
    if shown is None or not shown.placements:
        raise Http404("No grant on this pool this week")
    figure = pool_timeline_figure(pool=shown, week_start=cycle.starts_at, hours=cycle.hours,
                                  colours=team_colours(placement.pools))  # a team's colour is the same in every pool
    return JsonResponse(figure)


# Sent with a saved score or decision: the review page then asks for `review_ranking` on its own.
RANKING_CHANGED = "ranking-changed"


@login_required
@require_POST
def score_save(request: AuthenticatedHttpRequest, week: str, pk: int) -> HttpResponse:
    """Save one score; with htmx, answer with what changed: the re-drawn input, who scored what and the
    member's count. The ranking, the matrix and the placement come on their own request (`review_ranking`).

    A refused score is shown beside its input in the words the grid and the API use (committee/services/
    scores.py); a score the member may not give is the 403 page, in those words too."""
    try:
        score_seat_required(actor=request.user)
    except ScoreForbidden as exc:
        require_committee(request, refusal=score_answer(exc).message)
    cycle = selectors.cycle_get(week=week)
    gpu_request = _request_in_cycle(cycle, pk)
    errors: list[str] = []
    try:
        services.score_record(
            actor=request.user,
            gpu_request=gpu_request,
            criterion=request.POST.get("criterion", ""),
            value=request.POST.get("value", ""),
            note=request.POST.get("note", ""),
        )
    except SCORE_REFUSED as exc:
        answer = score_answer(exc)
        if answer.status in (403, 404):
            raise  # the 403 or 404 page, in the same words
        errors = [answer.message]  # beside the input
    if not _is_htmx(request):
        for error in errors:
            messages.error(request, error)
        if not errors:
            messages.success(request, _("Score saved."))
        return redirect(_anchor(cycle, pk))
    row = selectors.review_card(cycle=cycle, viewer=request.user, pk=pk)
    criterion = request.POST.get("criterion", "")
    score_input = next((i for i in row.inputs if i.criterion == criterion), None)
    if score_input is None:
        if errors:  # no input to show them beside (a criterion members do not score): the words alone
            return HttpResponse(" ".join(errors), status=400, content_type="text/plain; charset=utf-8")
        raise Http404("No such criterion")
    queue = grid_selectors.member_queue(cycle=cycle, viewer=request.user, unscored_only=True, with_rows=False)
    context = {
        "cycle": cycle,
        "row": row,
        "input": score_input,
        "errors": errors,
        "saved": not errors,
        "posted": request.POST if errors else None,
        "in_review": cycle.status == CycleStatus.IN_REVIEW,
        "queue": queue,
        "first_to_score": queue.order[0] if queue.order else None,
        "oob": True,
    }
    response = render(request, "committee/_score_saved.html", context)
    if not errors:
        response["HX-Trigger"] = RANKING_CHANGED
    return response


@login_required
def decision_save(request: AuthenticatedHttpRequest, week: str, pk: int) -> HttpResponse:
    """The decision form of one request: inline on the review page (htmx), or as its own page."""
    require_committee(request)
    cycle = selectors.cycle_get(week=week)
    gpu_request = _request_in_cycle(cycle, pk)
    selectors.decide_guard(actor=request.user, gpu_request=gpu_request, act=selectors.Act.DECIDE)
    decision = getattr(gpu_request, "decision", None)
    initial = (
        {"outcome": decision.outcome, "granted_gpu_count": decision.granted_gpu_count,
         "alternative": decision.alternative_id, "rationale": decision.rationale,
         "granted_weeks": decision.granted_weeks}
        if decision
        else {}
    )
    form = DecisionForm(request.POST or None, initial=initial, gpu_request=gpu_request)
    saved = False
    if request.method == "POST" and form.is_valid():
        try:
            services.request_decide(
                actor=request.user,
                gpu_request=gpu_request,
                outcome=form.cleaned_data["outcome"],
                rationale=form.cleaned_data["rationale"],
                granted_gpu_count=form.cleaned_data["granted_gpu_count"],
                alternative=form.cleaned_data["alternative"],
                exception=form.cleaned_data["exception"],
                granted_weeks=form.cleaned_data["granted_weeks"],
            )
        except ValidationError as exc:
            form_errors_add(form, exc)
        else:
            saved = True
            if not _is_htmx(request):
                messages.success(request, _("Decision saved."))
                return redirect(_anchor(cycle, pk))
    if _is_htmx(request):
        # What changed: this card's decision form. The ranking's decision column, the placement and every
        # "would get" line come on their own request (`review_ranking`, on `ranking-changed`).
        context = {"cycle": cycle, "row": selectors.review_card(cycle=cycle, viewer=request.user, pk=pk),
                   "form": form, "saved": saved, "in_review": cycle.status == CycleStatus.IN_REVIEW}
        response = render(request, "committee/_decision_saved.html", context)
        if saved:
            response["HX-Trigger"] = RANKING_CHANGED
        return response
    status = 400 if request.method == "POST" else 200
    context = {"cycle": cycle, "gpu_request": gpu_request, "form": form,
               "in_review": cycle.status == CycleStatus.IN_REVIEW}
    return render(request, "committee/decision_form.html", context, status=status)


def _confirmed(request: HttpRequest) -> bool:
    return request.method == "POST" and request.POST.get("confirm") == "1"


def _cycle_transition(request: AuthenticatedHttpRequest, cycle: ReviewCycle, service: Any, done: str) -> HttpResponse:
    try:
        service(cycle=cycle, actor=request.user)
    except ValidationError as exc:
        for message in _error_messages(exc):
            messages.error(request, message)
    else:
        messages.success(request, done % {"week": cycle.week})
    return redirect("committee:review-cycle", week=cycle.week)


def _confirmation(
    request: AuthenticatedHttpRequest, template: str, cycle: ReviewCycle, expected: str, context: dict[str, Any]
) -> HttpResponse:
    """The confirmation page of a step: nothing changes until its form posts `confirm=1`.

    A cycle in another state shows why the step is not possible, without the confirm button (409).
    """
    context = {"cycle": cycle, "possible": cycle.status == expected, **context}
    if request.method == "POST" and not context["possible"]:
        messages.error(request, _("Nothing was changed: week %(week)s is %(status)s.")
                       % {"week": cycle.week, "status": cycle.get_status_display().lower()})
    return render(request, template, context, status=200 if context["possible"] else 409)


@login_required
@require_POST
def run_continuation_decide(request: AuthenticatedHttpRequest, week: str, pk: int) -> HttpResponse:
    """The committee continues or releases a run's week that the evidence did not confirm (docs/multi-week-runs.md)."""
    require_committee(request)
    commitment = get_object_or_404(Commitment, pk=pk, week=week)
    try:
        services.run_continuation_decide(actor=request.user, commitment=commitment,
                                         confirm=request.POST.get("verdict") == "continue", now=timezone.now())
    except ValidationError as exc:  # a StateConflict too
        for message in exc.messages:
            messages.error(request, message)
    else:
        messages.success(request, _("Decision on the run's continuation saved."))
    return redirect(reverse("committee:review-cycle", args=[week]) + "#continuations")


@login_required
@require_http_methods(["GET", "POST"])
def cycle_close_intake(request: AuthenticatedHttpRequest, week: str) -> HttpResponse:
    """GET (or a POST without `confirm=1`): the confirmation, warning of an early close and stranded drafts."""
    require_chair(request)
    cycle = selectors.cycle_get(week=week)
    if _confirmed(request):
        return _cycle_transition(
            request, cycle, services.cycle_close_intake, _("Intake for week %(week)s is closed; the review is open.")
        )
    check = selectors.intake_close_check(cycle=cycle, now=timezone.now())
    return _confirmation(request, "committee/confirm_close_intake.html", cycle, CycleStatus.OPEN, {"check": check})


@login_required
@require_http_methods(["GET", "POST"])
def cycle_finalize(request: AuthenticatedHttpRequest, week: str) -> HttpResponse:
    """GET (or a POST without `confirm=1`): the placement summary and the automatic deferrals, to confirm."""
    require_chair(request)
    cycle = selectors.cycle_get(week=week)
    if _confirmed(request):
        return _cycle_transition(
            request,
            cycle,
            services.cycle_finalize,
            _("Week %(week)s is finalized: the decisions are final, and the archive is writing its decision record "
              "(its progress is shown below)."),
        )
    placement = selectors.cycle_placement(cycle=cycle) if cycle.status == CycleStatus.IN_REVIEW else None
    return _confirmation(
        request, "committee/confirm_finalize.html", cycle, CycleStatus.IN_REVIEW, {"placement": placement}
    )


@login_required
@require_GET
def what_if(request: AuthenticatedHttpRequest, week: str) -> HttpResponse:
    """The ranking under other weights, beside the current one. Reads only: nothing is saved."""
    require_chair(request)
    cycle = selectors.cycle_get(week=week)
    current_weights = selectors.rubric_for_week(week=cycle.week).weights
    form = WeightsForm(request.GET if any(c in request.GET for c in scoring.CRITERIA) else None,
                       initial=current_weights)
    ranked = selectors.ranking_rows(cycle=cycle)  # the week's ranking, kept once per change
    current = list(ranked)
    proposed: list[selectors.ReviewRow] | None = None
    moves: dict[int, int] = {}
    if form.is_bound and form.is_valid():
        reweighed = selectors.ranking_rows(cycle=cycle, weights=form.weights())
        proposed = list(reweighed)
        moves = reweighed.ranking.moves(before=ranked.ranking)
    context = {
        "cycle": cycle,
        "form": form,
        "current": [(row, 0) for row in current],
        "proposed": None if proposed is None else [(row, moves.get(row.request.pk, 0)) for row in proposed],
        "current_weights": current_weights,
        "proposed_weights": form.weights() if proposed is not None else None,
    }
    template = "committee/_what_if_results.html" if _is_htmx(request) else "committee/what_if.html"
    return render(request, template, context)


@login_required
@require_POST
def cycle_open_following(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The chair opens the next week for intake when none is open (the portal offers it)."""
    require_chair(request)
    try:
        cycle = services.cycle_open_following(actor=request.user, now=timezone.now())
    except ValidationError as exc:
        for message in exc.messages:
            messages.error(request, message)
    else:
        closes = format_when(cycle.intake_closes_at)
        messages.success(request, _("Week %(week)s is open for intake until %(closes)s.") % {
            "week": cycle.week, "closes": closes})
    return redirect("committee:portal")
