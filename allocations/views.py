"""Pages of the allocations app: the published plan of a week, window by window."""

from __future__ import annotations

import re
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _

from allocations import selectors
from allocations.elastic import selectors as elastic_selectors
from allocations.forms import org_filter
from core.http import AuthenticatedHttpRequest
from core.isoweek import is_iso_week

VERSION_RE = re.compile(r"[0-9]{1,10}")
MAX_VERSION = 2**31 - 1  # the column's range: a larger number is no version, not a database error
# Windows a page of /windows/ shows: a week of 1,000 grants is ten pages, each as fast as a small week's.
WINDOWS_PER_PAGE = 100


@login_required
def window_list(request: AuthenticatedHttpRequest) -> HttpResponse:
    """A week's plan (the current version unless ?version= names another) with each window's sync status,
    WINDOWS_PER_PAGE windows a page (`?page=`), in the plan's order (cluster, pool, start); `?department=` and
    `?team=` (slugs) narrow it to a department's teams, to one team (an unknown one: the error, every window)."""
    week = request.GET.get("week") or selectors.plan_week_current()
    version_param = request.GET.get("version")
    if week is not None and not is_iso_week(week):
        raise Http404(_("No such week"))
    if version_param is not None and not (VERSION_RE.fullmatch(version_param) and int(version_param) <= MAX_VERSION):
        raise Http404(_("No such version"))
    plan = selectors.plan_for_week(week=week, version=int(version_param) if version_param else None) if week else None
    if plan is None and (version_param or request.GET.get("week")):
        raise Http404(_("No plan published for that week"))
    org = org_filter(request.GET)
    department, team = org.chosen()
    context: dict[str, object] = {"week": week, "plan": plan, "weeks": selectors.plan_week_list(), "org_form": org,
                                  "org_query": urlencode(org.query())}
    if plan is not None:
        current = selectors.plan_for_week(week=plan.week)
        explanations = list(plan.explanations.all())
        page_obj = Paginator(selectors.plan_window_list(plan=plan, department=department, team=team),
                             WINDOWS_PER_PAGE).get_page(request.GET.get("page"))
        windows = list(page_obj)
        idle = elastic_selectors.idle_grants(window_ids=[w.pk for w in windows])
        kept = {**{key: request.GET[key] for key in ("week", "version") if request.GET.get(key)}, **org.query()}
        shortened = [e for e in explanations if e.placed and e.shortened]
        not_placed = [e for e in explanations if not e.placed]
        hidden_not_placed = 0
        if department is not None or team is not None:
            # A shortened grant has windows to filter by; one not placed has none (its team is the committee's to
            # know): counted, and shown without the filter.
            refs = set(selectors.plan_window_list(plan=plan, department=department, team=team)
                       .values_list("request_ref", flat=True))
            shortened = [e for e in shortened if e.request_ref in refs]
            hidden_not_placed, not_placed = len(not_placed), []
        context.update(
            {
                "windows": windows,
                "page_obj": page_obj,
                "pager_query": urlencode(kept),
                "idle_grants": idle,
                "idle_window_ids": {action.window_id for action in idle},
                "withdrawn": list(selectors.plan_withdrawn_list(plan=plan, department=department, team=team)),
                "not_placed": not_placed,
                "hidden_not_placed": hidden_not_placed,
                "shortened": shortened,
                "current": current,
                "is_current": current is not None and current.pk == plan.pk,
                "versions": range(current.version, 0, -1) if current else [],
            }
        )
    return render(request, "allocations/window_list.html", context)
