"""The rubric and its history, the policy parameters' history (anyone signed in); changing the rubric (the chair)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from committee import scoring, selectors, services
from committee.forms import RubricChangeForm
from committee.models import criterion_label
from core.errors import form_errors_add
from core.http import AuthenticatedHttpRequest
from governed.selectors import policy_version_next


@login_required
@require_GET
def rubric_page(request: AuthenticatedHttpRequest) -> HttpResponse:
    current = selectors.rubric_current()
    criteria = [
        (criterion_label(c), weight, current.guidance[c], c in scoring.COMPUTED)
        for c, weight in current.weights.items()
    ]
    open_cycle = selectors.cycle_open_for_intake()
    context = {
        "current": current,
        "criteria": criteria,
        "history": selectors.rubric_history(),
        "open_cycle": open_cycle,
        "open_rubric": selectors.rubric_for_week(week=open_cycle.week) if open_cycle is not None else None,
    }
    return render(request, "committee/rubric.html", context)


@login_required
@require_GET
def policy_history_page(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Who changed a fair-share weight, a pool's reserves or cost, a cluster account or a seat, when and why."""
    return render(request, "committee/policy_history.html", {"changes": selectors.policy_history()})


@login_required
def rubric_change(request: AuthenticatedHttpRequest) -> HttpResponse:
    if not selectors.user_is_chair(user=request.user):
        raise PermissionDenied(_("Only the chair changes the rubric."))
    current = selectors.rubric_current()
    initial = {**current.weights, **{f"{c}_guidance": g for c, g in current.guidance.items()}}
    form = RubricChangeForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            rubric = services.rubric_change(
                actor=request.user,
                weights=form.weights(),
                guidance=form.guidance(),
                reason=form.cleaned_data["reason"],
            )
        except ValidationError as exc:
            form_errors_add(form, exc)
        else:
            messages.success(
                request,
                _("Rubric version %(n)d saved. It applies from the next cycle to open.") % {"n": rubric.number},
            )
            return redirect("committee:rubric")
    status = 400 if request.method == "POST" else 200
    context = {"form": form, "current": current, "next_number": policy_version_next()}
    return render(request, "committee/rubric_change.html", context, status=status)
