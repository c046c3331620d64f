"""The weekly clock's state for the chair: what each job owes now, what is overdue, what ran last."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from committee import selectors
from committee.views.review import require_chair
from core.http import AuthenticatedHttpRequest


@login_required
@require_GET
def clock_status(request: AuthenticatedHttpRequest) -> HttpResponse:
    require_chair(request)
    status = selectors.clock_status()
    return render(request, "committee/clock.html", {"status": status, "overdue_after": selectors.clock_overdue_after()})
