"""The executive summary of a month (page and PDF) and the capacity buffer fund's ledger.

Anyone signed in reads both; the chair and the finance seat record the fund's entries. Views parse,
call one service or selector, render.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from committee import selectors as committee_selectors
from committee import weeks
from core.errors import RoleRequired, form_errors_add
from core.http import AuthenticatedHttpRequest
from reports import pdf
from reports.dashboards import monthly
from reports.executive import departments, quarters, selectors, services
from reports.executive.forms import BufferFundOpenForm, BufferSpendForm, DeferredPurchaseForm

# --- the executive summary ---------------------------------------------------------------------------


def _summary(month: str) -> selectors.ExecutiveSummary:
    try:
        return selectors.executive_summary(month=month, now=timezone.now())
    except ValueError:
        raise Http404(_("There is no executive summary for “%(month)s”: give a month that has begun, as 2026-11.")
                      % {"month": month}) from None


def _summary_context(request: AuthenticatedHttpRequest, summary: selectors.ExecutiveSummary) -> dict[str, Any]:
    reach = selectors.calendar_reach(now=timezone.now())
    previous_month, next_month = monthly.shift_month(summary.month, -1), monthly.shift_month(summary.month, 1)
    month_start, month_end = monthly.month_bounds(summary.month)
    return {
        "summary": summary,
        # Outcomes against forecasts (docs/outcomes.md): the grants that ended in the month, by forecast unit.
        "realized": committee_selectors.realized_per_gpu_hour(since=month_start, until=month_end),
        "departments": departments.department_quarters(quarter=summary.quarter, now=timezone.now()),
        "is_committee": committee_selectors.user_is_committee(user=request.user),
        "previous_month": previous_month if reach.has_month(previous_month) else None,
        "next_month": next_month if reach.has_month(next_month) and not summary.to_date else None,
        "monthly_url": reverse("reports:monthly-review") + f"?month={summary.month}",
        "fund_url": reverse("reports:buffer-fund", args=[summary.quarter]),
        "generated_at": timezone.now(),
        "zone": weeks.committee_zone(),
    }


@login_required
@require_GET
def executive(request: AuthenticatedHttpRequest) -> HttpResponse:
    return redirect("reports:executive-summary", month=selectors.executive_month_default(now=timezone.now()))


@login_required
@require_GET
def executive_summary(request: AuthenticatedHttpRequest, month: str) -> HttpResponse:
    summary = _summary(month)
    context = _summary_context(request, summary)
    context["pdf_url"] = reverse("reports:executive-summary-pdf", args=[month])
    return render(request, "reports/executive/summary.html", context)


@login_required
@require_GET
def executive_summary_pdf(request: AuthenticatedHttpRequest, month: str) -> HttpResponse:
    """The month's summary as a PDF (WeasyPrint, fetching nothing; links are absolute to this site)."""
    summary = _summary(month)
    context = _summary_context(request, summary)
    context["site"] = request.build_absolute_uri("/").rstrip("/")
    html = render_to_string("reports/executive/print/summary.html", context, request=request)
    response = HttpResponse(pdf.html_to_pdf(html=html), content_type="application/pdf")
    response["Content-Disposition"] = f'attachment; filename="docket-executive-summary-{summary.month}.pdf"'
    return response


# --- the buffer fund ---------------------------------------------------------------------------------


def _quarter(quarter: str) -> str:
    try:
        quarters.parse_quarter(quarter)
    except ValueError:
        raise Http404(_("A quarter looks like 2026-Q4.")) from None
    return quarter


def _require_recorder(request: AuthenticatedHttpRequest) -> None:
    if not selectors.buffer_fund_can_record(user=request.user, now=timezone.now()):
        raise RoleRequired(
            _("Only the chair or the finance seat records the buffer fund."),
            role=_("the chair's or the finance seat"),
            elsewhere=[(_("The buffer fund's ledger"), reverse("reports:buffer-funds"))],
        )


@login_required
@require_GET
def buffer_funds(request: AuthenticatedHttpRequest) -> HttpResponse:
    return redirect("reports:buffer-fund", quarter=quarters.quarter_of(timezone.now()))


