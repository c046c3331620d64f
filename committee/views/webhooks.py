"""The webhooks page (/webhooks/): a team's lead or the chair subscribes receivers to lifecycle events, reads each
subscription's delivery log and stops one. Views parse, call one service (committee/services/webhooks.py), render.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from allocations.models import Cluster, Team
from committee import selectors, services
from committee.forms import WebhookForm
from core.errors import form_errors_add
from core.forms import form_field
from core.http import AuthenticatedHttpRequest


def _targets(request: AuthenticatedHttpRequest) -> list[tuple[str, str]]:
    teams = [(f"team:{team.slug}", _("Team %(name)s") % {"name": team.name})
             for team, _lead_submits in selectors.team_filings_led_by(user=request.user)]
    chair = selectors.user_is_chair(user=request.user)
    clusters = [(f"cluster:{c.slug}", _("Cluster %(name)s") % {"name": c.name})
                for c in (Cluster.objects.order_by("name") if chair else [])]
    return teams + clusters


def _page(request: AuthenticatedHttpRequest, form: WebhookForm, *, secret: str = "", status: int = 200) -> HttpResponse:
    subscriptions = list(selectors.webhook_subscriptions_for_viewer(viewer=request.user))
    logs = [(s, selectors.webhook_delivery_log(subscription=s, limit=20)) for s in subscriptions]
    may_subscribe = bool(form_field(form, "target", forms.ChoiceField).choices)
    context = {"form": form, "logs": logs, "secret": secret, "may_subscribe": may_subscribe}
    return render(request, "committee/webhooks.html", context, status=status)


@login_required
def webhook_list(request: AuthenticatedHttpRequest) -> HttpResponse:
    targets = _targets(request)
    if request.method != "POST":
        return _page(request, WebhookForm(targets=targets))
    form = WebhookForm(request.POST, targets=targets)
    if form.is_valid():
        kind, _colon, slug = form.cleaned_data["target"].partition(":")
        team = Team.objects.get(slug=slug) if kind == "team" else None
        cluster = Cluster.objects.get(slug=slug) if kind == "cluster" else None
        try:
            _subscription, secret = services.webhook_subscription_create(
                actor=request.user, url=form.cleaned_data["url"], team=team, cluster=cluster)
        except ValidationError as exc:
            form_errors_add(form, exc)
        else:
            # Shown in this answer only: not kept in a message or the session.
            return _page(request, WebhookForm(targets=targets), secret=secret)
    return _page(request, form, status=400)


@login_required
@require_POST
def webhook_deactivate(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    subscription = selectors.webhook_subscriptions_for_viewer(viewer=request.user).filter(pk=pk).first()
    if subscription is None:
        raise Http404("No such subscription")
    services.webhook_subscription_deactivate(actor=request.user, subscription=subscription)
    messages.success(request, _("Stopped: Docket posts nothing more to %(url)s.") % {"url": subscription.url})
    return redirect("committee:webhooks")
