"""Dashboard pages. Views parse the filter, call the selectors, render: the page, a table's CSV, a PDF.

Anyone signed in sees the dashboards, scoped by `selectors.dashboard_scope` (their own teams'
numbers; the committee every team's). The monthly review and capacity planning are the
committee's pages.
"""

from __future__ import annotations

import csv
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.dates import WEEKDAYS_ABBR
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST
from plotly import graph_objects as go

from allocations.elastic import selectors as elastic_selectors
from allocations.models import GpuPool, Team
from committee import selectors as committee_selectors
from committee import weeks
from core.errors import RoleRequired
from core.http import AuthenticatedHttpRequest
from core.parsers import parse_whole_number
from reports import charts as report_charts
from reports import pdf
from reports.dashboards import capacity, charts, costs, elastic, heatmap, monthly, overview, selectors, tco, teams
from reports.dashboards.forms import DashboardFilterForm, HeatmapSpanForm, TcoForm
from reports.dashboards.selectors import Table
from reports.dashboards.services import monthly_review_page_open
from reports.print_pieces import ChartSlot


def _require_committee(request: HttpRequest) -> None:
    if not committee_selectors.user_is_committee(user=request.user):
        raise RoleRequired(
            _("The monthly review and capacity planning are the committee's pages."),
            role=_("a seat on the committee"),
            elsewhere=[
                (_("The dashboards: four weeks of usage, open to everyone signed in"), reverse("reports:dashboards")),
                (_("Your team's windows"), reverse("allocations:windows")),
            ],
        )


FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: object) -> object:
    """A CSV cell: empty for no value; text a spreadsheet would run as a formula (a team named "=…") is quoted."""
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def csv_response(table: Table, *, filename: str) -> HttpResponse:
    """A table as CSV: one header row of column names, then the rows (numbers as numbers)."""
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    writer = csv.writer(response)
    writer.writerow([column.label for column in table.columns])
    for row in table.rows:
        writer.writerow([_cell(value) for value in row])
    return response


# The index shows the first rows of each chart's numbers (at 250 teams the per-team tables run to 1,000 rows and
# more); the CSV beside each has every row.
INDEX_TABLE_ROWS = 100


@login_required
@require_GET
def dashboards(request: AuthenticatedHttpRequest) -> HttpResponse:
    scope = selectors.dashboard_scope(viewer=request.user)
    form = DashboardFilterForm(request.GET or None, scope=scope, now=timezone.now())
    filters = form.filters()
    query = request.GET.urlencode()
    chart_list = [
        {
            "table": table,
            "figure": charts.figure_json(table),
            "rows": table.rows[:INDEX_TABLE_ROWS],
            "script_id": f"chart-{table.key}",
            "csv_url": reverse("reports:dashboard-csv", args=[table.key]) + (f"?{query}" if query else ""),
        }
        for table in overview.dashboard_tables(scope=scope, filters=filters)
    ]
    return render(
        request,
        "reports/dashboards/index.html",
        {"form": form, "filters": filters, "scope": scope, "charts": chart_list},
    )


@login_required
@require_GET
def dashboard_csv(request: AuthenticatedHttpRequest, key: str) -> HttpResponse:
    scope = selectors.dashboard_scope(viewer=request.user)
    if key not in overview.chart_keys_for(scope=scope):
        raise Http404(_("No such chart."))
    form = DashboardFilterForm(request.GET or None, scope=scope, now=timezone.now())
    if request.GET and not form.is_valid():
        return HttpResponseBadRequest(" ".join(str(e) for errors in form.errors.values() for e in errors))
    filters = form.filters()
    (table,) = overview.dashboard_tables(scope=scope, filters=filters, keys=[key])
    return csv_response(table, filename=f"docket-{key}-{filters.weeks[0]}-{filters.weeks[-1]}.csv")


def _monthly_args(request: HttpRequest) -> tuple[str, int]:
    now = timezone.now()
    months = monthly.month_list(now=now)
    month = request.GET.get("month") or (months[0] if months else monthly.month_label(timezone.localdate(now)))
    baseline = request.GET.get("baseline") or str(monthly.DEFAULT_BASELINE_MONTHS)
    months_back = parse_whole_number(baseline)
    if months_back is None:
        raise ValueError("baseline")
    return month, months_back


