"""The conversation around a request: comments, questions and answers, stale scores, conflicts of interest.

Each view parses one form, calls one service, and goes back where the person was: the request's card
on the review page (committee), or the request's page (team). Errors come back as messages.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from allocations.forms import org_filter
from committee import selectors, services
from committee.models import GpuRequest, RequestQuestion, ReviewCycle
from committee.views.review import _request_in_cycle, require_committee
from core.http import AuthenticatedHttpRequest
from core.parsers import parse_whole_number


def _back_to_card(request: AuthenticatedHttpRequest, cycle: ReviewCycle, pk: int) -> str:
    """The request's card where the member was: the same page of the review's cards, with the same filter."""
    query = {}
    if request.GET.get("mine") == "unscored":
        query["mine"] = "unscored"
    query.update(org_filter(request.GET).query())
    page = request.GET.get("page", "")
    if parse_whole_number(page, max_digits=6) is not None:
        query["page"] = page
    url = reverse("committee:review-cycle", args=[cycle.week])
    return url + (f"?{urlencode(query)}" if query else "") + f"#request-{pk}"


def _on_request(
    request: AuthenticatedHttpRequest, week: str, pk: int, act: Callable[[GpuRequest], object], done: str
) -> HttpResponse:
    require_committee(request)
    cycle = selectors.cycle_get(week=week)
    gpu_request = _request_in_cycle(cycle, pk)
    try:
        act(gpu_request)
    except ValidationError as exc:
        for message in exc.messages:
            messages.error(request, message)
    else:
        messages.success(request, done)
    return redirect(_back_to_card(request, cycle, pk))


@login_required
@require_POST
def comment_add(request: AuthenticatedHttpRequest, week: str, pk: int) -> HttpResponse:
    body = request.POST.get("body", "")
    return _on_request(
        request, week, pk,
        lambda r: services.request_comment_add(actor=request.user, gpu_request=r, body=body),
        _("Comment added (the committee's only; the team does not see it)."),
    )


@login_required
@require_POST
def question_ask(request: AuthenticatedHttpRequest, week: str, pk: int) -> HttpResponse:
    body = request.POST.get("body", "")
    return _on_request(
        request, week, pk,
        lambda r: services.request_question_ask(actor=request.user, gpu_request=r, body=body),
        _("Question sent to the team; you will be told when it answers."),
    )


@login_required
@require_POST
def scores_confirm(request: AuthenticatedHttpRequest, week: str, pk: int) -> HttpResponse:
    return _on_request(
        request, week, pk,
        lambda r: services.scores_confirm(actor=request.user, gpu_request=r),
        _("Your scores stand as they are."),
    )


@login_required
@require_POST
def conflict_declare(request: AuthenticatedHttpRequest, week: str, pk: int) -> HttpResponse:
    reason = request.POST.get("reason", "")
    return _on_request(
        request, week, pk,
        lambda r: services.conflict_declare(actor=request.user, gpu_request=r, reason=reason),
        _("Conflict of interest declared: you are recused from this request and your scores of it do not count."),
    )


@login_required
@require_POST
def conflict_withdraw(request: AuthenticatedHttpRequest, week: str, pk: int) -> HttpResponse:
    return _on_request(
        request, week, pk,
        lambda r: services.conflict_withdraw(actor=request.user, gpu_request=r),
        _("Declaration withdrawn: you may score and decide this request again."),
    )


def _member(request: AuthenticatedHttpRequest) -> User:
    """The committee member a waiver form names (`member`, a user id); 404 for anything else."""
    pk = parse_whole_number(request.POST.get("member", ""), max_digits=12)
    member = User.objects.filter(pk=pk).first() if pk is not None else None
    if member is None:
        raise Http404("No such member")
    return member


@login_required
@require_POST
def conflict_waive(request: AuthenticatedHttpRequest, week: str, pk: int) -> HttpResponse:
    """The chair waives a member's conflict found from the organisation, with a reason (archived)."""
    member = _member(request)
    reason = request.POST.get("reason", "")
    return _on_request(
        request, week, pk,
        lambda r: services.conflict_waive(actor=request.user, gpu_request=r, member=member, reason=reason),
        _("Conflict waived: the member may score and decide this request. The waiver and its reason go into the "
          "week's decision record."),
    )


@login_required
@require_POST
def conflict_waiver_withdraw(request: AuthenticatedHttpRequest, week: str, pk: int) -> HttpResponse:
    member = _member(request)
    return _on_request(
        request, week, pk,
        lambda r: services.conflict_waiver_withdraw(actor=request.user, gpu_request=r, member=member),
        _("Waiver withdrawn: the member is recused from this request again."),
    )


@login_required
@require_POST
def question_answer(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    """The team answers a question on its request page. Only the request's team sees the form; others get 404."""
    try:
        question = RequestQuestion.objects.select_related("request__team").get(pk=pk)
    except RequestQuestion.DoesNotExist:
        raise Http404("No such question") from None
    gpu_request = question.request
    if not selectors.user_is_team_member(user=request.user, team=gpu_request.team):
        raise Http404("No such question")
    try:
        services.request_question_answer(actor=request.user, question=question, answer=request.POST.get("answer", ""))
    except ValidationError as exc:
        for message in exc.messages:
            messages.error(request, message)
    else:
        messages.success(request, _("Answer sent; the committee is told."))
    return redirect(reverse("committee:request-detail", args=[gpu_request.pk]) + f"#question-{question.pk}")
