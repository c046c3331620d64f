"""A grant's realized outcome, reported by its team (docs/outcomes.md): parse the form, call one service, redirect.

GET shows the forecast, what was asked and the form (for the team's members, once the clock asked for it); POST calls
`committee.services.outcome_report`; a refusal shows the page again with the errors (400), nothing written.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_http_methods

from committee import limits, selectors, services
from committee.models import RealizedOutcome
from committee.selectors.realized import outcome_lines
from core.errors import StateConflict, form_errors_add
from core.http import AuthenticatedHttpRequest


class OutcomeForm(forms.Form):
    # Text, not a number field: the service reads the value as typed ("1,200.50") and says what is wrong with it.
    value = forms.CharField(label=gettext_lazy("Realized value"), max_length=40, required=False)
    note = forms.CharField(label=gettext_lazy("Note"), max_length=limits.OUTCOME_NOTE_MAX_LENGTH, required=False,
                           widget=forms.Textarea(attrs={"rows": 3}),
                           help_text=gettext_lazy("How it was measured, or why it differs from the forecast."))


@login_required
@require_http_methods(["GET", "POST"])
def request_outcome(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    gpu_request = selectors.request_get_for_viewer(viewer=request.user, pk=pk)
    member = selectors.user_is_team_member(user=request.user, team=gpu_request.team)
    outcome = RealizedOutcome.objects.filter(request=gpu_request).first()
    status = 200
    if request.method == "POST":
        if not member:
            raise PermissionDenied(_("Only a member of %(team)s may report this grant's outcome.")
                                   % {"team": gpu_request.team.name})
        form = OutcomeForm(request.POST)
        if form.is_valid():
            try:
                services.outcome_report(actor=request.user, gpu_request=gpu_request,
                                        value=form.cleaned_data["value"], note=form.cleaned_data["note"])
            except (ValidationError, StateConflict) as exc:
                form_errors_add(form, exc if isinstance(exc, ValidationError) else ValidationError(str(exc)))
            else:
                messages.success(request, _("Outcome saved: the committee sees it in %(team)s's track record.")
                                 % {"team": gpu_request.team.name})
                return redirect("committee:request-detail", pk=gpu_request.pk)
        status = 400
    else:
        initial = {"value": outcome.value, "note": outcome.note} if outcome and outcome.reported else None
        form = OutcomeForm(initial=initial)
    lines = outcome_lines(outcomes=[outcome], now=timezone.now()) if outcome else []
    context = {"gpu_request": gpu_request, "forecast": getattr(gpu_request, "impact_forecast", None),
               "outcome": outcome, "line": lines[0] if lines else None, "form": form, "member": member,
               "history": list(gpu_request.events.filter(action__in=("outcome reported", "outcome corrected")))}
    return render(request, "committee/outcome_report.html", context, status=status)