@login_required
@require_GET
def monthly_review(request: AuthenticatedHttpRequest) -> HttpResponse:
    _require_committee(request)
    now = timezone.now()
    try:
        month, baseline = _monthly_args(request)
        review = monthly.monthly_review(month=month, now=now, baseline_months=baseline)
    except ValueError:
        return HttpResponseBadRequest(_("Give the month as 2026-11 and the baseline as 1 to 12 months."))
    return render(
        request,
        "reports/dashboards/monthly.html",
        {
            "review": review,
            "months": monthly.month_list(now=now),
            "baseline": baseline,
            "page": monthly.monthly_review_page(month=month),
            "csv_url": reverse("reports:monthly-review-csv") + f"?month={month}&baseline={baseline}",
        },
    )


@login_required
@require_GET
def monthly_review_csv(request: AuthenticatedHttpRequest) -> HttpResponse:
    _require_committee(request)
    try:
        month, baseline = _monthly_args(request)
        review = monthly.monthly_review(month=month, now=timezone.now(), baseline_months=baseline)
    except ValueError:
        return HttpResponseBadRequest(_("Give the month as 2026-11 and the baseline as 1 to 12 months."))
    return csv_response(review.table(), filename=f"docket-monthly-review-{month}.csv")


@login_required
@require_POST
def monthly_review_open(request: AuthenticatedHttpRequest, month: str) -> HttpResponse:
    """A flag opens the archive page of the month's parameter review; the member goes on to write it there."""
    _require_committee(request)
    months_back = parse_whole_number(request.POST.get("baseline", ""))
    try:
        page = monthly_review_page_open(
            actor=request.user, month=month, now=timezone.now(),
            baseline_months=monthly.DEFAULT_BASELINE_MONTHS if months_back is None else months_back,
        )
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect(reverse("reports:monthly-review") + f"?month={month}")
    messages.success(request, _("Write the committee's parameter review below, then save."))
    return redirect("reports:page-edit", slug=page.slug)


# The forward calendar's span: a run may not reach further than grants.max_weeks (at most 12 by its bounds); a
# planner may look a little further.
FORWARD_MAX_WEEKS = 26


@login_required
@require_GET
def forward_calendar(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Every pool's weeks ahead: committed, reserved and free GPU-hours (anyone signed in: pool numbers only, the
    same selector as GET /api/v1/calendar/). `?weeks=` from 1 to 26, else the weeks a run filed now may span."""
    raw = request.GET.get("weeks")
    week_count = None
    if raw:
        week_count = parse_whole_number(raw, max_digits=2)
        if week_count is None or not 1 <= week_count <= FORWARD_MAX_WEEKS:
            return HttpResponseBadRequest(_("Give the weeks ahead as a number from 1 to %(most)d.")
                                          % {"most": FORWARD_MAX_WEEKS})
    calendar = committee_selectors.forward_calendar(now=timezone.now(), week_count=week_count)
    pools = [
        {"calendar": pool_calendar, "script_id": f"forward-{index}",
         "figure": charts.forward_calendar_figure(pool_calendar)}
        for index, pool_calendar in enumerate(calendar)
    ]
    first = calendar[0].weeks if calendar else ()
    return render(request, "reports/dashboards/forward.html", {
        "pools": pools, "first_week": first[0].week if first else None, "last_week": first[-1].week if first else None,
        "week_count": len(first), "max_weeks": FORWARD_MAX_WEEKS, "zone": weeks.committee_zone(),
    })


def _capacity_plan(request: HttpRequest) -> capacity.CapacityPlan:
    raw = request.GET.get("weeks") or str(capacity.DEFAULT_TRAILING_WEEKS)
    trailing_weeks = parse_whole_number(raw)
    if trailing_weeks is None:
        raise ValueError("weeks")
    return capacity.capacity_plan(now=timezone.now(), trailing_weeks=trailing_weeks)


def _capacity_context(plan: capacity.CapacityPlan) -> dict[str, Any]:
    return {
        "plan": plan,
        "table": plan.table(),
        "figure": charts.capacity_figure(plan),
        "generated_at": timezone.now(),
        "zone": weeks.committee_zone(),
    }


@login_required
@require_GET
def capacity_planning(request: AuthenticatedHttpRequest) -> HttpResponse:
    _require_committee(request)
    try:
        plan = _capacity_plan(request)
    except ValueError:
        return HttpResponseBadRequest(_("Give the trailing weeks as a number from 1 to 52."))
    query = f"?weeks={len(plan.weeks)}"
    context = _capacity_context(plan)
    context.update(
        csv_url=reverse("reports:capacity-planning-csv") + query,
        pdf_url=reverse("reports:capacity-planning-pdf") + query,
    )
    return render(request, "reports/dashboards/capacity.html", context)


@login_required
@require_GET
def capacity_planning_csv(request: AuthenticatedHttpRequest) -> HttpResponse:
    _require_committee(request)
    try:
        plan = _capacity_plan(request)
    except ValueError:
        return HttpResponseBadRequest(_("Give the trailing weeks as a number from 1 to 52."))
    return csv_response(plan.table(), filename=f"docket-capacity-planning-{plan.weeks[-1]}.csv")


@login_required
@require_GET
def capacity_planning_pdf(request: AuthenticatedHttpRequest) -> HttpResponse:
    """The capacity plan as a PDF: the weekly-demand chart (printed by Chromium) and the tables.

    WeasyPrint fetches nothing, as for the archive's PDFs; without Chromium the PDF says the chart is missing.
    """
    _require_committee(request)
    try:
        plan = _capacity_plan(request)
    except ValueError:
        return HttpResponseBadRequest(_("Give the trailing weeks as a number from 1 to 52."))
    context = _capacity_context(plan)
    figure = go.Figure(context["figure"]).update_layout(height=report_charts.CHART_HEIGHT)
    return _pdf_with_charts(
        request, "reports/dashboards/print/capacity.html", context,
        charts=[report_charts.Chart("capacity", str(_("Weekly demand per pool")), figure)],
        filename=f"docket-capacity-planning-{plan.weeks[-1]}.pdf",
    )


def _pdf_with_charts(request: HttpRequest, template: str, context: dict[str, Any], *,
                     charts: list[report_charts.Chart], filename: str) -> HttpResponse:
    """A dashboard's PDF to download: its print template, each chart printed into its slot (`chart_slots`), or
    why there are none (`charts_missing`)."""
    def render_html(slots: list[ChartSlot], missing: str) -> str:
        return render_to_string(template, {**context, "chart_slots": slots, "charts_missing": missing},
                                request=request)

    response = HttpResponse(pdf.document_pdf(charts=charts, render=render_html), content_type="application/pdf")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@login_required
@require_GET
def pool_elastic_history(request: AuthenticatedHttpRequest, cluster: str, pool: str) -> HttpResponse:
    """A pool's idle grants, promotions and night openings over time, each with its explanation (anyone signed in)."""
    found = GpuPool.objects.select_related("cluster").filter(cluster__slug=cluster, slug=pool).first()
    if found is None:
        raise Http404(_("No such pool"))
    actions = list(elastic_selectors.pool_elastic_history(pool=found))
    now = timezone.now()
    context = {
        "pool": found,
        "actions": actions,
        "in_force": [a for a in actions if a.ended_at is None],
        "figure": elastic.elastic_figure(actions, now=now) if actions else None,
        "pools": elastic_selectors.pool_list_with_elastic(),
        "agent_actions": elastic_selectors.agent_actions(pool=found),
    }
    return render(request, "reports/dashboards/elastic.html", context)