def _fund_page(request: AuthenticatedHttpRequest, quarter: str, *, status: int = 200,
               **forms: Any) -> HttpResponse:
    fund = selectors.buffer_fund_get(quarter=quarter)
    can_record = selectors.buffer_fund_can_record(user=request.user, now=timezone.now())
    emergencies = selectors.emergency_choices(quarter=quarter)
    reach = selectors.calendar_reach(now=timezone.now())
    previous_quarter, next_quarter = quarters.shift_quarter(quarter, -1), quarters.shift_quarter(quarter, 1)
    # The chair and the finance seat may go one quarter past the last, to open its fund.
    can_open_next = can_record and quarter == reach.last_quarter
    context: dict[str, Any] = {
        "quarter": quarter,
        "months": [(month, reach.has_month(month)) for month in quarters.quarter_months(quarter)],
        "previous_quarter": previous_quarter if reach.has_quarter(previous_quarter) else None,
        "next_quarter": next_quarter if reach.has_quarter(next_quarter) or can_open_next else None,
        "state": selectors.fund_state(fund) if fund is not None else None,
        "spends": selectors.buffer_spend_list(fund=fund) if fund is not None else [],
        "deferred": selectors.deferred_purchase_list(fund=fund) if fund is not None else [],
        "funds": selectors.buffer_fund_list(),
        "can_record": can_record,
        # The departments' budgets page is the committee's; the policy lab is anyone signed in's.
        "budgets_url": (reverse("committee:budgets") + f"?quarter={quarter}"
                        if committee_selectors.user_is_committee(user=request.user) else None),
        "zone": weeks.committee_zone(),
    }
    if can_record:
        context["open_form"] = forms.get("open_form") or BufferFundOpenForm()
        context["spend_form"] = forms.get("spend_form") or BufferSpendForm(emergencies=emergencies)
        context["deferred_form"] = forms.get("deferred_form") or DeferredPurchaseForm()
    return render(request, "reports/executive/buffer.html", context, status=status)


@login_required
@require_GET
def buffer_fund(request: AuthenticatedHttpRequest, quarter: str) -> HttpResponse:
    return _fund_page(request, _quarter(quarter))


@login_required
@require_POST
def buffer_fund_open(request: AuthenticatedHttpRequest, quarter: str) -> HttpResponse:
    quarter = _quarter(quarter)
    _require_recorder(request)
    form = BufferFundOpenForm(request.POST)
    if form.is_valid():
        try:
            services.buffer_fund_open(actor=request.user, quarter=quarter, now=timezone.now())
        except (ValidationError, PermissionDenied) as exc:
            _add_error(form, exc)
        else:
            messages.success(request, _("The fund of %(quarter)s is open.") % {"quarter": quarter})
            return redirect("reports:buffer-fund", quarter=quarter)
    return _fund_page(request, quarter, status=400, open_form=form)


def _add_error(form: Any, exc: Exception) -> None:
    if isinstance(exc, ValidationError):
        form_errors_add(form, exc)
    else:
        form.add_error(None, str(exc))


def _fund_or_404(quarter: str) -> Any:
    fund = selectors.buffer_fund_get(quarter=quarter)
    if fund is None:
        raise Http404(_("The fund of %(quarter)s is not open yet.") % {"quarter": quarter})
    return fund


@login_required
@require_POST
def buffer_spend_create(request: AuthenticatedHttpRequest, quarter: str) -> HttpResponse:
    quarter = _quarter(quarter)
    _require_recorder(request)
    fund = _fund_or_404(quarter)
    form = BufferSpendForm(request.POST, emergencies=selectors.emergency_choices(quarter=quarter))
    if form.is_valid():
        data = form.cleaned_data
        try:
            services.buffer_spend_record(
                actor=request.user, fund=fund, amount=data["amount"], item=data["item"], spent_at=data["spent_at"],
                reason=data["reason"], emergency=data["emergency"], now=timezone.now(),
            )
        except ValidationError as exc:
            _add_error(form, exc)
        else:
            messages.success(request, _("The spend is recorded."))
            return redirect("reports:buffer-fund", quarter=quarter)
    return _fund_page(request, quarter, status=400, spend_form=form)


@login_required
@require_POST
def deferred_purchase_create(request: AuthenticatedHttpRequest, quarter: str) -> HttpResponse:
    quarter = _quarter(quarter)
    _require_recorder(request)
    fund = _fund_or_404(quarter)
    form = DeferredPurchaseForm(request.POST)
    if form.is_valid():
        data = form.cleaned_data
        try:
            services.purchase_deferred_record(
                actor=request.user, fund=fund, amount=data["amount"], item=data["item"],
                deferred_at=data["deferred_at"], reason=data["reason"], now=timezone.now(),
            )
        except ValidationError as exc:
            _add_error(form, exc)
        else:
            messages.success(request, _("The deferred purchase is recorded."))
            return redirect("reports:buffer-fund", quarter=quarter)
    return _fund_page(request, quarter, status=400, deferred_form=form)
