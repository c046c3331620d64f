"""A month's statement of charges (the committee): the page, and the same lines as CSV and as PDF."""

from __future__ import annotations

import csv
from decimal import Decimal

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET

from allocations.models import Department
from committee import selectors as committee_selectors
from committee import weeks
from core.errors import RoleRequired
from core.http import AuthenticatedHttpRequest
from core.numbers import window_ref
from reports import pdf
from reports.dashboards.monthly import parse_month, shift_month
from reports.dashboards.views import _cell
from reports.statements.selectors import Statement, statement_for_month


def _statement(request: AuthenticatedHttpRequest, month: str) -> Statement:
    if not committee_selectors.user_is_committee(user=request.user):
        raise RoleRequired(_("The statements of charges are for committee members."), role=_("a seat on the committee"))
    try:
        parse_month(month)
    except ValueError:
        raise Http404(_("A month looks like 2026-12.")) from None
    slug = request.GET.get("department")
    department = None
    if slug:
        department = Department.objects.filter(slug=slug).first()
        if department is None:
            raise Http404(_("There is no such department."))
    return statement_for_month(month=month, department=department)


@login_required
@require_GET
def statement_page(request: AuthenticatedHttpRequest, month: str) -> HttpResponse:
    statement = _statement(request, month)
    context = {
        "statement": statement,
        "departments": list(Department.objects.order_by("name")),
        "previous_month": shift_month(month, -1),
        "next_month": shift_month(month, 1),
        "query": request.GET.urlencode(),
    }
    return render(request, "reports/statement.html", context)


@login_required
@require_GET
def statement_csv(request: AuthenticatedHttpRequest, month: str) -> HttpResponse:
    """The statement's lines as CSV, one row a window: its charge column adds up to the page's total; `budget_line`
    says which line of the department's budget it charges ("plans", "buffer" for an emergency's, "" for no
    department)."""
    statement = _statement(request, month)
    suffix = f"-{statement.department.slug}" if statement.department else ""
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="statement-{month}{suffix}.csv"'
    writer = csv.writer(response)
    writer.writerow(["window", "week", "department", "team", "pool", "tier", "gpus", "start", "end", "gpu_hours",
                     "price_per_gpu_hour", "discount_pct", "lent_gpu_hours", "credit", "charge", "used_gpu_hours",
                     "budget_line"])
    for line in statement.lines:
        writer.writerow([_cell(v) for v in (
            window_ref(line.window_id), line.week, line.department, line.team, line.pool, line.tier, line.gpu_count,
            line.start.isoformat(), line.end.isoformat(), line.gpu_hours.quantize(Decimal("0.01")),
            line.price_per_gpu_hour, line.discount_pct if line.tier == "preemptible" else 0, line.lent_gpu_hours,
            line.credit, line.charge, line.used_gpu_hours, line.budget_line)])
    return response


@login_required
@require_GET
def statement_pdf(request: AuthenticatedHttpRequest, month: str) -> HttpResponse:
    """The statement as a PDF (WeasyPrint, fetching nothing; the windows' links are absolute to this site): the same
    lines and totals as the page."""
    statement = _statement(request, month)
    context = {
        "statement": statement, "generated_at": timezone.now(), "zone": weeks.committee_zone(),
        "site": request.build_absolute_uri("/").rstrip("/"),
    }
    html = render_to_string("reports/print/statement.html", context, request=request)
    suffix = f"-{statement.department.slug}" if statement.department else ""
    response = HttpResponse(pdf.html_to_pdf(html=html), content_type="application/pdf")
    response["Content-Disposition"] = f'attachment; filename="statement-{month}{suffix}.pdf"'
    return response