@login_required
@require_GET
def team_history(request: AuthenticatedHttpRequest, team: str) -> HttpResponse:
    """A team's weeks: asked, decided, placed, used, fair share, cost; a quarter a page (`?until=2026-W49`)."""
    team_obj = get_object_or_404(Team, slug=team)
    scope = selectors.dashboard_scope(viewer=request.user)
    if team_obj.pk not in scope.team_ids:
        raise RoleRequired(
            _("A team's history is open to its members and to the committee."),
            role=_("membership of %(team)s or a seat on the committee") % {"team": team_obj.name},
            elsewhere=[(_("Your teams' requests"), reverse("committee:portal")),
                       (_("The dashboards"), reverse("reports:dashboards"))],
        )
    now = timezone.now()
    until = request.GET.get("until") or weeks.next_week_label(now)
    try:
        weeks.parse_week(until)
    except ValueError:
        return HttpResponseBadRequest(_("Give the last week of the page as an ISO week, such as 2026-W49."))
    history = teams.team_history(team=team_obj, until=until, now=now)
    # Outcomes against forecasts (docs/outcomes.md): the team's record and every outcome it was asked for.
    record = committee_selectors.track_records(team_ids=[team_obj.pk], week=weeks.current_week_label(now),
                                               now=now)[team_obj.pk]
    return render(
        request,
        "reports/dashboards/team_history.html",
        {"history": history, "figure": teams.team_history_figure(history), "scope": scope,
         "currency": settings.DOCKET_COST_CURRENCY, "track_record": record,
         "outcomes": committee_selectors.team_outcomes(team=team_obj, now=now)},
    )


def _day_labels() -> list[str]:
    # Django's own weekday abbreviations: a catalogue entry of ours for "Fri" would also change every "D" date format.
    return [str(WEEKDAYS_ABBR[day]) for day in range(7)]


