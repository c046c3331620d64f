"""The chair publishes a finalized week from the review page."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpResponse
from django.shortcuts import redirect
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from committee import selectors, services
from core.http import AuthenticatedHttpRequest


@login_required
@require_POST
def cycle_publish(request: AuthenticatedHttpRequest, week: str) -> HttpResponse:
    if not selectors.user_is_chair(user=request.user):
        raise PermissionDenied(_("Only the chair publishes the allocation."))
    cycle = selectors.cycle_get(week=week)
    try:
        plan = services.cycle_publish(actor=request.user, cycle=cycle, reason=request.POST.get("reason", ""))
    except ValidationError as exc:
        for message in exc.messages:
            messages.error(request, message)
    else:
        messages.success(
            request,
            _("Week %(week)s is published: plan version %(version)d with %(windows)d new window(s), recorded in the "
              "week's decision record in the archive.")
            % {"week": plan.week, "version": plan.version, "windows": plan.windows.count()},
        )
    return redirect("committee:review-cycle", week=cycle.week)
