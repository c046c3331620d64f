"""Team portal pages. Views parse input, call one service, render."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from itertools import groupby
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from allocations.elastic import selectors as elastic_selectors
from allocations.models import Team
from committee import selectors, services
from committee.forms import (
    AlternativeFormSet,
    GpuRequestForm,
    ImpactForecastForm,
    TeamChoiceForm,
    UsagePrefillForm,
    UsageReportForm,
    alternatives_initial,
)
from committee.models import GpuRequest, ReviewCycle
from core.errors import form_errors_add
from core.http import AuthenticatedHttpRequest

# Weeks of requests on one page of the portal: this week, next week and a few behind.
PORTAL_WEEKS = 6


@login_required
def home(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Each role lands where its work is: a committee member (the chair too) on the week that needs the
    committee (the review opens it), everyone else on their teams' requests."""
    if selectors.user_is_committee(user=request.user):
        return redirect("committee:review")
    return redirect("committee:portal")


@login_required
def portal(request: AuthenticatedHttpRequest) -> HttpResponse:
    """My teams' requests, this cycle first, each with its outcome: decided → placed; PORTAL_WEEKS a page.

    A page costs the same queries and rows whether the teams have filed for a month or for years.
    """
    weeks_page = Paginator(selectors.cycle_list_for_team_member(viewer=request.user), PORTAL_WEEKS).get_page(
        request.GET.get("page")
    )
    gpu_requests = list(
        selectors.request_list_for_team_member(viewer=request.user).filter(cycle__in=[c.pk for c in weeks_page])
    )
    outcomes = selectors.request_outcome_map(requests=gpu_requests, viewer=request.user)
    by_cycle = [
        (cycle, [(r, outcomes[r.pk]) for r in rows]) for cycle, rows in groupby(gpu_requests, key=lambda r: r.cycle)
    ]
    return render(
        request,
        "committee/portal.html",
        {
            "teams": selectors.team_list_for_user(user=request.user),
            "intake_cycle": selectors.cycle_open_for_intake(),
            "by_cycle": by_cycle,
            "page_obj": weeks_page,
            "idle_grants": elastic_selectors.idle_grants(team_ids=selectors.viewer_roles(user=request.user).team_ids),
        },
    )


def _attach_service_errors(exc: ValidationError, forms: dict[str, Any]) -> None:
    """Put a service's ValidationError on the form field it names, else on the main form."""
    alternatives = [f for f in forms["alternatives"].forms if not _deleted(f)]
    parts = {"usage": forms["usage"], "forecast": forms["forecast"],
             **{f"alternatives.{index}": alt for index, alt in enumerate(alternatives)}}
    form_errors_add(forms["request"], exc, parts=parts)


def _deleted(form: Any) -> bool:
    return bool(form.cleaned_data.get("DELETE")) if hasattr(form, "cleaned_data") else False


def _bound_forms(
    request: HttpRequest, gpu_request: GpuRequest | None, *, prefill: selectors.UsagePrefill | None = None
) -> dict[str, Any]:
    """The request form's parts; a new request's usage starts from `prefill` (its team's and pool's measurement)."""
    data = request.POST if request.method == "POST" else None
    return {
        "request": GpuRequestForm(
            data, instance=gpu_request,
            initial={"pool": prefill.pool} if prefill is not None and prefill.pool is not None else None,
        ),
        "usage": UsageReportForm(
            data,
            instance=getattr(gpu_request, "usage_report", None),
            initial=prefill.initial if prefill is not None and not data and gpu_request is None else None,
        ),
        "forecast": ImpactForecastForm(data, instance=getattr(gpu_request, "impact_forecast", None)),
        "alternatives": AlternativeFormSet(
            data, prefix="alt", initial=None if data else alternatives_initial(gpu_request)
        ),
    }


def _usage_prefill(
    request: AuthenticatedHttpRequest, cycle: ReviewCycle, teams: list[Team]
) -> tuple[selectors.UsagePrefill, bool]:
    """Last week's usage for the team and pool chosen (the posted form, or the address's ?team=&pool=);
    the viewer's first team and no pool when none is chosen. False with it when the choice is not valid."""
    params = request.POST if request.method == "POST" else request.GET
    chosen = UsagePrefillForm(params if "team" in params else None, user=request.user)
    if chosen.is_bound and chosen.is_valid():
        team, pool = chosen.cleaned_data["team"], chosen.cleaned_data["pool"]
        return selectors.usage_prefill(team=team, pool=pool, cycle=cycle), True
    return selectors.usage_prefill(team=teams[0], pool=None, cycle=cycle), not chosen.is_bound


