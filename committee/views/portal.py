"""Team portal pages. Views parse input, call one service, render."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from itertools import groupby
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from allocations import selectors as allocation_selectors
from allocations.elastic import selectors as elastic_selectors
from allocations.forms import org_filter
from allocations.models import Department, Team
from committee import selectors, services, weeks
from committee.forms import (
    AlternativeFormSet,
    GpuRequestForm,
    ImpactForecastForm,
    PoolOptionFormSet,
    TeamChoiceForm,
    UsagePrefillForm,
    UsageReportForm,
    alternatives_initial,
    pool_options_initial,
)
from committee.models import GpuRequest, RequestStatus, ReviewCycle
from core.errors import form_errors_add
from core.http import AuthenticatedHttpRequest
from core.parsers import parse_whole_number

# Requests on one page of the portal, newest week first, grouped by week: a team's few weeks, or one week of a
# lead of many teams (250 teams file 1,000 requests a week).
PORTAL_REQUESTS = 50
AGENT_ACTIONS_SHOWN = 20  # the request page lists the latest; the pool's elastic history has them all


@login_required
def home(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Each role lands where its work is: a committee member (the chair too) on the week that needs the
    committee (the review opens it), everyone else on their teams' requests."""
    if selectors.user_is_committee(user=request.user):
        return redirect("committee:review")
    return redirect("committee:portal")


@login_required
def portal(request: AuthenticatedHttpRequest) -> HttpResponse:
    """My teams' requests, this cycle first, each with its outcome: decided → placed; PORTAL_REQUESTS a page.

    A page costs the same queries and rows whether the teams have filed for a month or for years, and whether
    the viewer leads one team or hundreds.
    """
    team_ids = selectors.viewer_roles(user=request.user).team_ids
    # A member narrows the list to a department's or a team's requests (of their own teams only).
    org = org_filter(request.GET, teams=Team.objects.filter(pk__in=team_ids),
                     departments=Department.objects.filter(teams__pk__in=team_ids).distinct())
    department, team = org.chosen()
    requests_page = Paginator(
        selectors.request_list_for_team_member(viewer=request.user, department=department, team=team), PORTAL_REQUESTS
    ).get_page(request.GET.get("page"))
    gpu_requests = list(requests_page)
    outcomes = selectors.request_outcome_map(requests=gpu_requests, viewer=request.user)
    intake_cycle = selectors.cycle_open_for_intake()
    filing = intake_cycle is not None and intake_cycle.intake_open
    carry = selectors.request_carry_offers(requests=gpu_requests, cycle=intake_cycle) if filing else {}
    by_cycle = [
        (cycle, [(r, outcomes[r.pk], carry.get(r.pk)) for r in rows])
        for cycle, rows in groupby(gpu_requests, key=lambda r: r.cycle)
    ]
    return render(
        request,
        "committee/portal.html",
        {
            "teams": selectors.team_list_for_user(user=request.user),
            "intake_cycle": intake_cycle,
            "copy_sources": (
                selectors.request_copy_sources(viewer=request.user, cycle=intake_cycle) if filing and intake_cycle
                else []
            ),
            "filings": selectors.team_filings_led_by(user=request.user),
            "by_cycle": by_cycle,
            "page_obj": requests_page,
            "org_form": org if team_ids else None,
            "org_query": urlencode(org.query()),
            "pager_query": urlencode(org.query()),
            "idle_grants": elastic_selectors.idle_grants(team_ids=team_ids),
            "open_questions": selectors.question_list_open_for_teams(viewer=request.user),
        },
    )


def _attach_service_errors(exc: ValidationError, forms: dict[str, Any]) -> None:
    """Put a service's ValidationError on the form field it names, else on the main form."""
    alternatives = [f for f in forms["alternatives"].forms if not _deleted(f)]
    options = [f for f in forms["pool_options"].forms if f.option() is not None]
    parts = {"usage": forms["usage"], "forecast": forms["forecast"],
             **{f"alternatives.{index}": alt for index, alt in enumerate(alternatives)},
             **{f"pool_options.{index}": option for index, option in enumerate(options)}}
    form_errors_add(forms["request"], exc, parts=parts)


