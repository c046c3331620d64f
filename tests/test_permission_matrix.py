"""The permission matrix: every URL pattern × every role × each method it accepts → the expected status.

The table below is the specification. `test_every_url_pattern_has_a_row` walks the URL
configuration, so a new URL without a row fails here: no endpoint ships untested. Each row
points at real objects of one populated Docket (tests/security_world.py, built once for the
module); every case runs in its own savepoint, so writes that succeed change nothing for the
next case.

Roles, in the order of each row's status string:

    anon  team_a  team_b  committee  chair  sched_a  sched_b

Pages are visited with a session (people signed in) and APIs with personal tokens; scheduler
tokens are sent as `Authorization: Bearer` everywhere, so the rows also show that a scheduler
token opens no page and no person's endpoint. Object-level rows name the object in their label
(team B reading team A's request → 404, scheduler B reading cluster A's windows → 404).
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from itertools import cycle
from types import SimpleNamespace
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from django.core.cache import cache
from django.db import transaction
from django.urls import URLPattern, URLResolver, get_resolver, resolve
from django.utils import timezone, translation

from allocations.models import AllocationPlan
from committee.models import GpuRequest, Score
from policy import selectors as policy_selectors
from reports.selectors import revision_latest
from tests.clock import FIXED_NOW
from tests.conftest import empty_process_cache
from tests.security_world import ROLES, client_for
from tests.security_world import estate as build_estate

Kwargs = Callable[[SimpleNamespace], dict[str, Any]]


@dataclass(frozen=True)
class Row:
    route: str
    label: str
    methods: dict[str, str]  # method → seven statuses, one per role (ROLES order)
    kwargs: Kwargs = field(default=lambda e: {})
    query: Kwargs = field(default=lambda e: {})
    body: Kwargs = field(default=lambda e: {})

    @property
    def api(self) -> bool:
        return self.route.startswith("api/")

    def path(self, estate: SimpleNamespace) -> str:
        values = self.kwargs(estate)
        return "/" + re.sub(r"<(?:\w+:)?(\w+)>", lambda m: str(values[str(m.group(1))]), self.route)


# --- bodies ---------------------------------------------------------------------------------------


def _local(value: Any) -> str:
    return timezone.localtime(value).strftime("%Y-%m-%dT%H:%M")


def request_form(e: SimpleNamespace, *, team: Any, pool: Any, title: str = "Matrix request") -> dict[str, Any]:
    """The portal's request form, filled in validly for the open cycle."""
    start = e.open.starts_at + timedelta(hours=8)
    return {
        "team": team.pk, "title": title, "pool": pool.pk, "gpu_count": "8", "min_gpu_count": "4",
        "duration_hours": "24", "earliest_start": _local(start), "latest_end": _local(start + timedelta(hours=96)),
        "baseline_gpu_hours": "", "deadline": "", "slip_consequence": "",
        "usage-gpu_hours_granted": "100", "usage-gpu_hours_used": "80", "usage-mean_utilization_pct": "80",
        "usage-notes": "", "forecast-kind": "revenue", "forecast-estimated_value": "1000",
        "forecast-value_unit": "USD/week", "forecast-confidence": "medium", "forecast-narrative": "Lift.",
        "alt-TOTAL_FORMS": "0", "alt-INITIAL_FORMS": "0", "alt-MIN_NUM_FORMS": "0", "alt-MAX_NUM_FORMS": "20",
    }


def request_json(e: SimpleNamespace, *, pool: Any, title: str = "Matrix request") -> dict[str, Any]:
    """The API's request body, valid for the open cycle."""
    start = e.open.starts_at + timedelta(hours=8)
    return {
        "pool": pool.pk, "title": title, "gpu_count": 8, "min_gpu_count": 4, "duration_hours": 24,
        "earliest_start": start.isoformat(), "latest_end": (start + timedelta(hours=96)).isoformat(),
        "preemptible_ok": False, "baseline_gpu_hours": None, "deadline": None, "slip_consequence": "",
        "usage_report": {"gpu_hours_granted": "100", "gpu_hours_used": "80", "mean_utilization_pct": "80",
                         "notes": ""},
        "impact_forecast": {"kind": "revenue", "estimated_value": "1000", "value_unit": "USD/week",
                            "confidence": "medium", "narrative": "Lift."},
        "alternatives": [],
    }


WEIGHTS = {"business_impact": 40, "feasibility": 30, "urgency": 20, "fairness": 10}
GUIDANCE = {f"{c}_guidance": f"Guidance for {c}." for c in WEIGHTS}


def usage_json(e: SimpleNamespace) -> dict[str, Any]:
    end = timezone.now() - timedelta(hours=1)
    return {"team": "team-a", "pool": "a100", "window": None, "period_start": (end - timedelta(hours=2)).isoformat(),
            "period_end": end.isoformat(), "gpu_hours_used": "10.00", "mean_utilization_pct": "80.0",
            "idempotency_key": "matrix-1"}


def agent_action_json(e: SimpleNamespace) -> dict[str, Any]:
    return {"idempotency_key": "matrix-lend-1", "kind": "lend", "pool": "a100", "window": e.window_a.pk, "gpus": 6,
            "acted_at": (timezone.now() - timedelta(minutes=1)).isoformat(), "utilization_pct": "12.0",
            "span_minutes": 5, "measured_by": "prometheus", "policy_version": 1,
            "applied": "sacctmgr -i modify qos where name=scavenger set GrpTRES=gres/gpu=6"}


def sync_json(e: SimpleNamespace) -> dict[str, Any]:
    return {"statuses": [{"window": e.window_a.pk, "state": "in_sync", "nodes_requested": 2, "nodes_reserved": 2}]}


def page_edit(e: SimpleNamespace, *, stale: bool = False) -> dict[str, Any]:
    base = e.charter.revisions.order_by("number").first() if stale else revision_latest(page=e.charter)
    return {"title": "Charter", "body": "# Charter\n\nEdited by the matrix.", "summary": "Matrix edit",
            "base_revision_id": base.pk}


# --- the table ------------------------------------------------------------------------------------

#       roles:  anon team_a team_b committee chair sched_a sched_b
ALL_302 = "302 302 302 302 302 302 302"
SIGNED_IN = "302 200 200 200 200 302 302"  # a page anyone signed in reads
EDITORS = "302 403 403 200 200 302 302"  # a page for committee members
CHAIR = "302 403 403 403 200 302 302"  # a page for the chair
API_PEOPLE = "401 200 200 200 200 403 403"  # an API anyone signed in reads; schedulers are not people
SCHEDULERS_ONLY_A = "401 401 401 401 401 200 404"  # cluster A's scheduler; B is told there is no such cluster

week = {
    "open": lambda e: {"week": e.open.week},
    "review": lambda e: {"week": e.review.week},
    "published": lambda e: {"week": e.published.week},
}


def pk(name: str) -> Kwargs:
    return lambda e: {"pk": getattr(e, name).pk}


def page(slug_of: str, number: int | None = None) -> Kwargs:
    def kwargs(e: SimpleNamespace) -> dict[str, Any]:
        values: dict[str, Any] = {"slug": getattr(e, slug_of).slug}
        if number is not None:
            values["number"] = number
        return values

    return kwargs


