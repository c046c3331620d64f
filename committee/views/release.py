"""Giving GPUs back and asking for more hours on the request page: parse the form, call one service
(committee.services.window_release, grant_extension_file), redirect.

A refusal shows the request page again with the form and its errors (400).
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from committee import selectors, services
from committee.forms import ExtensionForm, ReleaseForm
from core.errors import StateConflict, form_errors_add
from core.http import AuthenticatedHttpRequest


@login_required
@require_POST
def window_release(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    gpu_request = selectors.request_get_for_viewer(viewer=request.user, pk=pk)
    if not selectors.user_is_team_lead(user=request.user, team=gpu_request.team):
        raise PermissionDenied(_("Only a lead of %(team)s gives back its GPUs.") % {"team": gpu_request.team.name})
    form = ReleaseForm(request.POST)
    if form.is_valid():
        try:
            release = services.window_release(
                actor=request.user, gpu_request=gpu_request, gpu_count=form.cleaned_data["gpu_count"],
                effective_from=form.cleaned_data["effective_from"], reason=form.cleaned_data["reason"],
            )
        except (ValidationError, StateConflict) as exc:
            form_errors_add(form, exc if isinstance(exc, ValidationError) else ValidationError(str(exc)))
        else:
            messages.success(request, _(
                "Given back and published as plan version %(version)d: this week's waitlist got what it could use, "
                "and the teams whose windows changed are told."
            ) % {"version": release.plan.version})
            return redirect("committee:request-detail", pk=gpu_request.pk)
    context = {"gpu_request": gpu_request, "can_edit": False, "release_form": form}
    return render(request, "committee/request_detail.html", context, status=400)


@login_required
@require_POST
def grant_extension(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    """A team member asks for more hours of its running window: an emergency, shown on its own page."""
    gpu_request = selectors.request_get_for_viewer(viewer=request.user, pk=pk)
    if not selectors.user_is_team_member(user=request.user, team=gpu_request.team):
        raise PermissionDenied(
            _("Only a member of %(team)s asks to extend its grants.") % {"team": gpu_request.team.name})
    form = ExtensionForm(request.POST)
    if form.is_valid():
        try:
            emergency = services.grant_extension_file(
                actor=request.user, gpu_request=gpu_request, hours=form.cleaned_data["hours"],
                justification=form.cleaned_data["justification"],
            )
        except (ValidationError, StateConflict) as exc:
            form_errors_add(form, exc if isinstance(exc, ValidationError) else ValidationError(str(exc)))
        else:
            messages.success(request, _("Asked: the chair and one other member approve or reject it here."))
            return redirect("committee:emergency-detail", pk=emergency.pk)
    context = {"gpu_request": gpu_request, "can_edit": False, "extension_form": form}
    return render(request, "committee/request_detail.html", context, status=400)
