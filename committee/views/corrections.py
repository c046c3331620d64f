"""Corrections and appeals on the request page, and the committee's list of a week's appeals.

Views parse input, call one service (committee/services/corrections.py), and redirect to the
request page; a refusal shows the request page again with the form and its errors (400). In a
published week a correction or an amendment first shows what the next plan version would move
(committee/correction_confirm.html); the confirmation posts the same fields with `confirm=1` and the
placement's digest, and publishing refuses when the placement no longer matches it.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from committee import selectors, services
from committee.forms import AppealDecisionForm, AppealForm, CorrectionForm
from committee.models import Appeal, CycleStatus, DecisionOutcome, GpuRequest
from committee.texts import outcome_label
from core.errors import form_errors_add
from core.http import AuthenticatedHttpRequest


def _request_page(request: AuthenticatedHttpRequest, gpu_request: GpuRequest, **forms: Any) -> HttpResponse:
    """The request page again, with a refused form and its errors."""
    context = {"gpu_request": gpu_request, "can_edit": False, **forms}
    return render(request, "committee/request_detail.html", context, status=400)


def _done(request: AuthenticatedHttpRequest, gpu_request: GpuRequest, message: str) -> HttpResponse:
    messages.success(request, message)
    return redirect("committee:request-detail", pk=gpu_request.pk)


def _keep_other_teams(request: AuthenticatedHttpRequest) -> bool:
    """The chair's choice on the confirmation page, else the policy (DOCKET_CORRECTIONS_KEEP_OTHER_TEAMS)."""
    chosen = request.POST.get("keep_other_teams")
    if chosen in ("0", "1"):
        return chosen == "1"
    return bool(settings.DOCKET_CORRECTIONS_KEEP_OTHER_TEAMS)


def _with_gpus(outcome: str, granted_gpu_count: int | None) -> str:
    """"Grant (24 GPUs)", "Partial grant (8 GPUs)", "Defer": an outcome with the GPUs it places."""
    if outcome == DecisionOutcome.GRANT and granted_gpu_count:
        return _("%(label)s (%(n)d GPUs)") % {"label": DecisionOutcome(outcome).label, "n": granted_gpu_count}
    return outcome_label(outcome, granted_gpu_count)


def _confirmation(
    request: AuthenticatedHttpRequest,
    gpu_request: GpuRequest,
    *,
    act: selectors.Act,
    form: CorrectionForm | AppealDecisionForm,
    action: str,
    appeal: Appeal | None = None,
) -> HttpResponse | None:
    """In a published week, before a correction or an amendment publishes: the page that lists every window the
    next plan version would move, shrink, grow, add, withdraw or change tier, team by team, to confirm. None when
    the week is not published (nothing would move: the change is made at once) or the POST is the confirmation;
    the request page with the form's errors when the change is refused."""
    if request.POST.get("confirm") == "1" or gpu_request.cycle.status != CycleStatus.PUBLISHED:
        return None
    data = form.cleaned_data
    try:
        values = services.correction_check(
            actor=request.user, gpu_request=gpu_request, act=act, outcome=data["outcome"] or "",
            rationale=data["rationale"], granted_gpu_count=data["granted_gpu_count"],
            alternative=data["alternative"], exception=data["exception"], reason=data["reason"],
        )
    except ValidationError as exc:
        form_errors_add(form, exc)
        key = "correction_form" if act == selectors.Act.CORRECT else "appeal_decision_form"
        return _request_page(request, gpu_request, **{key: form})
    preview = selectors.decision_change_preview(
        gpu_request=gpu_request, outcome=values.outcome, granted_gpu_count=values.granted_gpu_count,
        alternative=values.alternative, now=timezone.now(), keep_other_teams=_keep_other_teams(request),
    )
    context = {
        "gpu_request": gpu_request,
        "values": values,
        "previous": _with_gpus(values.decision.outcome, values.decision.granted_gpu_count),
        "new": _with_gpus(values.outcome, values.granted_gpu_count),
        "reason": data["reason"],
        "preview": preview,
        "action": action,
        "appeal": appeal,
        "posted": [(name, request.POST.get(name, "")) for name in (
            "decision", "outcome", "granted_gpu_count", "alternative", "rationale", "reason", "exception")
            if name in request.POST],
    }
    return render(request, "committee/correction_confirm.html", context)


@login_required
@require_POST
def decision_correct(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    """A correction: in a published week, first the confirmation of what moves (`_confirmation`), then publish."""
    gpu_request = selectors.request_get_for_viewer(viewer=request.user, pk=pk)
    selectors.decide_guard(actor=request.user, gpu_request=gpu_request, act=selectors.Act.CORRECT)
    form = CorrectionForm(request.POST, gpu_request=gpu_request)
    if form.is_valid():
        confirmation = _confirmation(request, gpu_request, act=selectors.Act.CORRECT, form=form,
                                     action=reverse("committee:request-correct", args=[gpu_request.pk]))
        if confirmation is not None:
            return confirmation
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
                preview_digest=request.POST.get("digest") or None,
                keep_other_teams=_keep_other_teams(request),
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
        if form.cleaned_data["decision"] == services.APPEAL_AMEND:
            confirmation = _confirmation(request, gpu_request, act=selectors.Act.AMEND, form=form, appeal=appeal,
                                         action=reverse("committee:appeal-decide", args=[appeal.pk]))
            if confirmation is not None:
                return confirmation
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
                preview_digest=request.POST.get("digest") or None,
                keep_other_teams=_keep_other_teams(request),
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
