"""The chair publishes a finalized week from the review page, after a confirmation of what goes out."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_http_methods

from committee import selectors, services
from committee.models import CycleStatus
from core.http import AuthenticatedHttpRequest


@login_required
@require_http_methods(["GET", "POST"])
def cycle_publish(request: AuthenticatedHttpRequest, week: str) -> HttpResponse:
    """GET (or a POST without `confirm=1`): the windows the schedulers would get, to confirm; then publish."""
    if not selectors.user_is_chair(user=request.user):
        raise PermissionDenied(_("Only the chair publishes the allocation."))
    cycle = selectors.cycle_get(week=week)
    reason = request.POST.get("reason", "")
    if request.method == "POST" and request.POST.get("confirm") == "1":
        try:
            plan = services.cycle_publish(actor=request.user, cycle=cycle, reason=reason)
        except ValidationError as exc:
            for message in exc.messages:
                messages.error(request, message)
        else:
            windows = plan.windows.count()
            messages.success(
                request,
                ngettext("Week %(week)s is published: plan version %(version)d with %(windows)d new window; the "
                         "archive is adding it to the week's decision record (its progress is shown below).",
                         "Week %(week)s is published: plan version %(version)d with %(windows)d new windows; the "
                         "archive is adding them to the week's decision record (its progress is shown below).",
                         windows)
                % {"week": plan.week, "version": plan.version, "windows": windows},
            )
        return redirect("committee:review-cycle", week=cycle.week)
    possible = cycle.status in (CycleStatus.FINALIZED, CycleStatus.PUBLISHED)
    summary = selectors.publish_summary(cycle=cycle, now=timezone.now()) if possible else None
    if request.method == "POST" and not possible:
        messages.error(request, _("Nothing was changed: week %(week)s is %(status)s.")
                       % {"week": cycle.week, "status": cycle.get_status_display().lower()})
    context = {"cycle": cycle, "possible": possible, "summary": summary, "reason": reason}
    return render(request, "committee/confirm_publish.html", context, status=200 if possible else 409)
