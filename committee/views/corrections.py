"""Corrections and appeals on the request page, and the committee's list of a week's appeals.

Views parse input, call one service (committee/services/corrections.py), and redirect to the
request page; a refusal shows the request page again with the form and its errors (400).
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from committee import selectors, services
from committee.forms import AppealDecisionForm, AppealForm, CorrectionForm
from committee.models import Appeal, GpuRequest
from core.errors import form_errors_add
from core.http import AuthenticatedHttpRequest


def _request_page(request: AuthenticatedHttpRequest, gpu_request: GpuRequest, **forms: Any) -> HttpResponse:
    """The request page again, with a refused form and its errors."""
    context = {"gpu_request": gpu_request, "can_edit": False, **forms}
    return render(request, "committee/request_detail.html", context, status=400)


def _done(request: AuthenticatedHttpRequest, gpu_request: GpuRequest, message: str) -> HttpResponse:
    messages.success(request, message)
    return redirect("committee:request-detail", pk=gpu_request.pk)


@login_required
@require_POST
def decision_correct(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    gpu_request = selectors.request_get_for_viewer(viewer=request.user, pk=pk)
    selectors.decide_guard(actor=request.user, gpu_request=gpu_request, act=selectors.Act.CORRECT)
    form = CorrectionForm(request.POST, gpu_request=gpu_request)
    if form.is_valid():
        try:
            correction = services.decision_correct(
                actor=request.user,
                gpu_request=gpu_request,
                outcome=form.cleaned_data["outcome"],
                rationale=form.cleaned_data["rationale"],
                reason=form.cleaned_data["reason"],
                granted_gpu_count=form.cleaned_data["granted_gpu_count"],
                alternative=form.cleaned_data["alternative"],
                exception=form.cleaned_data["exception"],
            )
        except ValidationError as exc:
            form_errors_add(form, exc)
        else:
            if correction.plan_version:
                done = _("Decision corrected and published as plan version %(version)d; the week's record in the "
                         "archive says why, and the team is told.") % {"version": correction.plan_version}
            else:
                done = _("Decision corrected; the week's record in the archive says why, and the team is told.")
            return _done(request, gpu_request, done)
    return _request_page(request, gpu_request, correction_form=form)


@login_required
@require_POST
def appeal_file(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    gpu_request = selectors.request_get_for_viewer(viewer=request.user, pk=pk)
    if not selectors.user_is_team_member(user=request.user, team=gpu_request.team):
        raise PermissionDenied(
            _("Only members of %(team)s appeal the outcome of its requests.") % {"team": gpu_request.team.name}
        )
    form = AppealForm(request.POST)
    if form.is_valid():
        try:
            services.appeal_file(actor=request.user, gpu_request=gpu_request, statement=form.cleaned_data["statement"])
        except ValidationError as exc:
            form_errors_add(form, exc)
        else:
            return _done(request, gpu_request, _("Appeal filed. A committee member outside your team will answer it."))
    return _request_page(request, gpu_request, appeal_form=form)


@login_required
@require_POST
def appeal_decide(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    try:
        appeal = Appeal.objects.select_related("request", "cycle").get(pk=pk)
    except Appeal.DoesNotExist:
        raise Http404("No such appeal") from None
    gpu_request = selectors.request_get_for_viewer(viewer=request.user, pk=appeal.request_id)
    selectors.decide_guard(actor=request.user, gpu_request=gpu_request, act=selectors.Act.ANSWER_APPEAL)
    form = AppealDecisionForm(request.POST, gpu_request=gpu_request)
    if form.is_valid():
        try:
            decided = services.appeal_decide(
                actor=request.user,
                appeal=appeal,
                decision=form.cleaned_data["decision"],
                reason=form.cleaned_data["reason"],
                outcome=form.cleaned_data["outcome"] or None,
                rationale=form.cleaned_data["rationale"],
                granted_gpu_count=form.cleaned_data["granted_gpu_count"],
                alternative=form.cleaned_data["alternative"],
                exception=form.cleaned_data["exception"],
            )
        except ValidationError as exc:
            form_errors_add(form, exc)
        else:
            return _done(
                request,
                gpu_request,
                _("Appeal answered: %(status)s. The team is told, and the archive records it.")
                % {"status": decided.get_status_display().lower()},
            )
    return _request_page(request, gpu_request, appeal_decision_form=form)


@login_required
@require_GET
def appeal_list(request: AuthenticatedHttpRequest, week: str) -> HttpResponse:
    """A week's appeals and corrections, for the committee."""
    if not selectors.user_is_committee(user=request.user):
        raise PermissionDenied(_("The list of appeals is for committee members."))
    cycle = selectors.cycle_get(week=week)
    context = {
        "cycle": cycle,
        "appeals": list(selectors.appeal_list_for_cycle(cycle=cycle)),
        "corrections": list(selectors.correction_list_for_cycle(cycle=cycle)),
        "window": selectors.appeal_window_for_cycle(cycle=cycle),
        "team_ids": selectors.viewer_roles(user=request.user).team_ids,
    }
    return render(request, "committee/appeals.html", context)
