"""The elastic policy and its history (anyone signed in); changing it (the chair)."""

from __future__ import annotations

from dataclasses import replace

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from allocations.elastic import selectors as elastic_selectors
from allocations.elastic.evaluate import policy_errors
from allocations.elastic.selectors import ELASTIC_PARAMETERS, REPLAY_DAYS, ElasticVersion
from committee import selectors, services
from committee.forms import ElasticPolicyChangeForm
from core.errors import form_errors_add
from core.http import AuthenticatedHttpRequest
from governed import params

Row = tuple[str, object, object, bool]


def _rows(version: ElasticVersion, previous: ElasticVersion | None) -> list[Row]:
    """(label, value, the previous version's value, changed) per parameter."""
    out = []
    for name in ELASTIC_PARAMETERS:
        found = params.param_for(params.ELASTIC_PREFIX + name)
        label = str(found[0].label) if found else name
        value, before = version.parameters()[name], previous.parameters()[name] if previous else None
        out.append((label, value, before, previous is not None and before != value))
    return out


@login_required
@require_GET
def elastic_policy_page(request: AuthenticatedHttpRequest) -> HttpResponse:
    history = elastic_selectors.elastic_policy_history()
    current = elastic_selectors.elastic_policy_current()
    context = {
        "current": current,
        "rows": _rows(current, None),
        "history": [(version, _rows(version, previous), previous) for version, previous in history],
        "pools": elastic_selectors.pool_list_with_elastic(),
    }
    return render(request, "committee/elastic_policy.html", context)


@login_required
def elastic_policy_change(request: AuthenticatedHttpRequest) -> HttpResponse:
    if not selectors.user_is_chair(user=request.user):
        raise PermissionDenied(_("Only the chair changes the elastic policy."))
    current = elastic_selectors.elastic_policy_current()
    form = ElasticPolicyChangeForm(request.POST or None, initial=current.parameters())
    replay = None
    if request.method == "POST" and "preview" in request.POST and form.is_valid():
        # Replay the proposal beside the policy in force over the last week: nothing is saved.
        candidate = replace(current.policy, **form.parameters())
        errors = policy_errors(candidate)
        for name, message in errors.items():
            form.add_error(name, message)
        if not errors:
            replay = elastic_selectors.policy_replay_rows(
                current=current.policy, proposed=candidate, now=timezone.now()
            )
        return render(request, "committee/elastic_policy_change.html",
                      {"form": form, "current": current, "replay": replay, "replay_days": REPLAY_DAYS},
                      status=200 if replay is not None else 400)
    if request.method == "POST" and form.is_valid():
        try:
            version = services.elastic_policy_change(
                actor=request.user, parameters=form.parameters(), reason=form.cleaned_data["reason"]
            )
        except ValidationError as exc:
            form_errors_add(form, exc)
        else:
            messages.success(
                request,
                _("Elastic policy version %(n)d saved. It applies from the next hourly evaluation.")
                % {"n": version.number},
            )
            return redirect("committee:elastic-policy")
    status = 400 if request.method == "POST" else 200
    context = {"form": form, "current": current, "replay": None, "replay_days": REPLAY_DAYS}
    return render(request, "committee/elastic_policy_change.html", context, status=status)