def _forms_valid(forms: dict[str, Any]) -> bool:
    results = [form.is_valid() for form in forms.values()]  # validate every form, to show every error
    return all(results)


def _payload(forms: dict[str, Any]) -> dict[str, Any]:
    return {
        "fields": forms["request"].cleaned_data,
        "usage": forms["usage"].cleaned_data,
        "forecast": forms["forecast"].cleaned_data,
        "alternatives": [
            {k: v for k, v in f.cleaned_data.items() if k != "DELETE"}
            for f in forms["alternatives"].forms
            if f.cleaned_data and not f.cleaned_data.get("DELETE")
        ],
    }


def _render_form(
    request: HttpRequest,
    forms: dict[str, Any],
    *,
    gpu_request: GpuRequest | None,
    team_form: Any,
    cycle: Any,
    prefill: selectors.UsagePrefill | None,
    status: int = 200,
) -> HttpResponse:
    context = {"forms": forms, "gpu_request": gpu_request, "team_form": team_form, "cycle": cycle,
               "prefill": prefill}
    return render(request, "committee/request_form.html", context, status=status)


@login_required
def request_create(request: AuthenticatedHttpRequest) -> HttpResponse:
    cycle = selectors.cycle_open_for_intake()
    teams = list(selectors.team_list_for_user(user=request.user))
    if not teams:
        raise PermissionDenied(_("You are not a member of any team."))
    if cycle is None or not cycle.intake_open:
        messages.error(request, _("No cycle is open for intake right now."))
        return redirect("committee:portal")
    prefill, chosen_ok = _usage_prefill(request, cycle, teams)
    if not chosen_ok:
        messages.error(request, _("Choose one of your own teams and an existing GPU pool."))
    forms = _bound_forms(request, None, prefill=prefill)
    team_form = TeamChoiceForm(request.POST or None, user=request.user, initial={"team": prefill.team})
    if request.method == "POST":
        if _forms_valid(forms) and team_form.is_valid():
            try:
                gpu_request = services.gpu_request_create(
                    actor=request.user, team=team_form.cleaned_data["team"], cycle=cycle, **_payload(forms)
                )
            except ValidationError as exc:
                _attach_service_errors(exc, forms)
            else:
                messages.success(request, _("Draft saved. Submit it when it is ready for the committee."))
                return redirect("committee:request-detail", pk=gpu_request.pk)
        return _render_form(
            request, forms, gpu_request=None, team_form=team_form, cycle=cycle, prefill=prefill, status=400
        )
    return _render_form(
        request, forms, gpu_request=None, team_form=team_form, cycle=cycle, prefill=prefill,
        status=200 if chosen_ok else 400,
    )


