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
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST
from plotly import graph_objects as go

from allocations.elastic import selectors as elastic_selectors
from allocations.models import GpuPool, Team
from committee import selectors as committee_selectors
from committee import weeks
from core.errors import RoleRequired
from core.http import AuthenticatedHttpRequest
from reports import charts as report_charts
from reports import pdf
from reports.dashboards import capacity, charts, elastic, monthly, selectors, teams
from reports.dashboards.forms import DashboardFilterForm
from reports.dashboards.selectors import Table
from reports.dashboards.services import monthly_review_page_open


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
            "script_id": f"chart-{table.key}",
            "csv_url": reverse("reports:dashboard-csv", args=[table.key]) + (f"?{query}" if query else ""),
        }
        for table in selectors.dashboard_tables(scope=scope, filters=filters)
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
    if key not in selectors.chart_keys_for(scope=scope):
        raise Http404(_("No such chart."))
    form = DashboardFilterForm(request.GET or None, scope=scope, now=timezone.now())
    if request.GET and not form.is_valid():
        return HttpResponseBadRequest(" ".join(str(e) for errors in form.errors.values() for e in errors))
    filters = form.filters()
    (table,) = selectors.dashboard_tables(scope=scope, filters=filters, keys=[key])
    return csv_response(table, filename=f"docket-{key}-{filters.weeks[0]}-{filters.weeks[-1]}.csv")


def _monthly_args(request: HttpRequest) -> tuple[str, int]:
    now = timezone.now()
    months = monthly.month_list(now=now)
    month = request.GET.get("month") or (months[0] if months else monthly.month_label(timezone.localdate(now)))
    baseline = request.GET.get("baseline") or str(monthly.DEFAULT_BASELINE_MONTHS)
    if not baseline.isdigit():
        raise ValueError("baseline")
    return month, int(baseline)


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
    baseline = request.POST.get("baseline", "")
    try:
        page = monthly_review_page_open(
            actor=request.user, month=month, now=timezone.now(),
            baseline_months=int(baseline) if baseline.isdigit() else monthly.DEFAULT_BASELINE_MONTHS,
        )
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect(reverse("reports:monthly-review") + f"?month={month}")
    messages.success(request, _("Write the committee's parameter review below, then save."))
    return redirect("reports:page-edit", slug=page.slug)


def _capacity_plan(request: HttpRequest) -> capacity.CapacityPlan:
    raw = request.GET.get("weeks") or str(capacity.DEFAULT_TRAILING_WEEKS)
    if not raw.isdigit():
        raise ValueError("weeks")
    return capacity.capacity_plan(now=timezone.now(), trailing_weeks=int(raw))


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
    """The capacity plan as a PDF: the weekly-demand chart (SVG drawn by kaleido) and the tables.

    WeasyPrint fetches nothing, as for the archive's PDFs; without Chromium the PDF says the chart is missing.
    """
    _require_committee(request)
    try:
        plan = _capacity_plan(request)
    except ValueError:
        return HttpResponseBadRequest(_("Give the trailing weeks as a number from 1 to 52."))
    context = _capacity_context(plan)
    figure = go.Figure(context["figure"]).update_layout(height=report_charts.CHART_HEIGHT)
    context["chart_images"], context["charts_missing"] = pdf.chart_images(
        [report_charts.Chart("capacity", str(_("Weekly demand per pool")), figure)]
    )
    html = render_to_string("reports/dashboards/print/capacity.html", context, request=request)
    response = HttpResponse(pdf.html_to_pdf(html=html), content_type="application/pdf")
    response["Content-Disposition"] = f'attachment; filename="docket-capacity-planning-{plan.weeks[-1]}.pdf"'
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
    return render(
        request,
        "reports/dashboards/team_history.html",
        {"history": history, "figure": teams.team_history_figure(history), "scope": scope,
         "currency": settings.DOCKET_COST_CURRENCY},
    )