def _error_summary(forms: dict[str, Any], team_form: Any) -> list[tuple[str, str]]:
    """Every error of the page, (where, message), in the order of the form: the summary above it."""
    rows: list[tuple[str, str]] = []
    parts: list[tuple[str, Any]] = [("", team_form)] if team_form is not None else []
    parts += [("", forms["request"]), ("", forms["usage"]), ("", forms["forecast"])]
    parts += [(_("Alternative %(n)d") % {"n": i + 1}, f) for i, f in enumerate(forms["alternatives"].forms)]
    parts += [(_("Other pool %(n)d") % {"n": i + 1}, f) for i, f in enumerate(forms["pool_options"].forms)]
    for where, form in parts:
        if not form.is_bound:
            continue
        for name, errors in form.errors.items():
            label = str(form.fields[name].label) if name in form.fields else ""
            place = " · ".join(p for p in (where, label) if p)
            rows.extend((place, str(message)) for message in errors)
    rows.extend(("", str(message)) for message in forms["alternatives"].non_form_errors())
    rows.extend(("", str(message)) for message in forms["pool_options"].non_form_errors())
    return rows


def _deleted(form: Any) -> bool:
    return bool(form.cleaned_data.get("DELETE")) if hasattr(form, "cleaned_data") else False


def _bound_forms(
    request: HttpRequest, gpu_request: GpuRequest | None, *, cycle: ReviewCycle,
    prefill: selectors.UsagePrefill | None = None, copy: selectors.RequestCopy | None = None,
) -> dict[str, Any]:
    """The request form's parts. A new request starts from the week's bounds, or from `copy` (an earlier
    week's request moved into this one); its usage from `prefill` (its team's and pool's measurement)."""
    data = request.POST if request.method == "POST" else None
    initial: dict[str, Any] = {}
    if copy is not None:
        initial = {
            **copy.fields,
            **{name: timezone.localtime(copy.fields[name], weeks.committee_zone())
               for name in ("earliest_start", "latest_end", "deadline") if copy.fields.get(name) is not None},
        }
    elif prefill is not None and prefill.pool is not None:
        initial = {"pool": prefill.pool}
    usage_initial = None
    if prefill is not None and not data and gpu_request is None:
        # The measurement wins; a copied request's stated figures fill what was not measured.
        usage_initial = {**(copy.usage if copy is not None else {}), **prefill.initial}
    return {
        "request": GpuRequestForm(data, instance=gpu_request, initial=initial or None, cycle=cycle),
        "usage": UsageReportForm(data, instance=getattr(gpu_request, "usage_report", None), initial=usage_initial),
        "forecast": ImpactForecastForm(
            data, instance=getattr(gpu_request, "impact_forecast", None),
            initial=copy.forecast if copy is not None else None,
        ),
        "alternatives": AlternativeFormSet(
            data, prefix="alt",
            initial=None if data else (copy.alternatives if copy is not None else alternatives_initial(gpu_request)),
        ),
        "pool_options": PoolOptionFormSet(
            data if data is None or "pools-TOTAL_FORMS" in data else None, prefix="pools",
            initial=None if data else (copy.pool_options if copy is not None else pool_options_initial(gpu_request)),
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


def _forms_valid(
    forms: dict[str, Any], *, team: Team | None, cycle: ReviewCycle, gpu_request: GpuRequest | None = None
) -> bool:
    """Validate every part and check every rule of the request at once, so every error shows together.

    Django's own checks skip a rule whose fields failed; the rules that span fields, the week and the
    team's other requests (services.request_problems) are checked here on every field that passed.
    """
    # Validate every form, to show every error; a post without the other pools' rows (an older page) keeps them.
    results = [form.is_valid() for form in forms.values() if form.is_bound]
    alternatives = [
        dict(getattr(f, "cleaned_data", {}) or {}) for f in forms["alternatives"].forms if not _deleted(f)
    ]
    problems = services.request_problems(
        team=team, cycle=cycle, fields=forms["request"].partial_data(), alternatives=alternatives,
        gpu_request=gpu_request,
    )
    if problems:
        _attach_service_errors(ValidationError(problems), forms)
    return all(results) and not problems


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
        **({"pool_options": [
            option for option in (f.option() for f in forms["pool_options"].forms) if option is not None
        ]} if forms["pool_options"].is_bound else {}),
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
    copy: selectors.RequestCopy | None = None,
    teams: list[Team] | None = None,
) -> HttpResponse:
    context: dict[str, Any] = {"forms": forms, "gpu_request": gpu_request, "team_form": team_form, "cycle": cycle,
                               "prefill": prefill, "copy": copy, "error_summary": _error_summary(forms, team_form),
                               "standard_gpus": selectors.pool_standard_gpus_list(),
                               "pool_weights": selectors.pool_billing_weights(week=cycle.week),
                               "filing_hint": _filing_hint(forms["request"], cycle=cycle)}
    if gpu_request is None and teams:
        # Before the form: the pools each team already has a request on this week, to edit instead.
        context["existing"] = list(selectors.request_active_by_team_pool(teams=teams, cycle=cycle).values())
        context["copy_sources"] = selectors.request_copy_sources(viewer=request.user, cycle=cycle)
        context["several_teams"] = len(teams) > 1
    return render(request, "committee/request_form.html", context, status=status)


def _copy_source(request: AuthenticatedHttpRequest, cycle: ReviewCycle) -> GpuRequest | None:
    """The earlier week's request the form starts from (?copy=<id>, kept in the form as `copy`): one of the
    viewer's own teams' requests of a week before `cycle`; None (with a message) for any other id."""
    params = request.POST if request.method == "POST" else request.GET
    raw = params.get("copy", "").strip()
    if not raw:
        return None
    source = None
    number = parse_whole_number(raw, max_digits=11)
    if number is not None:
        source = (
            selectors.request_list_for_team_member(viewer=request.user)
            .filter(pk=number, cycle__starts_at__lt=cycle.starts_at, is_emergency=False)
            .first()
        )
    if source is None:
        messages.error(
            request, _("That request cannot be copied: copy one of your teams' requests of an earlier week.")
        )
    return source


@login_required
def request_create(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The new-request page: the week's bounds pre-filled, or an earlier week's request copied (?copy=<id>);
    a notice, before the form, for each pool the viewer's teams already have a request on this week."""
    cycle = selectors.cycle_open_for_intake()
    teams = list(selectors.team_list_for_user(user=request.user))
    if not teams:
        raise PermissionDenied(_("You are not a member of any team."))
    if cycle is None or not cycle.intake_open:
        messages.error(request, _("No cycle is open for intake right now."))
        return redirect("committee:portal")
    source = _copy_source(request, cycle)
    copy = selectors.request_copy(source=source, cycle=cycle) if source is not None else None
    if source is not None and request.method != "POST":
        prefill, chosen_ok = selectors.usage_prefill(team=source.team, pool=source.pool, cycle=cycle), True
    else:
        prefill, chosen_ok = _usage_prefill(request, cycle, teams)
    if not chosen_ok:
        messages.error(request, _("Choose one of your own teams and an existing GPU pool."))
    forms = _bound_forms(request, None, cycle=cycle, prefill=prefill, copy=copy)
    team_form = TeamChoiceForm(request.POST or None, user=request.user, initial={"team": prefill.team})
    if request.method == "POST":
        team = team_form.cleaned_data["team"] if team_form.is_valid() else None
        if _forms_valid(forms, team=team, cycle=cycle) and team is not None:
            detail = (
                _("copied from “%(title)s”, week %(week)s") % {"title": source.title, "week": source.cycle.week}
                if source is not None else ""
            )
            try:
                gpu_request = services.request_create(
                    actor=request.user, team=team, cycle=cycle, detail=detail, **_payload(forms)
                )
            except ValidationError as exc:
                _attach_service_errors(exc, forms)
            else:
                messages.success(request, _("Draft saved. Submit it when it is ready for the committee."))
                return redirect("committee:request-detail", pk=gpu_request.pk)
        return _render_form(
            request, forms, gpu_request=None, team_form=team_form, cycle=cycle, prefill=prefill, status=400,
            copy=copy, teams=teams,
        )
    return _render_form(
        request, forms, gpu_request=None, team_form=team_form, cycle=cycle, prefill=prefill,
        status=200 if chosen_ok else 400, copy=copy, teams=teams,
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


HINT_FIELDS = ("pool", "gpu_count", "earliest_start", "latest_end", "run_weeks")


def _filing_hint(form: GpuRequestForm, *, cycle: ReviewCycle) -> selectors.FilingHint | None:
    """The forward calendar's hint for the request form's pool, GPUs and window, as far as they are valid (typed,
    or the request's own when it is edited); None until the pool, the GPUs and both ends of the window are."""
    if form.is_bound:
        form.is_valid()
        if any(name in form.errors for name in HINT_FIELDS):
            return None
        values = form.partial_data()
    else:
        values = {name: form.initial.get(name) for name in HINT_FIELDS}
        if isinstance(values["pool"], int):
            values["pool"] = selectors.pool_list().filter(pk=values["pool"]).first()
    if any(values.get(name) is None for name in HINT_FIELDS[:4]):
        return None
    return selectors.filing_hint(
        pool=values["pool"], week=cycle.week, gpu_count=values["gpu_count"], earliest_start=values["earliest_start"],
        latest_end=values["latest_end"], run_weeks=values.get("run_weeks") or 1,
    )


@login_required
@require_GET
def request_filing_hint(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The request form's hint (htmx swaps it in when the pool, the GPUs, the window or the weeks change): how
    committed the pool is in that window, and how often a request of that size was placed in the weeks before.
    Fields not valid yet leave the hint asking for them; nothing is saved."""
    cycle = selectors.cycle_open_for_intake()
    if cycle is None or not cycle.intake_open:
        return HttpResponse(_("No cycle is open for intake right now."), status=409)
    form = GpuRequestForm({name: request.GET.get(name, "") for name in HINT_FIELDS}, cycle=cycle)
    return render(request, "committee/_filing_hint.html", {"filing_hint": _filing_hint(form, cycle=cycle)})


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
    forms = _bound_forms(request, gpu_request, cycle=gpu_request.cycle)
    prefill = selectors.usage_prefill(team=gpu_request.team, pool=gpu_request.pool, cycle=gpu_request.cycle)
    if request.method == "POST":
        if _forms_valid(forms, team=gpu_request.team, cycle=gpu_request.cycle, gpu_request=gpu_request):
            try:
                services.request_update(actor=request.user, gpu_request=gpu_request, **_payload(forms))
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
    member = selectors.user_is_team_member(user=request.user, team=gpu_request.team)
    intake = selectors.cycle_open_for_intake()
    carry = (
        selectors.request_carry_offers(requests=[gpu_request], cycle=intake).get(gpu_request.pk)
        if member and intake is not None and intake.intake_open else None
    )
    lead_submits = selectors.team_lead_submits(team=gpu_request.team)
    context = {
        "gpu_request": gpu_request, "can_edit": can_edit, "outcome": outcome, "usage": usage,
        "capacity_warning": selectors.request_capacity_warning(gpu_request=gpu_request)
        if gpu_request.status in (RequestStatus.DRAFT, RequestStatus.SUBMITTED) else None,
        "idle_grants": elastic_selectors.idle_grants(request_refs=[gpu_request.pk]),
        "agent_actions": elastic_selectors.agent_actions(request_refs=[gpu_request.pk], limit=AGENT_ACTIONS_SHOWN),
        # The committee's questions (never its comments); the team answers the open ones here.
        "questions": selectors.request_questions_for_viewer(gpu_request=gpu_request, viewer=request.user),
        "answering": is_team and gpu_request.cycle.status in ("open", "in_review"),
        "revising": revising,
        "carry": carry,
        "carried_into": list(gpu_request.carried_into.select_related("cycle").order_by("cycle__starts_at")),
        "lead_submits": lead_submits,
        "member": member,
        "run_commitments": list(allocation_selectors.commitment_list_for_runs(refs=[gpu_request.pk]))
        if gpu_request.run_weeks > 1 else [],
        "is_lead": lead_submits and selectors.user_is_team_lead(user=request.user, team=gpu_request.team),
        "run_lead": member and selectors.user_is_team_lead(user=request.user, team=gpu_request.team),
        "run_extensions": list(gpu_request.run_extensions.select_related("cycle").order_by("cycle__starts_at")),
    }
    return render(request, "committee/request_detail.html", context)


@login_required
@require_POST
def request_run_extend(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    """A lead asks to extend the run by more weeks: a continuing request in the next week's review."""
    gpu_request = _own_request(request, pk)
    try:
        extension = services.run_extension_file(
            actor=request.user, gpu_request=gpu_request,
            weeks=parse_whole_number(request.POST.get("weeks"), max_digits=3),
            reason=request.POST.get("reason", ""), now=timezone.now(),
        )
    except ValidationError as exc:  # a StateConflict too
        for message in exc.messages:
            messages.error(request, message)
        return redirect(reverse("committee:request-detail", kwargs={"pk": pk}) + "#run")
    messages.success(request, _("Asked: the extension joins the review of week %(week)s.") % {
        "week": extension.cycle.week})
    return redirect("committee:request-detail", pk=extension.pk)


@login_required
@require_POST
def request_carry(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    """Carry a deferred request into the week open for intake, as a draft the team reviews and submits."""
    gpu_request = _own_request(request, pk)
    cycle = selectors.cycle_open_for_intake()
    if cycle is None:
        messages.error(request, _("No cycle is open for intake right now."))
        return redirect("committee:request-detail", pk=pk)
    try:
        draft = services.request_carry(actor=request.user, gpu_request=gpu_request, cycle=cycle)
    except ValidationError as exc:
        for message in exc.messages:
            messages.error(request, message)
        return redirect("committee:request-detail", pk=pk)
    messages.success(
        request, _("Carried into week %(week)s as a draft: check it, then submit it.") % {"week": cycle.week}
    )
    return redirect("committee:request-detail", pk=draft.pk)


@login_required
@require_POST
def request_run_explain(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    """The run's team says why it used less than the threshold, for the continuation into a week."""
    gpu_request = _own_request(request, pk)
    try:
        services.run_continuation_explain(actor=request.user, gpu_request=gpu_request,
                                          week=request.POST.get("week", ""), reason=request.POST.get("reason", ""))
    except ValidationError as exc:  # a StateConflict too
        for message in exc.messages:
            messages.error(request, message)
    else:
        messages.success(request, _("Saved: the run's next week continues on your reason."))
    return redirect(reverse("committee:request-detail", kwargs={"pk": pk}) + "#run")


@login_required
@require_POST
def request_return(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    """A team lead sends a member's draft back with a note (the team's "the lead submits" setting)."""
    gpu_request = _own_request(request, pk)
    try:
        services.request_return(actor=request.user, gpu_request=gpu_request, note=request.POST.get("note", ""))
    except ValidationError as exc:
        for message in exc.messages:
            messages.error(request, message)
    else:
        messages.success(request, _("Sent back to its author with your note."))
    return redirect("committee:request-detail", pk=pk)


@login_required
@require_POST
def team_filing(request: AuthenticatedHttpRequest, slug: str) -> HttpResponse:
    """A team lead turns "members draft, the lead submits" on or off (the portal's setting)."""
    team = get_object_or_404(Team, slug=slug)
    services.team_filing_set(actor=request.user, team=team, lead_submits=request.POST.get("lead_submits") == "on")
    messages.success(request, _("Saved how %(team)s files its requests.") % {"team": team.name})
    return redirect("committee:portal")


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
    return _transition(request, pk, services.request_submit, _("Submitted to the committee."))


@login_required
@require_http_methods(["GET", "POST"])
def request_withdraw(request: AuthenticatedHttpRequest, pk: int) -> HttpResponse:
    """Withdraw a request, in two steps: the page says what is lost; only a POST with `confirm` withdraws."""
    if request.method == "POST" and request.POST.get("confirm"):
        return _transition(request, pk, services.request_withdraw, _("Request withdrawn."))
    gpu_request = _own_request(request, pk)
    if gpu_request.status not in ("draft", "submitted"):
        status = gpu_request.get_status_display().lower()
        messages.error(request, _("A %(status)s request cannot be withdrawn.") % {"status": status})
        return redirect("committee:request-detail", pk=pk)
    if not gpu_request.cycle.intake_open:
        messages.error(request, _("Intake is closed: this request can no longer be withdrawn."))
        return redirect("committee:request-detail", pk=pk)
    return render(request, "committee/request_withdraw.html", {"gpu_request": gpu_request})
