"""A person's own page: who they are in Docket and which notifications their daily digest carries."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods

from committee import selectors, services
from committee.forms import NotificationPreferencesForm
from core.http import AuthenticatedHttpRequest


@login_required
@require_http_methods(["GET", "POST"])
def profile(request: AuthenticatedHttpRequest) -> HttpResponse:
    kinds = selectors.notification_kinds_for(user=request.user)
    if request.method == "POST":
        form = NotificationPreferencesForm(request.POST, kinds=kinds)
        if form.is_valid():
            services.notification_preferences_set(user=request.user, receive=form.cleaned_data["receive"], kinds=kinds)
            messages.success(request, _("Your notification settings are saved."))
            return redirect("committee:profile")
    else:
        opted_out = selectors.notification_opt_outs(user=request.user)
        form = NotificationPreferencesForm(initial={"receive": [k for k in kinds if k not in opted_out]}, kinds=kinds)
    return render(
        request,
        "committee/profile.html",
        {
            "form": form,
            "has_kinds": bool(kinds),
            "teams": selectors.team_list_for_user(user=request.user),
            "digests": selectors.digest_list_for_user(user=request.user),
            "waiting": selectors.notification_waiting_count(user=request.user),
        },
    )
