"""Emergency requests: filing (a team member), approving (the committee), the review's decision (the chair)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from allocations import selectors as allocation_selectors
from allocations.explanations import placement_text
from committee import selectors
from committee.forms import EmergencyDecisionForm, EmergencyRequestForm, EmergencyReviewForm
from committee.models import EmergencyRequest, EmergencyStatus
from committee.services import emergency as services
from core.errors import StateConflict, form_errors_add
from core.http import AuthenticatedHttpRequest


@login_required
def emergency_list(request: AuthenticatedHttpRequest) -> HttpResponse:
    emergencies = selectors.emergency_list_for_viewer(viewer=request.user)[:50]
    can_file = selectors.team_list_for_user(user=request.user).exists()
    return render(request, "committee/emergency_list.html", {"emergencies": emergencies, "can_file": can_file})


@login_required
def emergency_create(request: AuthenticatedHttpRequest) -> HttpResponse:
    form = EmergencyRequestForm(request.POST or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            emergency = services.emergency_request_file(
                actor=request.user, team=data["team"], pool=data["pool"], title=data["title"],
                gpu_count=data["gpu_count"], min_gpu_count=data["min_gpu_count"],
                duration_hours=data["duration_hours"], justification=data["justification"],
            )
        except ValidationError as exc:
            form_errors_add(form, exc)
        else:
            messages.success(request, _("Emergency request filed: the committee is told now."))
            return redirect("committee:emergency-detail", pk=emergency.pk)
    status = 400 if request.method == "POST" else 200
    return render(request, "committee/emergency_form.html", {"form": form}, status=status)


def _detail_context(request: AuthenticatedHttpRequest, emergency: EmergencyRequest) -> dict[str, object]:
    roles = selectors.viewer_roles(user=request.user)
    gpu_request = emergency.request
    given = any(a.member_id == request.user.pk for a in emergency.approvals.all())
    windows = []
    if emergency.plan is not None:
        allocation = allocation_selectors.request_allocation(request_ref=gpu_request.pk)
        if allocation is not None:
            windows = [
                placement_text(gpu_count=w.gpu_count, gpu_model=w.pool.gpu_model, start=w.start, end=w.end,
                               tier=w.tier, week_start=gpu_request.cycle.starts_at)
                for w in allocation.windows
            ]
    return {
        "emergency": emergency,
        "gpu_request": gpu_request,
        "windows": windows,
        # Who may approve or review it: the decide guard's answer (committee.selectors.deciding).
        "can_decide": emergency.status == EmergencyStatus.PENDING and not given and selectors.user_may_decide(
            actor=request.user, gpu_request=gpu_request, act=selectors.Act.APPROVE_EMERGENCY),
        "is_chair": roles.chair,
        "can_review": emergency.status == EmergencyStatus.PLACED and not emergency.posthoc_outcome
        and selectors.user_may_decide(actor=request.user, gpu_request=gpu_request, act=selectors.Act.REVIEW_EMERGENCY),
    }


@login_required
def emergency_detail(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    emergency = selectors.emergency_get(viewer=request.user, pk=pk)
    context = {**_detail_context(request, emergency), "form": EmergencyDecisionForm(),
               "review_form": EmergencyReviewForm()}
    return render(request, "committee/emergency_detail.html", context)


@login_required
@require_POST
def emergency_decide(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    emergency = selectors.emergency_get(viewer=request.user, pk=pk)
    form = EmergencyDecisionForm(request.POST)
    if form.is_valid():
        approve = form.cleaned_data["verdict"] == "approve"
        try:
            decided = services.emergency_request_decide(
                actor=request.user, emergency=emergency, approve=approve,
                use_standby=form.cleaned_data["use_standby"], note=form.cleaned_data["note"],
            )
        except StateConflict as exc:
            for message in exc.messages:
                messages.error(request, message)
            return redirect("committee:emergency-detail", pk=pk)
        except ValidationError as exc:
            form_errors_add(form, exc)
        else:
            if decided.status == EmergencyStatus.PLACED:
                messages.success(request, _("Approved and placed: plan version %(version)d is published.")
                                 % {"version": decided.plan.version if decided.plan else 0})
            elif decided.status == EmergencyStatus.REJECTED:
                messages.success(request, _("Rejected; the team is told."))
            else:
                messages.success(request, _("Approved; it needs one more approval (the chair's or another member's)."))
            return redirect("committee:emergency-detail", pk=pk)
    emergency = selectors.emergency_get(viewer=request.user, pk=pk)
    context = {**_detail_context(request, emergency), "form": form, "review_form": EmergencyReviewForm()}
    return render(request, "committee/emergency_detail.html", context, status=400)


@login_required
@require_POST
def emergency_review(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    emergency = selectors.emergency_get(viewer=request.user, pk=pk)
    form = EmergencyReviewForm(request.POST)
    if form.is_valid():
        try:
            services.emergency_review_record(actor=request.user, emergency=emergency,
                                             outcome=form.cleaned_data["outcome"], note=form.cleaned_data["note"])
        except StateConflict as exc:
            for message in exc.messages:
                messages.error(request, message)
            return redirect("committee:emergency-detail", pk=pk)
        except ValidationError as exc:
            form_errors_add(form, exc)
        else:
            messages.success(request, _("The review's decision is recorded."))
            return redirect("committee:emergency-detail", pk=pk)
    context = {**_detail_context(request, emergency), "form": EmergencyDecisionForm(), "review_form": form}
    return render(request, "committee/emergency_detail.html", context, status=400)