@login_required
@require_GET
def request_usage_prefill(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The request form's last-week usage for ?team=&pool= (htmx swaps it in when either select changes).

    A team that is not the viewer's, or a pool that does not exist, is refused (400) and nothing is swapped.
    """
    cycle = selectors.cycle_open_for_intake()
    if cycle is None or not cycle.intake_open:
        return HttpResponse(_("No cycle is open for intake right now."), status=409)
    chosen = UsagePrefillForm(request.GET, user=request.user)
    if not chosen.is_valid():
        return HttpResponse(_("Choose one of your own teams and an existing GPU pool."), status=400)
    prefill = selectors.usage_prefill(
        team=chosen.cleaned_data["team"], pool=chosen.cleaned_data["pool"], cycle=cycle
    )
    usage = UsageReportForm(initial=_keep_typed(request, prefill.initial))
    return render(request, "committee/_usage_prefill.html", {"usage": usage, "prefill": prefill, "live": True})


PREFILLED_FIELDS = ("gpu_hours_granted", "gpu_hours_used", "mean_utilization_pct")


def _keep_typed(request: HttpRequest, initial: dict[str, Any]) -> dict[str, Any]:
    """The new pre-fill, except where the person typed a figure of their own: a field whose value differs
    from what was pre-filled into it (the fragment's `prefilled-*` inputs) keeps it."""
    kept = dict(initial)
    for name in PREFILLED_FIELDS:
        typed = request.GET.get(f"{UsageReportForm.prefix}-{name}", "").strip()
        if typed and _number(typed) != _number(request.GET.get(f"prefilled-{name}", "").strip()):
            kept[name] = typed[:40]  # shown back as typed; the form checks it when the request is saved
    return kept


def _number(text: str) -> Decimal | str:
    """A figure as a number, so that 760.30 and 760.3 are the same; text that is no number stays text."""
    try:
        return Decimal(text.replace(",", ""))
    except InvalidOperation:
        return text


def _own_request(request: HttpRequest, pk: int) -> GpuRequest:
    """A request of one of the viewer's own teams (committee members don't edit other teams' requests)."""
    try:
        return selectors.request_list_for_team_member(viewer=request.user).get(pk=pk)
    except GpuRequest.DoesNotExist:
        raise Http404("No such request") from None


@login_required
def request_edit(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    gpu_request = _own_request(request, pk)
    revising = selectors.request_revisable_in_review(gpu_request=gpu_request)  # an open question, in review
    if not (gpu_request.cycle.intake_open or revising) or gpu_request.status not in ("draft", "submitted"):
        messages.error(request, _("This request can no longer be edited."))
        return redirect("committee:request-detail", pk=pk)
    forms = _bound_forms(request, gpu_request)
    prefill = selectors.usage_prefill(team=gpu_request.team, pool=gpu_request.pool, cycle=gpu_request.cycle)
    if request.method == "POST":
        if _forms_valid(forms):
            try:
                services.gpu_request_update(actor=request.user, gpu_request=gpu_request, **_payload(forms))
            except ValidationError as exc:
                _attach_service_errors(exc, forms)
            else:
                messages.success(request, _("Request saved."))
                return redirect("committee:request-detail", pk=pk)
        return _render_form(
            request, forms, gpu_request=gpu_request, team_form=None, cycle=gpu_request.cycle, prefill=prefill,
            status=400,
        )
    return _render_form(
        request, forms, gpu_request=gpu_request, team_form=None, cycle=gpu_request.cycle, prefill=prefill
    )


@login_required
def request_detail(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    gpu_request = selectors.request_get_for_viewer(viewer=request.user, pk=pk)
    is_team = selectors.user_is_team_member(user=request.user, team=gpu_request.team)
    revising = is_team and selectors.request_revisable_in_review(gpu_request=gpu_request)
    can_edit = (
        (gpu_request.cycle.intake_open or revising)
        and gpu_request.status in ("draft", "submitted")
        and is_team
    )
    outcome = selectors.request_outcome_get(gpu_request=gpu_request, viewer=request.user)
    usage = selectors.measured_usage(requests=[gpu_request])[gpu_request.pk]
    context = {
        "gpu_request": gpu_request, "can_edit": can_edit, "outcome": outcome, "usage": usage,
        "idle_grants": elastic_selectors.idle_grants(request_refs=[gpu_request.pk]),
        # The committee's questions (never its comments); the team answers the open ones here.
        "questions": selectors.request_questions_for_viewer(gpu_request=gpu_request, viewer=request.user),
        "answering": is_team and gpu_request.cycle.status in ("open", "in_review"),
        "revising": revising,
    }
    return render(request, "committee/request_detail.html", context)


def _transition(request: AuthenticatedHttpRequest, pk: int, service: Any, done: str) -> HttpResponse:
    gpu_request = _own_request(request, pk)
    try:
        service(actor=request.user, gpu_request=gpu_request)
    except ValidationError as exc:
        for message in exc.messages:
            messages.error(request, message)
    else:
        messages.success(request, done)
    return redirect("committee:request-detail", pk=pk)


@login_required
@require_POST
def request_submit(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    return _transition(request, pk, services.gpu_request_submit, _("Submitted to the committee."))


@login_required
@require_http_methods(["GET", "POST"])
def request_withdraw(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    """Withdraw a request, in two steps: the page says what is lost; only a POST with `confirm` withdraws."""
    if request.method == "POST" and request.POST.get("confirm"):
        return _transition(request, pk, services.gpu_request_withdraw, _("Request withdrawn."))
    gpu_request = _own_request(request, pk)
    if gpu_request.status not in ("draft", "submitted"):
        status = gpu_request.get_status_display().lower()
        messages.error(request, _("A %(status)s request cannot be withdrawn.") % {"status": status})
        return redirect("committee:request-detail", pk=pk)
    if not gpu_request.cycle.intake_open:
        messages.error(request, _("Intake is closed: this request can no longer be withdrawn."))
        return redirect("committee:request-detail", pk=pk)
    return render(request, "committee/request_withdraw.html", {"gpu_request": gpu_request})