def _heatmap_context(request: HttpRequest) -> tuple[dict[str, Any], int]:
    """The span form and, when it is valid, the heatmap of every pool; the status to answer with."""
    now = timezone.now()
    form = HeatmapSpanForm(request.GET or None, now=now)
    if form.is_bound and not form.is_valid():
        return {"form": form}, 400
    result = heatmap.utilization_heatmap(span=form.span())
    labels = _day_labels()
    pools = [{"pool": pool, "script_id": f"heatmap-{index}", "figure": charts.heatmap_figure(pool, day_labels=labels)}
             for index, pool in enumerate(result.pools)]
    span = result.span
    return {"form": form, "heatmap": result, "pools": pools, "generated_at": now,
            "query": f"?last_week={span.last_week}&weeks={span.weeks}",
            "peak": {"start": f"{heatmap.PEAK_START_HOUR:02d}", "end": f"{heatmap.PEAK_END_HOUR:02d}",
                     "threshold": heatmap.PEAK_THRESHOLD_PCT}}, 200


@login_required
@require_GET
def utilization_heatmap(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Hour-of-week utilization of every pool over a span of weeks (anyone signed in: pool numbers only)."""
    context, status = _heatmap_context(request)
    for item in context.get("pools", []):
        item["figure"] = charts.as_json(item["figure"])
    return render(request, "reports/dashboards/heatmap.html", context, status=status)


@login_required
@require_GET
def utilization_heatmap_pdf(request: AuthenticatedHttpRequest) -> HttpResponse:
    context, status = _heatmap_context(request)
    if status != 200:
        return HttpResponseBadRequest(" ".join(str(e) for errors in context["form"].errors.values() for e in errors))
    figures = [
        report_charts.Chart(item["script_id"], f"{pool.key} ({pool.gpu_count}× {pool.gpu_model})", item["figure"])
        for item in context["pools"] for pool in [item["pool"]]
    ]
    span = context["heatmap"].span
    return _pdf_with_charts(request, "reports/dashboards/print/heatmap.html", context, charts=figures,
                            filename=f"docket-utilization-heatmap-{span.first_week}-{span.last_week}.pdf")


def _tco_context(request: HttpRequest) -> tuple[dict[str, Any], int]:
    """The calculator (its form, and the comparison when every field is valid) and the pools' measured costs."""
    now = timezone.now()
    span_form = HeatmapSpanForm(
        {k: request.GET[k] for k in ("last_week", "weeks") if k in request.GET} or None, now=now)
    calculator = TcoForm(request.GET if any(k in request.GET for k in TcoForm.base_fields) else None)
    status = 200
    context: dict[str, Any] = {"span_form": span_form, "form": calculator, "generated_at": now,
                               "currency": settings.DOCKET_COST_CURRENCY}
    if span_form.is_bound and not span_form.is_valid():
        status = 400
    else:
        measured = heatmap.utilization_heatmap(span=span_form.span())
        context.update(span=measured.span, pool_costs=costs.pool_cost_list(heatmap=measured))
    if calculator.is_bound and not calculator.is_valid():
        status = 400
    else:
        comparison = tco.compare(options=calculator.options(), scenario=calculator.scenario())
        context.update(comparison=comparison, figure=charts.tco_figure(comparison), rows=[
            {"cost": option, "versus_pct": comparison.versus_cheapest_pct(option),
             "cheapest": option is comparison.cheapest} for option in comparison.options
        ])
    context["query"] = "?" + request.GET.urlencode() if request.GET else ""
    return context, status


@login_required
@require_GET
def tco_calculator(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Cost per effective GPU-hour and queue-time cost per pool; the buy-vs-wait calculator (the committee's)."""
    _require_committee(request)
    context, status = _tco_context(request)
    if "figure" in context:
        context["figure"] = charts.as_json(context["figure"])
    return render(request, "reports/dashboards/tco.html", context, status=status)


@login_required
@require_GET
def tco_calculator_pdf(request: AuthenticatedHttpRequest) -> HttpResponse:
    _require_committee(request)
    context, status = _tco_context(request)
    if status != 200:
        forms_with_errors = [f for f in (context["span_form"], context["form"]) if f.is_bound and f.errors]
        return HttpResponseBadRequest(" ".join(
            str(e) for form in forms_with_errors for errors in form.errors.values() for e in errors))
    figure = context["figure"].update_layout(height=report_charts.CHART_HEIGHT)
    return _pdf_with_charts(
        request, "reports/dashboards/print/tco.html", context,
        charts=[report_charts.Chart("tco", str(_("Cumulative cost over the horizon")), figure)],
        filename="docket-tco.pdf",
    )