TABLE: list[Row] = [
    # Sign-in and the home page.
    Row("", "home redirects", {"GET": ALL_302}),
    Row("favicon.ico", "the icon's address, for anyone", {"GET": "301 301 301 301 301 301 301",
                                                            "HEAD": "301 301 301 301 301 301 301"}),
    Row("accounts/login/", "sign-in form and sign-in", {"GET": "200 200 200 200 200 200 200", "POST": ALL_302},
        body=lambda e: {"username": "member_a", "password": "pw"}),
    Row("accounts/logout/", "sign-out is a POST", {"GET": "405 405 405 405 405 405 405", "POST": ALL_302}),
    # The footer's language switch: anyone, signed in or not, picks a language and goes back to the page (next).
    Row("i18n/setlang/", "anyone picks a language", {"GET": ALL_302, "POST": ALL_302},
        body=lambda e: {"language": "zh-hans", "next": "/archive/"}, query=lambda e: {"next": "/archive/"}),
    # OpenID Connect (sso/): not configured here, so there is nothing to start or answer (tests/sso/ configure it).
    Row("oidc/authenticate/", "single sign-on off: not found", {"GET": "404 404 404 404 404 404 404",
                                                               "POST": "405 405 405 405 405 405 405"}),
    Row("oidc/callback/", "single sign-on off: not found", {"GET": "404 404 404 404 404 404 404",
                                                           "POST": "405 405 405 405 405 405 405"},
        query=lambda e: {"code": "x", "state": "y"}),
    Row("profile/", "own notification settings", {"GET": SIGNED_IN, "POST": "302 302 302 302 302 302 302"}),
    Row("inbox/", "one's own notifications", {"GET": SIGNED_IN, "POST": "302 405 405 405 405 302 302"}),
    Row("inbox/read/", "mark one's own notifications read: a POST of someone signed in",
        {"GET": "302 405 405 405 405 302 302", "POST": ALL_302}, body=lambda e: {"up_to": "999999"}),
    Row("profile/tokens/revoke-all/", "revoke one's own API tokens: a POST of someone signed in",
        {"GET": "302 405 405 405 405 302 302", "POST": ALL_302}),
    # The team portal.
    Row("requests/", "my teams' requests", {"GET": SIGNED_IN}),
    Row("requests/new/", "file for team B on a100: team A may not choose team B; no team, no form",
        {"GET": "302 200 200 403 403 302 302", "POST": "302 400 302 403 403 302 302"},
        body=lambda e: request_form(e, team=e.world.team_b, pool=e.world.a100)),
    Row("requests/new/usage/", "team A's measured usage on a100 for the form: only team A's members read it",
        {"GET": "302 200 400 400 400 302 302", "POST": "302 405 405 405 405 302 302"},
        query=lambda e: {"team": e.world.team_a.pk, "pool": e.world.a100.pk}),
    Row("requests/new/hint/", "the forward calendar's hint for the form: pool numbers, for anyone signed in",
        {"GET": SIGNED_IN, "POST": "302 405 405 405 405 302 302"},
        query=lambda e: {"pool": e.world.a100.pk, "gpu_count": "8"}),
    Row("requests/<int:pk>/", "team A's draft: team B gets 404, the committee reads it",
        {"GET": "302 200 404 200 200 302 302"}, kwargs=pk("draft_a")),
    Row("requests/<int:pk>/", "team B's draft: team A gets 404",
        {"GET": "302 404 200 200 200 302 302"}, kwargs=pk("draft_b")),
    Row("requests/<int:pk>/edit/", "team A's draft: only team A edits; the committee does not",
        {"GET": "302 200 404 404 404 302 302", "POST": "302 302 404 404 404 302 302"}, kwargs=pk("draft_a"),
        body=lambda e: {k: v for k, v in request_form(e, team=e.world.team_a, pool=e.world.a100).items()
                        if k != "team"}),
    Row("requests/<int:pk>/submit/", "team A's draft", {"POST": "302 302 404 404 404 302 302"},
        kwargs=pk("draft_a")),
    Row("requests/<int:pk>/withdraw/", "team A's submitted request: the confirmation page, then the withdrawal",
        {"GET": "302 200 404 404 404 302 302", "POST": "302 302 404 404 404 302 302"},
        kwargs=pk("submitted_a"), body=lambda e: {"confirm": "yes"}),
    Row("requests/<int:pk>/carry/", "team A's draft (not deferred: refused with a message); others get 404",
        {"POST": "302 302 404 404 404 302 302"}, kwargs=pk("draft_a")),
    Row("requests/<int:pk>/run/explain/", "team A's draft (no run: refused with a message); others get 404",
        {"POST": "302 302 404 404 404 302 302"}, kwargs=pk("draft_a"),
        body=lambda e: {"week": e.open.week, "reason": "The loader stalled."}),
    Row("requests/<int:pk>/return/", "team A's draft: only a lead of team A sends it back (team A's member: 403)",
        {"POST": "302 403 404 404 404 302 302"}, kwargs=pk("draft_a"), body=lambda e: {"note": "Add the baseline."}),
    Row("teams/<slug:slug>/filing/", "team A's filing setting: only a lead of team A changes it",
        {"POST": "302 403 403 403 403 302 302"}, kwargs=lambda e: {"slug": e.world.team_a.slug},
        body=lambda e: {"lead_submits": "on"}),
    # Emergency requests: a team files; the committee (not of the team) approves; the chair reviews after the fact.
    Row("emergencies/", "anyone signed in: the committee sees all, a team its own", {"GET": SIGNED_IN}),
    Row("emergencies/new/", "team A files for itself; anyone else's choice of team A is refused",
        {"GET": SIGNED_IN, "POST": "302 302 400 400 400 302 302"},
        body=lambda e: {"team": e.world.team_a.pk, "pool": e.world.a100.pk, "title": "Matrix emergency",
                        "gpu_count": "4", "duration_hours": "2", "justification": "Now."}),
    Row("emergencies/<int:pk>/", "team A's emergency: team B gets 404", {"GET": "302 200 404 200 200 302 302"},
        kwargs=pk("emergency_a")),
    Row("emergencies/<int:pk>/decide/", "team A's emergency: the committee approves, its own team may not",
        {"POST": "302 403 404 302 302 302 302"}, kwargs=pk("emergency_a"),
        body=lambda e: {"verdict": "approve", "note": ""}),
    Row("emergencies/<int:pk>/review/", "team A's emergency: only the chair records the review's decision",
        {"POST": "302 403 404 403 302 302 302"}, kwargs=pk("emergency_a"),
        body=lambda e: {"outcome": "endorsed", "note": ""}),
    # The fast lane: a team member files; the chair revokes a grant at the review (docs/fast-lane.md).
    Row("fast-lane/new/", "a team member files for their team; anyone else's choice of team A is refused",
        {"GET": "302 200 200 403 403 302 302", "POST": "302 302 400 403 403 302 302"},
        body=lambda e: {"team": e.world.team_a.pk, "pool": e.world.a100.pk, "title": "Matrix fast lane",
                        "gpu_count": "2", "duration_hours": "2"}),
    Row("fast-lane/<int:pk>/revoke/", "team A's fast-lane request: only the chair revokes, team B gets 404",
        {"POST": "302 403 404 403 302 302 302"}, kwargs=pk("fast_lane_a"), body=lambda e: {"reason": "Too big."}),
    # The weekly review (committee) and the chair's actions.
    Row("review/", "redirects the committee to the week in review", {"GET": "302 403 403 302 302 302 302"}),
    Row("review/<week:week>/", "the week in review", {"GET": EDITORS}, kwargs=week["review"]),
    Row("review/<week:week>/ranking/", "the week in review: the ranking a save asks for", {"GET": EDITORS},
        kwargs=week["review"]),
    Row("review/<week:week>/placement/<slug:cluster>/<slug:pool>/",
        "a pool's timeline in the week in review, for the committee: none here, the week has no grant yet (its 200:"
        " tests/committee/test_review_placement.py)", {"GET": "302 403 403 404 404 302 302"},
        kwargs=lambda e: {"week": e.review.week, "cluster": e.world.atlas.slug, "pool": e.world.a100.slug}),
    Row("review/<week:week>/requests/<int:pk>/score/", "team A's request in review: team members may not score",
        {"POST": "302 403 403 302 302 302 302"}, kwargs=lambda e: {"week": e.review.week, "pk": e.review_a.pk},
        body=lambda e: {"criterion": "business_impact", "value": "7", "note": ""}),
    Row("review/<week:week>/requests/<int:pk>/score/", "a request of another week: 404",
        {"POST": "302 403 403 404 404 302 302"}, kwargs=lambda e: {"week": e.published.week, "pk": e.review_a.pk},
        body=lambda e: {"criterion": "business_impact", "value": "7", "note": ""}),
    # The member's queue and the scores grid (committee/views/grid.py).
    Row("review/<week:week>/grid/", "the grid of the week in review; its form saves the page's cells",
        {"GET": EDITORS, "POST": "302 403 403 302 302 302 302"}, kwargs=week["review"],
        body=lambda e: {f"cell-{e.review_a.pk}-business_impact": "7"}),
    Row("review/<week:week>/grid/cell/", "one cell of team A's request in review",
        {"POST": "302 403 403 200 200 302 302"}, kwargs=week["review"],
        body=lambda e: {"request": e.review_a.pk, "criterion": "business_impact", "value": "7"}),
    Row("review/<week:week>/queue/<int:pk>/", "team A's request in review, in the member's queue",
        {"GET": EDITORS}, kwargs=lambda e: {"week": e.review.week, "pk": e.review_a.pk}),
    Row("review/<week:week>/requests/<int:pk>/evidence/", "team A's request's evidence, loaded when opened",
        {"GET": EDITORS}, kwargs=lambda e: {"week": e.review.week, "pk": e.review_a.pk}),
    Row("review/<week:week>/requests/<int:pk>/decision/",
        "team A's request in review: the chair records decisions (DOCKET_DECISIONS_RECORDED_BY)",
        {"GET": CHAIR, "POST": "302 403 403 403 302 302 302"},
        kwargs=lambda e: {"week": e.review.week, "pk": e.review_a.pk},
        body=lambda e: {"outcome": "grant", "granted_gpu_count": "", "rationale": "Matrix decision."}),
    Row("review/<week:week>/runs/<int:pk>/continuation/", "no such run week: the committee gets 404, others 403",
        {"POST": "302 403 403 404 404 302 302"}, kwargs=lambda e: {"week": e.review.week, "pk": 999999},
        body=lambda e: {"verdict": "continue"}),
    Row("review/<week:week>/requests/<int:pk>/comment/", "team A's request in review: committee comments only",
        {"POST": "302 403 403 302 302 302 302"}, kwargs=lambda e: {"week": e.review.week, "pk": e.review_a.pk},
        body=lambda e: {"body": "Matrix comment."}),
    Row("review/<week:week>/requests/<int:pk>/question/", "team A's request in review: committee asks the team",
        {"POST": "302 403 403 302 302 302 302"}, kwargs=lambda e: {"week": e.review.week, "pk": e.review_a.pk},
        body=lambda e: {"body": "Matrix question?"}),
    Row("review/<week:week>/requests/<int:pk>/scores-hold/", "team A's request in review: a member confirms scores",
        {"POST": "302 403 403 302 302 302 302"}, kwargs=lambda e: {"week": e.review.week, "pk": e.review_a.pk}),
    Row("review/<week:week>/requests/<int:pk>/conflict/", "team A's request in review: a member declares a conflict",
        {"POST": "302 403 403 302 302 302 302"}, kwargs=lambda e: {"week": e.review.week, "pk": e.review_a.pk},
        body=lambda e: {"reason": "Matrix reason."}),
    Row("review/<week:week>/requests/<int:pk>/conflict/withdraw/", "team A's request in review: withdraw a conflict",
        {"POST": "302 403 403 302 302 302 302"}, kwargs=lambda e: {"week": e.review.week, "pk": e.review_a.pk}),
    Row("review/<week:week>/requests/<int:pk>/conflict/waive/",
        "team A's request in review: only the chair waives a conflict found (none for the tech lead: said)",
        {"POST": "302 403 403 403 302 302 302"}, kwargs=lambda e: {"week": e.review.week, "pk": e.review_a.pk},
        body=lambda e: {"member": e.world.tech.pk, "reason": "Matrix reason."}),
    Row("review/<week:week>/requests/<int:pk>/conflict/waive/withdraw/",
        "team A's request in review: only the chair withdraws a waiver (none in force: said)",
        {"POST": "302 403 403 403 302 302 302"}, kwargs=lambda e: {"week": e.review.week, "pk": e.review_a.pk},
        body=lambda e: {"member": e.world.tech.pk}),
    Row("requests/questions/<int:pk>/answer/", "the committee's question to team A: only team A answers",
        {"POST": "302 302 404 404 404 302 302"}, kwargs=lambda e: {"pk": e.question_a.pk},
        body=lambda e: {"answer": "Matrix answer."}),
    Row("review/<week:week>/close-intake/", "the open week: GET confirms, POST confirm=1 closes",
        {"GET": CHAIR, "POST": "302 403 403 403 302 302 302"}, kwargs=week["open"], body=lambda e: {"confirm": "1"}),
    Row("review/open-next-week/", "the chair opens the next week (refused with a message: one is open)",
        {"POST": "302 403 403 403 302 302 302"}),
    Row("review/clock/", "the weekly clock's state: the chair's", {"GET": CHAIR}),
    Row("review/<week:week>/finalize/", "the week in review (refused with a message: undecided requests)",
        {"GET": CHAIR, "POST": "302 403 403 403 302 302 302"}, kwargs=week["review"], body=lambda e: {"confirm": "1"}),
    Row("review/<week:week>/publish/", "a correction of the published week",
        {"GET": CHAIR, "POST": "302 403 403 403 302 302 302"},
        kwargs=week["published"], body=lambda e: {"reason": "Matrix correction.", "confirm": "1"}),
    Row("review/<week:week>/what-if/", "the chair's preview", {"GET": CHAIR}, kwargs=week["review"],
        query=lambda e: WEIGHTS),
    # Corrections and appeals of the published week.
    Row("requests/<int:pk>/correct/", "team A's published decision: only the chair corrects",
        {"POST": "302 403 404 403 302 302 302"}, kwargs=pk("pub_a"),
        body=lambda e: {"outcome": "defer", "granted_gpu_count": "", "rationale": "Matrix correction.",
                        "reason": "Matrix reason.", "confirm": "1"}),  # past the confirmation of what moves
    Row("requests/<int:pk>/release/", "team A's published window: only team A's lead gives GPUs back "
        "(tests/committee/test_release_page.py)", {"POST": "302 403 404 403 403 302 302"}, kwargs=pk("pub_a"),
        body=lambda e: {"gpu_count": "1"}),
    Row("requests/<int:pk>/run/extend/", "team A's published request: only team A's lead asks for more weeks of a "
        "run (tests/committee/test_multiweek_runs.py); its member is refused; team B and the committee, whose request "
        "it is not, get 404", {"POST": "302 403 404 404 404 302 302"}, kwargs=pk("pub_a"),
        body=lambda e: {"weeks": "1", "reason": "More."}),
    Row("requests/<int:pk>/outcome/", "team A's published request, its grant not ended: its readers read the page; "
        "team A may report (400 here: not asked for yet), the committee is refused, team B gets 404 "
        "(tests/committee/test_realized_outcomes.py)",
        {"GET": "302 200 404 200 200 302 302", "POST": "302 400 404 403 403 302 302"}, kwargs=pk("pub_a"),
        body=lambda e: {"value": "1", "note": "Matrix outcome."}),
    Row("requests/<int:pk>/extension/", "team A's published request: team A may ask (400 here: no running window "
        "to extend); the committee is refused, team B gets 404", {"POST": "302 400 404 403 403 302 302"},
        kwargs=pk("pub_a"), body=lambda e: {"hours": "2", "justification": "Matrix extension."}),
    Row("webhooks/", "the webhooks page: anyone signed in reads it (their own subscriptions); subscribing team A is "
        "its lead's (tests/committee/test_webhooks_page.py)", {"GET": SIGNED_IN, "POST": "302 400 400 400 400 302 302"},
        body=lambda e: {"target": "team:team-a", "url": "https://hooks.example.org/matrix"}),
    Row("webhooks/<int:pk>/deactivate/", "team A's webhook: only its lead stops it",
        {"POST": "302 404 404 404 404 302 302"}, kwargs=pk("webhook_a")),
    Row("requests/<int:pk>/appeal/", "team A's published outcome: only team A appeals",
        {"POST": "302 302 404 403 403 302 302"}, kwargs=pk("pub_a"),
        body=lambda e: {"statement": "Matrix appeal."}),
    Row("appeals/<int:pk>/decide/", "team B's appeal: the committee outside team B answers; team A gets 404",
        {"POST": "302 404 403 302 302 302 302"}, kwargs=pk("appeal_b"),
        body=lambda e: {"decision": "uphold", "reason": "Matrix answer."}),
    Row("review/<week:week>/appeals/", "the published week's appeals", {"GET": EDITORS}, kwargs=week["published"]),
    Row("rubric/", "the published rubric", {"GET": SIGNED_IN}),
    Row("rubric/policy-history/", "who changed fair-share weights, pools, accounts and seats", {"GET": SIGNED_IN}),
    Row("rubric/change/", "the chair changes the rubric", {"GET": CHAIR, "POST": "302 403 403 403 302 302 302"},
        body=lambda e: {**WEIGHTS, **GUIDANCE, "reason": "Matrix change."}),
    Row("elastic/", "the elastic policy and its history", {"GET": SIGNED_IN}),
    Row("budgets/", "the departments' budgets: the committee reads, only the finance member sets one",
        {"GET": EDITORS, "POST": "302 403 403 403 403 302 302"},
        body=lambda e: {"department": "", "quarter": "2026-Q4", "quarterly": "1", "carry_over_pct": "0",
                        "reason": "Matrix budget."}),
    Row("elastic/change/", "the chair changes the elastic policy",
        {"GET": CHAIR, "POST": "302 403 403 403 302 302 302"},
        body=lambda e: {"idle_threshold_pct": "20", "idle_span_minutes": "240", "offer_idle_to_preemptible": "on",
                        "promote_utilization_pct": "80", "promote_queue_wait_minutes": "30",
                        "recent_span_minutes": "60", "night_start": "22:00", "night_end": "06:00",
                        "night_utilization_pct": "30", "standby_wake_minutes": "5", "reason": "Matrix change."}),
    # Published windows (a page for people).
    Row("windows/", "the published plan", {"GET": SIGNED_IN}, query=lambda e: {"week": e.published.week}),
    # The archive.
    Row("policy/", "the proposal board", {"GET": SIGNED_IN}),
    Row("policy/new/", "anyone signed in proposes a change", {"GET": SIGNED_IN, "POST": ALL_302},
        body=lambda e: {"title": "Matrix change", "reason": "Why", "expected_effect": "What",
                        "change:review.quorum": "3"}),
    Row("policy/<int:pk>/", "a proposal, for anyone signed in", {"GET": SIGNED_IN}, kwargs=pk("proposal")),
    Row("policy/<int:pk>/<slug:action>/", "anyone signed in comments on a proposal", {"POST": ALL_302},
        kwargs=lambda e: {"pk": e.proposal.pk, "action": "comment"}, body=lambda e: {"body": "Matrix comment"}),
    Row("policy/<int:pk>/<slug:action>/", "anyone signed in votes on a proposal", {"POST": ALL_302},
        kwargs=lambda e: {"pk": e.proposal.pk, "action": "vote"},
        body=lambda e: {"choice": "support", "comment": "Matrix vote"}),
    Row("policy/<int:pk>/<slug:action>/", "only the chair adopts a proposal", {"POST": "302 403 403 403 302 302 302"},
        kwargs=lambda e: {"pk": e.proposal.pk, "action": "adopt"},
        body=lambda e: {"effective_week": policy_selectors.week_next_free(now=timezone.now()),
                        "decision_reason": "Matrix adoption"}),
    Row("policy/<int:pk>/<slug:action>/", "only the chair declines a proposal",
        {"POST": "302 403 403 403 302 302 302"}, kwargs=lambda e: {"pk": e.proposal.pk, "action": "decline"},
        body=lambda e: {"decision_reason": "Matrix decline"}),
    Row("archive/", "index", {"GET": SIGNED_IN}),
    Row("archive/search/", "search", {"GET": SIGNED_IN}, query=lambda e: {"q": "charter"}),
    Row("archive/chain/", "the chain head", {"GET": SIGNED_IN}),
    Row("archive/new/", "new page", {"GET": EDITORS, "POST": "302 403 403 302 302 302 302"},
        body=lambda e: {"slug": "matrix-page", "title": "Matrix", "body": "Text.", "summary": "First version"}),
    Row("archive/preview/", "the editor's preview: the committee's", {"GET": "302 405 405 405 405 302 302",
                                                                      "POST": "302 403 403 200 200 302 302"},
        body=lambda e: {"body": "**Text.**"}),
    Row("archive/exports/<int:pk>/", "the decision record's PDF export", {"GET": SIGNED_IN}, kwargs=pk("export")),
    Row("archive/exports/<int:pk>/progress/", "its progress fragment", {"GET": SIGNED_IN}, kwargs=pk("export")),
    Row("archive/exports/<int:pk>/download/", "its file", {"GET": SIGNED_IN}, kwargs=pk("export")),
    Row("archive/<slug:slug>/", "the decision record", {"GET": SIGNED_IN}, kwargs=page("record")),
    Row("archive/<slug:slug>/", "no such page", {"GET": "302 404 404 404 404 302 302"},
        kwargs=lambda e: {"slug": "no-such-page"}),
    Row("archive/<slug:slug>/edit/", "the charter", {"GET": EDITORS, "POST": "302 403 403 302 302 302 302"},
        kwargs=page("charter"), body=page_edit),
    Row("archive/<slug:slug>/edit/", "the charter from a stale revision: a conflict, not a silent overwrite",
        {"POST": "302 403 403 409 409 302 302"}, kwargs=page("charter"), body=lambda e: page_edit(e, stale=True)),
    Row("archive/<slug:slug>/history/", "the charter", {"GET": SIGNED_IN}, kwargs=page("charter")),
    Row("archive/<slug:slug>/compare/", "revisions 1 and 2", {"GET": SIGNED_IN}, kwargs=page("charter"),
        query=lambda e: {"old": 1, "new": 2}),
    Row("archive/<slug:slug>/revisions/<int:number>/", "revision 1", {"GET": SIGNED_IN},
        kwargs=page("charter", 1)),
    Row("archive/<slug:slug>/revisions/<int:number>/restore/", "revision 1 as a new revision",
        {"POST": "302 403 403 302 302 302 302"}, kwargs=page("charter", 1),
        body=lambda e: {"base_revision_id": e.charter.latest_revision_id, "summary": "Matrix restore"}),
    Row("archive/<slug:slug>/revisions/<int:number>/pdf/", "anyone signed in asks for a PDF",
        {"POST": ALL_302}, kwargs=page("record", 1)),
    # Dashboards: everyone signed in, each team its own numbers; the monthly review, capacity planning and
    # the cost of ownership are the committee's.
    Row("archive/dashboards/", "dashboards", {"GET": SIGNED_IN}),
    Row("archive/dashboards/<slug:key>.csv", "utilization, a chart for everyone", {"GET": SIGNED_IN},
        kwargs=lambda e: {"key": "utilization"}),
    Row("archive/dashboards/<slug:key>.csv", "score distribution: the committee's chart, 404 for the teams",
        {"GET": "302 404 404 200 200 302 302"}, kwargs=lambda e: {"key": "scores"}),
    Row("archive/dashboards/teams/<slug:team>/", "team A's history: its members and the committee",
        {"GET": "302 200 403 200 200 302 302"}, kwargs=lambda e: {"team": "team-a"}),
    Row("archive/dashboards/monthly/", "the monthly review", {"GET": EDITORS}),
    Row("archive/dashboards/monthly.csv", "its CSV", {"GET": EDITORS}),
    Row("archive/dashboards/monthly/<str:month>/review/", "open the month's parameter review",
        {"POST": "302 403 403 302 302 302 302"}, kwargs=lambda e: {"month": timezone.localdate().strftime("%Y-%m")}),
    Row("archive/dashboards/elastic/<slug:cluster>/<slug:pool>/", "a pool's elastic history, for everyone",
        {"GET": SIGNED_IN}, kwargs=lambda e: {"cluster": "atlas", "pool": "a100"}),
    Row("archive/dashboards/capacity/", "capacity planning", {"GET": EDITORS}),
    Row("archive/dashboards/capacity.csv", "its CSV", {"GET": EDITORS}),
    Row("archive/dashboards/capacity.pdf", "its PDF", {"GET": EDITORS}),
    # The executive summary and the buffer fund: everyone signed in reads; the chair and finance record.
    Row("archive/executive/", "to the last whole month", {"GET": ALL_302}),
    Row("archive/executive/<str:month>/", "a month's executive summary", {"GET": SIGNED_IN},
        kwargs=lambda e: {"month": timezone.localdate().strftime("%Y-%m")}),
    Row("archive/executive/<str:month>/pdf/", "its PDF", {"GET": SIGNED_IN},
        kwargs=lambda e: {"month": timezone.localdate().strftime("%Y-%m")}),
    Row("archive/statements/<str:month>/", "a month's statement of charges: the committee", {"GET": EDITORS},
        kwargs=lambda e: {"month": timezone.localdate().strftime("%Y-%m")}),
    Row("archive/statements/<str:month>.csv", "its CSV", {"GET": EDITORS},
        kwargs=lambda e: {"month": timezone.localdate().strftime("%Y-%m")}),
    Row("archive/statements/<str:month>.pdf", "its PDF", {"GET": EDITORS},
        kwargs=lambda e: {"month": timezone.localdate().strftime("%Y-%m")}),
    Row("archive/buffer/", "to the running quarter's fund", {"GET": ALL_302}),
    Row("archive/buffer/<str:quarter>/", "a quarter's buffer fund", {"GET": SIGNED_IN},
        kwargs=lambda e: {"quarter": "2026-Q4"}),
    Row("archive/buffer/<str:quarter>/open/", "open a quarter's fund: the chair or finance",
        {"POST": "302 403 403 403 302 302 302"}, kwargs=lambda e: {"quarter": "2026-Q4"},
        body=lambda e: {}),
    Row("archive/buffer/<str:quarter>/spend/", "spend from a quarter with no fund: the chair is told so",
        {"POST": "302 403 403 403 404 302 302"}, kwargs=lambda e: {"quarter": "2026-Q4"},
        body=lambda e: {"amount": "1.00", "item": "x", "spent_at": _local(timezone.now()), "reason": "x"}),
    Row("archive/buffer/<str:quarter>/deferred/", "defer a purchase in a quarter with no fund: the chair is told so",
        {"POST": "302 403 403 403 404 302 302"}, kwargs=lambda e: {"quarter": "2026-Q4"},
        body=lambda e: {"amount": "1.00", "item": "x", "deferred_at": _local(timezone.now()), "reason": "x"}),
    Row("archive/dashboards/heatmap/", "the hour-of-week heatmap: pool numbers, for everyone", {"GET": SIGNED_IN}),
    Row("archive/dashboards/calendar/", "the forward calendar: pools' weeks ahead, for everyone", {"GET": SIGNED_IN}),
    Row("archive/dashboards/heatmap.pdf", "its PDF", {"GET": SIGNED_IN}),
    Row("archive/dashboards/tco/", "cost of ownership and the buy-vs-wait calculator", {"GET": EDITORS}),
    Row("archive/dashboards/tco.pdf", "its PDF", {"GET": EDITORS}),
    # The scheduler API: a token reads and writes its own cluster only.
    Row("api/v1/windows/", "cluster A's windows: scheduler B gets 404", {"GET": SCHEDULERS_ONLY_A},
        query=lambda e: {"cluster": "atlas", "week": e.published.week}),
    Row("api/v1/windows/<int:pk>/", "a window of cluster A: scheduler B gets 404", {"GET": SCHEDULERS_ONLY_A},
        kwargs=pk("window_a")),
    Row("api/v1/windows/sync-status/", "status of a cluster A window: scheduler B is refused",
        {"POST": "401 401 401 401 401 200 400"}, body=sync_json),
    Row("api/v1/usage/", "usage on cluster A's pool: scheduler B is refused",
        {"POST": "401 401 401 401 401 201 400"}, body=usage_json),
    Row("api/v1/clusters/<slug:slug>/", "cluster A's pools and accounts: scheduler B gets 404",
        {"GET": SCHEDULERS_ONLY_A}, kwargs=lambda e: {"slug": "atlas"}),
    Row("api/v1/elastic/policy/", "the elastic policy: each scheduler reads it with its own cluster's pools",
        {"GET": "401 401 401 401 401 200 200"}),
    Row("api/v1/elastic/actions/", "an agent's action on cluster A's pool: scheduler B is refused",
        {"POST": "401 401 401 401 401 201 400"}, body=agent_action_json),
    # The committee's API.
    Row("api/v1/cycles/", "all weeks", {"GET": API_PEOPLE}),
    Row("api/v1/cycles/<week:week>/", "a week", {"GET": API_PEOPLE}, kwargs=week["review"]),
    Row("api/v1/cycles/<week:week>/close-intake/", "the open week", {"POST": "401 403 403 403 200 403 403"},
        kwargs=week["open"]),
    Row("api/v1/cycles/<week:week>/finalize/", "the week in review (409 for the chair: undecided requests)",
        {"POST": "401 403 403 403 409 403 403"}, kwargs=week["review"]),
    Row("api/v1/cycles/<week:week>/publish/", "a correction of the published week",
        {"POST": "401 403 403 403 201 403 403"}, kwargs=week["published"], body=lambda e: {"reason": "Correction."}),
    Row("api/v1/cycles/<week:week>/ranking/", "the week in review", {"GET": "401 403 403 200 200 403 403"},
        kwargs=week["review"]),
    Row("api/v1/cycles/<week:week>/what-if/", "the chair's preview", {"GET": "401 403 403 403 200 403 403"},
        kwargs=week["review"], query=lambda e: WEIGHTS),
    Row("api/v1/requests/", "requests the caller may read", {"GET": API_PEOPLE}),
    Row("api/v1/teams/<slug:team>/requests/", "file for team B: only team B's members",
        {"POST": "401 403 201 403 403 403 403"}, kwargs=lambda e: {"team": "team-b"},
        body=lambda e: request_json(e, pool=e.world.a100)),
    Row("api/v1/teams/<slug:team>/fast-lane/", "a fast-lane request for team B: only team B's members",
        {"POST": "401 403 201 403 403 403 403"}, kwargs=lambda e: {"team": "team-b"},
        body=lambda e: {"pool": "atlas/a100", "title": "Matrix fast lane", "gpu_count": 2, "duration_hours": 2}),
    Row("api/v1/teams/<slug:team>/windows/", "team A's windows: its members and the committee",
        {"GET": "401 200 403 200 200 403 403"}, kwargs=lambda e: {"team": "team-a"}),
    Row("api/v1/pools/", "every pool, for filing requests", {"GET": API_PEOPLE}),
    Row("api/v1/calendar/", "the forward calendar: every pool's weeks ahead", {"GET": API_PEOPLE}),
    Row("api/v1/requests/<int:pk>/", "team A's draft: team B gets 404; the committee reads but does not write",
        {"GET": "401 200 404 200 200 403 403", "PUT": "401 200 404 403 403 403 403"}, kwargs=pk("draft_a"),
        body=lambda e: request_json(e, pool=e.world.a100, title="Embedding backfill v2")),
    Row("api/v1/requests/<int:pk>/submit/", "team A's draft", {"POST": "401 200 404 403 403 403 403"},
        kwargs=pk("draft_a")),
    Row("api/v1/requests/<int:pk>/withdraw/", "team A's submitted request", {"POST": "401 200 404 403 403 403 403"},
        kwargs=pk("submitted_a")),
    Row("api/v1/requests/<int:pk>/scores/", "team A's request in review: no team member reads or writes scores",
        {"GET": "401 403 403 200 200 403 403", "POST": "401 403 403 200 200 403 403"}, kwargs=pk("review_a"),
        body=lambda e: {"criterion": "urgency", "value": 6}),
    Row("api/v1/requests/<int:pk>/decision/", "team A's published decision: team A reads it, team B gets 404",
        {"GET": "401 200 404 200 200 403 403"}, kwargs=pk("pub_a")),
    Row("api/v1/requests/<int:pk>/decision/", "team A's request in review: only the chair decides",
        {"GET": "401 404 404 404 404 403 403", "PUT": "401 403 403 403 200 403 403"}, kwargs=pk("review_a"),
        body=lambda e: {"outcome": "grant", "rationale": "Matrix decision."}),
    Row("api/v1/requests/<int:pk>/corrections/", "team A's published decision: its readers read, the chair corrects",
        {"GET": "401 200 404 200 200 403 403", "POST": "401 403 403 403 201 403 403"}, kwargs=pk("pub_a"),
        body=lambda e: {"outcome": "defer", "rationale": "Matrix correction.", "reason": "Matrix reason."}),
    Row("api/v1/requests/<int:pk>/release/", "team A's published window: only team A's lead gives GPUs back "
        "(tests/committee/test_api_release.py); its member and the committee are refused, team B gets 404",
        {"POST": "401 403 404 403 403 403 403"}, kwargs=pk("pub_a"), body=lambda e: {"gpu_count": 1}),
    Row("api/v1/requests/<int:pk>/run-extension/", "team A's published request: only team A's lead asks for more "
        "weeks of a run (tests/committee/test_multiweek_runs.py); its member and the committee are refused, team B "
        "gets 404", {"POST": "401 403 404 403 403 403 403"}, kwargs=pk("pub_a"),
        body=lambda e: {"weeks": 1, "reason": "More."}),
    Row("api/v1/requests/<int:pk>/outcome/", "team A's published request, its grant not ended: 404 to read (not asked "
        "for); team A may report and is answered 409 here, the committee is refused, team B gets 404 "
        "(tests/committee/test_realized_outcomes.py)",
        {"GET": "401 404 404 404 404 403 403", "POST": "401 409 404 403 403 403 403"}, kwargs=pk("pub_a"),
        body=lambda e: {"value": 1, "note": "Matrix outcome."}),
    Row("api/v1/requests/<int:pk>/extension/", "team A's published request: team A may ask, and is answered "
        "409 here (no running window); the committee is refused, team B gets 404 (tests/committee/test_extension.py)",
        {"POST": "401 409 404 403 403 403 403"}, kwargs=pk("pub_a"),
        body=lambda e: {"hours": 2, "justification": "Matrix extension."}),
    Row("api/v1/webhooks/", "the webhooks the caller manages; subscribing team A is its lead's "
        "(tests/committee/test_api_webhooks.py): its member, team B and the committee are refused",
        {"GET": API_PEOPLE, "POST": "401 403 403 403 403 403 403"},
        body=lambda e: {"team": "team-a", "url": "https://hooks.example.org/docket"}),
    Row("api/v1/webhooks/<int:pk>/deliveries/", "team A's webhook: only its lead reads the log",
        {"GET": "401 404 404 404 404 403 403"}, kwargs=pk("webhook_a")),
    Row("api/v1/webhooks/<int:pk>/deactivate/", "team A's webhook: only its lead stops it",
        {"POST": "401 404 404 404 404 403 403"}, kwargs=pk("webhook_a")),
    Row("api/v1/requests/<int:pk>/appeals/", "team A's published outcome: only team A appeals",
        {"GET": "401 200 404 200 200 403 403", "POST": "401 201 404 403 403 403 403"}, kwargs=pk("pub_a"),
        body=lambda e: {"statement": "Matrix appeal."}),
    Row("api/v1/appeals/<int:pk>/decision/", "team B's appeal: the committee outside team B answers",
        {"POST": "401 403 403 200 200 403 403"}, kwargs=pk("appeal_b"),
        body=lambda e: {"decision": "uphold", "reason": "Matrix answer."}),
    # The conversation around a request (docs/discussion.md): comments are the committee's alone.
    Row("api/v1/requests/<int:pk>/comments/", "team A's request in review: the committee's comments, never the team's",
        {"GET": "401 403 403 200 200 403 403", "POST": "401 403 403 201 201 403 403"}, kwargs=pk("review_a"),
        body=lambda e: {"body": "Matrix comment."}),
    Row("api/v1/requests/<int:pk>/questions/", "team A's request in review: team A and the committee read, "
        "the committee asks", {"GET": "401 200 404 200 200 403 403", "POST": "401 403 403 201 201 403 403"},
        kwargs=pk("review_a"), body=lambda e: {"body": "Matrix question?"}),
    Row("api/v1/questions/<int:pk>/answer/", "the committee's question to team A: only team A answers",
        {"POST": "401 200 404 403 403 403 403"}, kwargs=pk("question_a"), body=lambda e: {"answer": "Matrix answer."}),
    Row("api/v1/requests/<int:pk>/conflicts/", "team A's request in review: the committee declares and reads",
        {"GET": "401 403 403 200 200 403 403", "POST": "401 403 403 201 201 403 403"}, kwargs=pk("review_a"),
        body=lambda e: {"reason": "Matrix reason."}),
    Row("api/v1/requests/<int:pk>/conflicts/withdraw/", "team A's request in review (409: nothing declared)",
        {"POST": "401 403 403 409 409 403 403"}, kwargs=pk("review_a")),
    Row("api/v1/requests/<int:pk>/scores/hold/", "team A's request in review (409: no stale scores)",
        {"POST": "401 403 403 409 409 403 403"}, kwargs=pk("review_a")),
    Row("api/v1/rubric/", "the current rubric", {"GET": API_PEOPLE}),
    Row("api/v1/rubric/versions/", "history for all; a new version by the chair",
        {"GET": API_PEOPLE, "POST": "401 403 403 403 201 403 403"},
        body=lambda e: {"weights": {**WEIGHTS, "business_impact": 50, "feasibility": 20}, "reason": "Matrix change."}),
    # The archive's API (read-only).
    Row("api/v1/archive/pages/", "pages", {"GET": API_PEOPLE}),
    Row("api/v1/archive/pages/<slug:slug>/", "the decision record", {"GET": API_PEOPLE}, kwargs=page("record")),
    Row("api/v1/archive/pages/<slug:slug>/revisions/", "the charter's revisions", {"GET": API_PEOPLE},
        kwargs=page("charter")),
    Row("api/v1/archive/pages/<slug:slug>/revisions/<int:number>/", "revision 1", {"GET": API_PEOPLE},
        kwargs=page("charter", 1)),
    Row("api/v1/archive/pages/<slug:slug>/diff/", "revisions 1 and 2", {"GET": API_PEOPLE}, kwargs=page("charter"),
        query=lambda e: {"old": 1, "new": 2}),
    Row("api/v1/archive/chain/", "the chain head", {"GET": API_PEOPLE}),
    # The policy lab's replay of past weeks (committee only).
    Row("policy/replay/", "the replay page", {"GET": SIGNED_IN}, query=lambda e: {"weeks": "2"}),
    Row("policy/replay/partial/", "the replay's results (htmx)", {"GET": SIGNED_IN},
        query=lambda e: {"weeks": "2", "rubric.fairness": "20", "rubric.business_impact": "30"}),
    # The API's schema and docs are public: they hold no data.
    Row("api/v1/schema/", "OpenAPI schema", {"GET": "200 200 200 200 200 200 200"}),
    Row("api/v1/docs/", "Swagger UI", {"GET": "200 200 200 200 200 200 200"}),
]

