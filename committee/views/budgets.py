"""Departments' budgets this quarter (the committee); setting one (the finance member)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.utils.translation import gettext as _

from committee import selectors, services
from committee.forms import DepartmentBudgetForm
from committee.quarters import parse_quarter, quarter_of, shift_quarter
from committee.views.review import require_committee
from core.errors import form_errors_add
from core.http import AuthenticatedHttpRequest


@login_required
def budgets_page(request: AuthenticatedHttpRequest) -> HttpResponse:
    require_committee(request, refusal=_("The departments' budgets are for committee members."))
    current = quarter_of(timezone.now())
    raw = request.GET.get("quarter")
    try:
        year, n = parse_quarter(raw) if raw is not None else parse_quarter(current)
    except ValueError:
        year, n = parse_quarter(current)
    quarter = f"{year:04d}-Q{n}"
    may_set = selectors.user_is_finance(user=request.user)
    form = DepartmentBudgetForm(request.POST or None, initial={"quarter": current})
    if request.method == "POST":
        if not may_set:
            raise PermissionDenied(_("Only the finance member sets the departments' budgets."))
        if form.is_valid():
            data = form.cleaned_data
            try:
                change = services.department_budget_set(
                    actor=request.user, department=data["department"], quarter=data["quarter"].strip().upper(),
                    quarterly=data["quarterly"], carry_over_pct=data["carry_over_pct"], reason=data["reason"])
            except ValidationError as exc:
                form_errors_add(form, exc)
            else:
                messages.success(request, _("Budget saved as policy version %(n)d.") % {"n": change.number})
                return redirect(f"{request.path}?quarter={data['quarter'].strip().upper()}")
    budgets = selectors.department_budgets(quarter=quarter)
    context = {
        "quarter": quarter,
        "this_month": timezone.localdate().strftime("%Y-%m"),
        "previous_quarter": shift_quarter(quarter, -1),
        "next_quarter": shift_quarter(quarter, 1),
        "budgets": budgets,
        "buffer_pct": selectors.budget_buffer_pct(quarter=quarter),
        "form": form if may_set else None,
    }
    return render(request, "committee/budgets.html", context, status=400 if request.method == "POST" else 200)
