"""The fast lane: a team member files a small request of the running week; the chair revokes a grant not started."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from committee import selectors
from committee.forms import FastLaneRequestForm, FastLaneRevokeForm
from committee.models import FastLaneStatus
from committee.services import fastlane as services
from core.errors import StateConflict, form_errors_add
from core.http import AuthenticatedHttpRequest


@login_required
def fast_lane_create(request: AuthenticatedHttpRequest) -> HttpResponse:
    if not selectors.team_list_for_user(user=request.user).exists():
        raise PermissionDenied(_("Only a team's members file its fast-lane requests."))
    form = FastLaneRequestForm(request.POST or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            fast = services.fast_lane_request_file(
                actor=request.user, team=data["team"], pool=data["pool"], title=data["title"],
                gpu_count=data["gpu_count"], duration_hours=data["duration_hours"],
                justification=data["justification"],
            )
        except StateConflict as exc:
            for message in exc.messages:
                messages.error(request, message)
        except ValidationError as exc:
            form_errors_add(form, exc)
        else:
            if fast.status == FastLaneStatus.GRANTED:
                messages.success(request, _("Granted in the fast lane: plan version %(version)d is published.")
                                 % {"version": fast.plan.version if fast.plan else 0})
            else:
                messages.info(request, _("Not granted in the fast lane: %(reason)s") % {
                    "reason": fast.reason_display})
            return redirect("committee:request-detail", pk=fast.request_id)
    status = 400 if request.method == "POST" else 200
    return render(request, "committee/fast_lane_form.html", {"form": form, **selectors.fast_lane_policy_now()},
                  status=status)


@login_required
@require_POST
def fast_lane_revoke(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    fast = selectors.fast_lane_get(viewer=request.user, pk=pk)
    form = FastLaneRevokeForm(request.POST)
    if not form.is_valid():
        for errors in form.errors.values():
            for message in errors:
                messages.error(request, str(message))
    else:
        try:
            plan = services.fast_lane_revoke(actor=request.user, fast=fast, reason=form.cleaned_data["reason"])
        except (StateConflict, ValidationError) as exc:
            for message in exc.messages:
                messages.error(request, message)
        else:
            messages.success(request, _("Revoked: plan version %(version)d is published without it.")
                             % {"version": plan.version})
    if fast.review_cycle is not None:
        return redirect(reverse("committee:review-cycle", args=[fast.review_cycle.week]) + "#fast-lane")
    return redirect("committee:request-detail", pk=fast.request_id)