EXCLUDED_PREFIXES = ("admin/", "static/", "media/")  # admin: see test_admin_refuses_everyone_but_staff


def cases() -> list[Any]:
    """One test a row and method; its seven roles are cases of it, each in a savepoint of its own."""
    params = []
    for row in TABLE:
        for method, statuses in row.methods.items():
            expected = [int(s) for s in statuses.split()]
            assert len(expected) == len(ROLES), f"{row.route} {method}: {len(expected)} statuses for 7 roles"
            params.append(pytest.param(row, method, dict(zip(ROLES, expected, strict=True)),
                                       id=f"{method} /{row.route} {row.label}"))
    return params


def url_routes(resolver: URLResolver | None = None, prefix: str = "") -> list[tuple[str, Any]]:
    """Every (route, callback) the URL configuration serves, outside the excluded prefixes."""
    found: list[tuple[str, Any]] = []
    for entry in (resolver or get_resolver()).url_patterns:
        route = prefix + str(entry.pattern)
        if route.startswith(EXCLUDED_PREFIXES):
            continue
        if isinstance(entry, URLResolver):
            found.extend(url_routes(entry, route))
        elif isinstance(entry, URLPattern):
            found.append((route, entry.callback))
    return found


@pytest.fixture(scope="module")
def estate(django_db_setup: Any, django_db_blocker: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    yield from build_estate(django_db_blocker, tmp_path_factory.mktemp("pdf"))


@pytest.fixture(autouse=True)
def _fresh_throttle() -> None:
    cache.clear()  # the API's rate limits count in the cache; each case starts at zero


# --- the tests ------------------------------------------------------------------------------------


def test_every_url_pattern_has_a_row() -> None:
    served = {route for route, _callback in url_routes()}
    specified = {row.route for row in TABLE}
    assert not served - specified, f"URL patterns without a row in the permission matrix: {sorted(served - specified)}"
    assert not specified - served, f"rows for URL patterns that no longer exist: {sorted(specified - served)}"


def test_api_rows_cover_every_method_the_view_accepts() -> None:
    rows: dict[str, set[str]] = {}
    for row in TABLE:
        rows.setdefault(row.route, set()).update(row.methods)
    for route, callback in url_routes():
        view_class = getattr(callback, "cls", None)
        if view_class is None:
            continue
        accepted = {m.upper() for m in view_class.http_method_names if hasattr(view_class, m)} - {"OPTIONS", "HEAD"}
        assert rows[route] == accepted, f"/{route}: the view takes {sorted(accepted)}, the table {sorted(rows[route])}"


@pytest.mark.parametrize(("row", "method", "expected"), cases())
def test_permission(estate: SimpleNamespace, db: Any, clock: Any, row: Row, method: str,
                    expected: dict[str, int]) -> None:
    """Each role's answer, every role tried: the failure lists every role that got another status."""
    problems = []
    for role, status in expected.items():
        # What each test starts from (tests/conftest.py): the clock, no language, empty process caches and rate
        # limits; and the role's writes undone before the next role's request.
        clock.move_to(FIXED_NOW)
        translation.deactivate()
        empty_process_cache()
        cache.clear()
        with transaction.atomic():
            try:
                problems.extend(_case(estate, row, method, role, status))
            except AssertionError as failed:  # the page's reading (assert_reads_one_way)
                problems.append(str(failed))
            transaction.set_rollback(True)
    assert not problems, "\n".join(problems)


def _case(estate: SimpleNamespace, row: Row, method: str, role: str, expected: int) -> list[str]:
    client = client_for(estate, role, api=row.api)
    path = row.path(estate)
    assert resolve(path).route == row.route, f"{path} resolves to another pattern"
    body = row.body(estate) if method != "GET" else row.query(estate)
    if method == "GET":
        response = client.get(path, body)
    elif row.api:
        response = client.generic(method, path + _query(row.query(estate)), json.dumps(body),
                                  content_type="application/json")
    else:
        response = client.generic(method, path + _query(row.query(estate)), _form(body),
                                  content_type="application/x-www-form-urlencoded")
    if response.status_code != expected:
        detail = response.content[:300].decode(errors="replace")
        return [f"{role} {method} {path}: {response.status_code} ≠ {expected} {detail}"]
    if response.status_code == 302 and not row.route.startswith(("accounts/", "i18n/")):
        to_login = response["Location"].startswith("/accounts/login/")
        # Nobody signed in is sent to sign in; someone signed in never is (their session worked).
        if to_login != (role == "anon" or role.startswith("sched_")):
            return [f"{role} {method} {path}: redirected to {response['Location']}"]
    if method == "GET" and role == _page_reads(row):  # the page as its reader sees it, in English: it reads one way
        assert_reads_one_way(row, role, response, "en")
    return []


def _query(values: dict[str, Any]) -> str:
    return "?" + urlencode(values) if values else ""


def _form(values: dict[str, Any]) -> str:
    return urlencode(values, doseq=True)


# --- object-level cases beyond the seven roles ----------------------------------------------------


def test_committee_member_of_team_b_cannot_score_or_decide_team_b(estate: SimpleNamespace, db: Any) -> None:
    """The tech lead sits on the committee and in team B: a conflict of interest, refused on the page and the API."""
    tech = estate.world.tech
    from rest_framework.test import APIClient

    client = client_for(estate, "anon", api=False)
    client.force_login(tech)
    review_b = f"/review/{estate.review.week}/requests/{estate.review_b.pk}"
    assert client.post(f"{review_b}/score/", {"criterion": "urgency", "value": "5"}).status_code == 403
    assert client.post(f"{review_b}/decision/", {"outcome": "grant", "rationale": "x"}).status_code == 403
    api = APIClient()
    api.force_authenticate(tech)
    base = f"/api/v1/requests/{estate.review_b.pk}"
    assert api.post(f"{base}/scores/", {"criterion": "urgency", "value": 5}, format="json").status_code == 403
    assert api.put(f"{base}/decision/", {"outcome": "grant", "rationale": "x"}, format="json").status_code == 403
    assert not Score.objects.filter(member=tech, request=estate.review_b).exists()


def test_lists_are_scoped_to_the_callers_teams(estate: SimpleNamespace, db: Any) -> None:
    """Team B's list holds no request of team A (and the other way round); the committee's holds all."""
    titles = {}
    for role in ("team_a", "team_b", "committee"):
        response = client_for(estate, role, api=True).get("/api/v1/requests/", {"page_size": 100})
        titles[role] = {r["team"] for r in response.json()["results"]}
    assert titles["team_a"] == {"team-a"} and titles["team_b"] == {"team-b"}
    assert titles["committee"] == {"team-a", "team-b"}
    page = client_for(estate, "team_b", api=False).get("/requests/").content.decode()
    assert estate.draft_b.title in page and estate.draft_a.title not in page


def test_scheduler_b_reads_nothing_of_cluster_a(estate: SimpleNamespace, db: Any) -> None:
    client = client_for(estate, "sched_b", api=True)
    body = client.get("/api/v1/windows/", {"cluster": "orion", "week": estate.published.week}).json()
    assert body["results"] and {w["cluster"] for w in body["results"]} == {"orion"}
    assert estate.window_a.pk not in {w["id"] for w in body["results"]}
    assert client.get(f"/api/v1/windows/{estate.window_a.pk}/").status_code == 404
    assert client.get(f"/api/v1/windows/{estate.window_b.pk}/").status_code == 200


def test_refused_writes_change_nothing(estate: SimpleNamespace, db: Any) -> None:
    before = (GpuRequest.objects.count(), AllocationPlan.objects.count(), Score.objects.count())
    client_for(estate, "team_a", api=True).post(
        "/api/v1/teams/team-b/requests/", request_json(estate, pool=estate.world.a100), content_type="application/json"
    )
    client_for(estate, "committee", api=True).post(
        f"/api/v1/cycles/{estate.published.week}/publish/", {"reason": "x"}, content_type="application/json"
    )
    client_for(estate, "team_b", api=True).post(
        f"/api/v1/requests/{estate.review_a.pk}/scores/", {"criterion": "urgency", "value": 1},
        content_type="application/json",
    )
    assert (GpuRequest.objects.count(), AllocationPlan.objects.count(), Score.objects.count()) == before


@pytest.mark.parametrize("role", ROLES)
def test_admin_refuses_everyone_but_staff(estate: SimpleNamespace, db: Any, role: str) -> None:
    client = client_for(estate, role, api=False)
    for path in ("/admin/", "/admin/committee/gpurequest/", "/admin/auth/user/"):
        response = client.get(path)
        assert response.status_code == 302 and response["Location"].startswith("/admin/login/"), (role, path)


def test_admin_opens_for_staff(estate: SimpleNamespace, db: Any) -> None:
    from django.contrib.auth import get_user_model

    staff = get_user_model().objects.create_user(username="operator", password="pw", is_staff=True,
                                                 is_superuser=True)
    client = client_for(estate, "anon", api=False)
    client.force_login(staff)
    assert client.get("/admin/").status_code == 200


# --- odd values in every parameter: no page answers 5xx ------------------------------------------
#
# No page answers 5xx, whatever its query parameters or free path segments hold.
#
# Every page of the table above (every URL pattern but the API,
# which tests/test_api_fuzz.py fuzzes from its schema) is asked, as each signed-in role in turn, with
# odd values, a few per page in turn: a superscript and full-width digits, quarters of the years 0, 1,
# 2, 9998 and 9999, a trailing newline, a NUL byte, huge numbers, a very long text, nothing. The
# parameters are every name the page's view module reads from GET or POST (found in its source) and
# the names pages commonly read; each value is sent in all of them at once, then each of the module's
# own names alone (so that a clean 404 on one cannot hide another's 500). Free path segments
# (`<str:quarter>`, `<str:month>`) get the same values. POSTs go to the pages that take them.
#
# About 600 requests (a file export, a PDF or CSV each time, gets one value at once); the corpus turns
# over from page to page, so every value meets about a dozen pages and half the values each free segment.
# The estate is the table's, built once for the module.

ODD = [
    "²", "１２", "٣", "0000-Q1", "0001-Q1", "0002-Q1", "9998-Q4", "9999-Q4", "2026-Q4\n", "1\n", " 1", "-1", "0", "",
    "\x00", "9" * 30, "1e999", "nan", "2026-W99", "0000-W01", "9999-12", "x" * 5000, "1,2", "[]",
]
SHARP = ["²", "１２", "9" * 30, "2026-Q4\n", "\x00", "0000-Q1"]  # each of a view's own names alone
COMMON = ["page", "week", "team", "pool", "request", "baseline", "copy", "id", "up_to", "weeks", "month",
          "quarter", "next", "q", "cluster", "mine", "sort", "status", "number", "ranking"]
READS = re.compile(r"(?:GET|POST|params|query|data)\.get(?:list)?\(\s*[\"']([A-Za-z0-9_.-]+)[\"']")
FREE_SEGMENT = re.compile(r"<(?:str|path):(\w+)>")
FUZZ_ROLES = ("team_a", "team_b", "committee", "chair")
PER_PAGE = 2


def _names_read(callback: Any) -> list[str]:
    module = inspect.getmodule(getattr(callback, "view_class", None) or getattr(callback, "cls", None) or callback)
    source = inspect.getsource(module) if module is not None else ""
    return sorted(set(READS.findall(source)) - {"DELETE"})


def _fuzzed_pages() -> list[tuple[Row, Any]]:
    callbacks = dict(url_routes())
    return [(row, callbacks[row.route]) for row in TABLE if not row.api and row.route in callbacks]


def _value_of(values: dict[str, Any], match: re.Match[str]) -> str:
    return str(values[match.group(1)])


def _fuzz_ask(clients: dict[str, Any], roles: Any, method: str, path: str, params: dict[str, str],
         failures: list[str]) -> None:
    role = next(roles)
    client = clients[role]
    cache.clear()  # rate limits count in the cache
    response = client.get(path, params) if method == "GET" else client.post(path, params)
    if response.status_code >= 500:
        failures.append(f"{role} {method} {path} {params!r:.200}: {response.status_code}")


def test_no_page_answers_5xx_to_odd_parameters(estate: SimpleNamespace, db: Any) -> None:
    clients = {role: client_for(estate, role, api=False) for role in FUZZ_ROLES}
    for client in clients.values():
        client.raise_request_exception = False  # a 500 is collected with the others, not raised
    roles, odd, sharp = cycle(FUZZ_ROLES), cycle(ODD), cycle(SHARP)
    failures: list[str] = []
    asked: set[tuple[str, str]] = set()
    for row, callback in _fuzzed_pages():
        own = _names_read(callback)
        names = sorted(set(own) | set(COMMON))
        for method in row.methods:
            if method not in {"GET", "POST"} or row.route.startswith(("accounts/", "i18n/")):
                continue
            if (row.route, method) in asked:  # a route with several rows (other objects): once is enough
                continue
            asked.add((row.route, method))
            free = FREE_SEGMENT.findall(row.route)
            if not free:
                path = row.path(estate)
                # Every name at once, with a few values a page (the corpus turns over from page to page).
                for value in [next(odd) for _ in range(1 if row.route.endswith((".pdf", ".csv")) else PER_PAGE)]:
                    _fuzz_ask(clients, roles, method, path, dict.fromkeys(names, value), failures)
                # Each of the view's own names alone, so that one name's clean 404 hides no other's 500.
                for name in own:
                    _fuzz_ask(clients, roles, method, path, {name: next(sharp)}, failures)
            for segment in free:
                for value in [next(odd) for _ in range(len(ODD) // 2)]:
                    if not value:
                        continue
                    values = {**row.kwargs(estate), segment: quote(value, safe="")}
                    bent = "/" + re.sub(r"<(?:\w+:)?(\w+)>", partial(_value_of, values), row.route)
                    _fuzz_ask(clients, roles, method, bent, dict.fromkeys(own, value), failures)
    assert len(asked) > 100
    assert not failures, f"{len(failures)} answers were 5xx:\n" + "\n".join(failures[:40])



# --- every page reads one way, in English and in Simplified Chinese -------------------------------
#
# Every page of the table, rendered once as the first of these roles that the table lets read it, in each
# language: tests/readable.py's check (an unseparated number of four or more digits, "(s)", a 12-hour time, a
# cost without its currency) finds nothing on it. In English that is the reader's own case of test_permission
# (the same request, so it is not asked twice); in Chinese, test_every_page_reads_in_chinese asks again.

READERS = ("chair", "team_a", "committee", "team_b")


def _page_reads(row: Row) -> str | None:
    """The role that reads `row`'s page (200 to a GET), or None: an API, a form post, a redirect."""
    if row.api or "GET" not in row.methods or row.route.startswith(("accounts/", "i18n/", "oidc/")):
        return None
    statuses = dict(zip(ROLES, row.methods["GET"].split(), strict=True))
    return next((role for role in READERS if statuses[role] == "200"), None)


def assert_reads_one_way(row: Row, role: str, response: Any, language: str) -> bool:
    """The page of `row` as `role` read it finds nothing for tests/readable.py, in `language`; False when it is no
    HTML page (a CSV, a PDF), which has nothing to read that way."""
    from tests.readable import unreadable

    if not response.get("Content-Type", "").startswith("text/html"):
        return False
    html = response.content.decode()
    assert "<html" not in html or f'<html lang="{language}"' in html, row.route  # not a fragment: its language
    problems = [f"/{row.route} ({row.label}, {role}): {p}" for p in unreadable(html)]
    assert not problems, f"{len(problems)} texts read another way ({language}):\n" + "\n".join(problems)
    return True


def test_the_pages_read_in_english_are_many() -> None:
    """What test_permission reads in English (its readers' GETs) is most of the app's pages, not a few."""
    assert sum(_page_reads(row) is not None for row in TABLE) > 50


def test_every_page_reads_in_chinese(estate: SimpleNamespace, db: Any) -> None:
    clients: dict[str, Any] = {}
    problems: list[str] = []
    read = 0
    for row in TABLE:
        role = _page_reads(row)
        if role is None:
            continue
        if role not in clients:
            clients[role] = client_for(estate, role, api=False)
            clients[role].post("/i18n/setlang/", {"language": "zh-hans", "next": "/"})
        cache.clear()  # rate limits count in the cache
        response = clients[role].get(row.path(estate), row.query(estate))
        try:
            read += assert_reads_one_way(row, role, response, "zh-hans")
        except AssertionError as problem:
            problems.append(str(problem))
    assert read > 50
    assert not problems, "\n".join(problems)
