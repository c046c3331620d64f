"""A person's own page: who they are in Docket, which notifications their daily digest carries, their API tokens."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_http_methods, require_POST

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
            "tokens": selectors.personal_token_list(user=request.user),
            "token_max_age_days": settings.DOCKET_TOKEN_MAX_AGE_DAYS,
            "now": timezone.now(),
        },
    )


@login_required
@require_POST
def tokens_revoke_all(request: AuthenticatedHttpRequest) -> HttpResponse:
    count = services.personal_token_revoke_all(user=request.user)
    if count:
        text = ngettext("Your API token is revoked.", "All %(count)d of your API tokens are revoked.", count)
        messages.success(request, text % {"count": count})
    else:
        messages.info(request, _("You had no API tokens."))
    return redirect("committee:profile")
