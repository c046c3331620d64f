"""Usage posts, request edits, corrections, scores and emergencies on one pool, at once: no 500 (PostgreSQL).

Issue 27's reproduction, small: a scheduler posts usage on atlas/a100 while team A's lead replaces its request on
that pool for the following week, the chair corrects a decision of the published week (a new plan version on the
same pool), the product lead scores team B's a100 request of a week in review, and team B files emergencies on a100
in the running week that the chair and a second member approve (each placed, a plan version published). Before the row
locks took only the rows each service changes, a usage post and a request edit deadlocked in PostgreSQL and answered
500 (bench/soak_deadlocks.py: 273 of 600 calls in 300 pairs). Every call here must answer as it would alone, and the
ledger must hold exactly the usage the API confirmed.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import urllib.error
import urllib.request
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest

from allocations.models import AllocationPlan, ClusterAccount, UsageRecord
from committee import services, weeks
from committee.models import DecisionCorrection, EmergencyRequest
from committee.services import emergency as emergencies
from tests.allocations.plans import token_for
from tests.clock import FIXED_NOW
from tests.committee.appealing import finalize_week, publish
from tests.committee.review_api import request_body
from tests.committee.reviewing import close
from tests.conftest import require
from tests.factories import file_request
from tests.reports.conftest import on_postgresql

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

ROUNDS = 6  # rounds of (usage post, request edit) pairs, PAIRS at a time
PAIRS = 3
CORRECTIONS = 3
SCORES = 6
EMERGENCIES = 3


def call(method: str, url: str, authorization: str, body: dict[str, Any]) -> int:
    request = urllib.request.Request(url, data=json.dumps(body, default=str).encode(), method=method)  # noqa: S310
    request.add_header("Authorization", authorization)
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310 (the live server's http URL)
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def test_usage_posts_request_edits_corrections_and_scores_together_answer_without_a_server_error(
        live_server, world, clock):
    require(on_postgresql(), "PostgreSQL (run with DATABASE_URL=postgres://…)")
    clock.move_to(FIXED_NOW - timedelta(days=7), tick=False)
    running = services.cycle_create(week=weeks.current_week_label(FIXED_NOW))  # the week FIXED_NOW falls in
    clock.move_to(FIXED_NOW, tick=False)
    _first, second, _third = finalize_week(world)
    publish(world)
    following = services.cycle_create(week=weeks.next_week_label(world.cycle.starts_at + timedelta(hours=1)))
    later = dataclasses.replace(world, cycle=following)
    edited = file_request(later)
    reviewing = dataclasses.replace(world, cycle=services.cycle_create(
        week=weeks.next_week_label(following.starts_at + timedelta(hours=1))))
    scored = file_request(reviewing, team=world.team_b, title="Vision model", gpu_count=8, min_gpu_count=4)
    close(reviewing)
    ClusterAccount.objects.create(cluster=world.atlas, team=world.team_a, account="team-a-acct")
    scheduler = f"Bearer {token_for(world.atlas, 'soak')}"
    lead = f"Token {services.personal_token_create(user=world.lead_a, name='soak')[1]}"
    chair = f"Token {services.personal_token_create(user=world.chair, name='soak')[1]}"
    reviewer = f"Token {services.personal_token_create(user=world.reviewer, name='soak')[1]}"
    hour = FIXED_NOW.replace(minute=0, second=0, microsecond=0) - timedelta(hours=3)
    body = request_body(later)
    answers: dict[str, Counter[int | str]] = {"usage": Counter(), "edit": Counter(), "correction": Counter(),
                                        "score": Counter(), "emergency": Counter()}
    count = threading.Lock()
    start = threading.Barrier(PAIRS * 2 + 3, timeout=60)

    def record(kind: str, status: int | str) -> None:
        with count:
            answers[kind][status] += 1

    def usage(party: int) -> None:
        start.wait()
        for round_ in range(ROUNDS):
            record("usage", call("POST", f"{live_server.url}/api/v1/usage/", scheduler, {
                "team": "team-a", "pool": "a100", "period_start": hour.isoformat(),
                "period_end": (hour + timedelta(hours=1)).isoformat(), "gpu_hours_used": "0.5",
                "mean_utilization_pct": "50", "idempotency_key": f"soak-{party}-{round_}"}))

    def edit(party: int) -> None:
        start.wait()
        for round_ in range(ROUNDS):
            record("edit", call("PUT", f"{live_server.url}/api/v1/requests/{edited.pk}/", lead,
                                {**body, "title": f"Edit {party}.{round_}"}))

    def correct() -> None:
        start.wait()
        for index in range(CORRECTIONS):
            outcome: dict[str, Any] = (
                {"outcome": "grant"} if index % 2 == 0 else {"outcome": "partial", "granted_gpu_count": 8})
            record("correction", call("POST", f"{live_server.url}/api/v1/requests/{second.pk}/corrections/", chair,
                                      {**outcome, "rationale": f"Round {index}.", "reason": "Budget moved."}))

    def score() -> None:
        start.wait()
        for index in range(SCORES):
            record("score", call("POST", f"{live_server.url}/api/v1/requests/{scored.pk}/scores/", reviewer,
                                 {"criterion": ("business_impact", "feasibility", "urgency")[index % 3],
                                  "value": index + 2}))

    def emergency() -> None:
        # The services in this thread, as the emergency page calls them: its own database connection, closed after.
        from django.db import connection

        start.wait()
        try:
            for index in range(EMERGENCIES):
                filed = emergencies.emergency_request_file(
                    actor=world.member_b, team=world.team_b, pool=world.a100, title=f"Hotfix {index}", gpu_count=2,
                    duration_hours=4, justification="A fraud wave.", now=FIXED_NOW)
                for member in (world.chair, world.reviewer):
                    emergencies.emergency_request_decide(actor=member, emergency=filed, approve=True, now=FIXED_NOW)
                record("emergency", EmergencyRequest.objects.get(pk=filed.pk).status)
        except Exception as error:  # a deadlock here would be the 500 the page answers
            record("emergency", type(error).__name__)
        finally:
            connection.close()

    threads = [threading.Thread(target=usage, args=(i,)) for i in range(PAIRS)]
    threads += [threading.Thread(target=edit, args=(i,)) for i in range(PAIRS)]
    threads += [threading.Thread(target=correct), threading.Thread(target=score), threading.Thread(target=emergency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(thread.is_alive() for thread in threads)

    assert answers == {"usage": Counter({201: PAIRS * ROUNDS}), "edit": Counter({200: PAIRS * ROUNDS}),
                       "correction": Counter({201: CORRECTIONS}), "score": Counter({200: SCORES}),
                       "emergency": Counter({"placed": EMERGENCIES})}, answers
    assert UsageRecord.objects.count() == PAIRS * ROUNDS  # one row for each 201, none for a failed try
    assert DecisionCorrection.objects.count() == CORRECTIONS
    assert AllocationPlan.objects.filter(week=world.cycle.week).count() == 1 + CORRECTIONS
    assert AllocationPlan.objects.filter(week=running.week).count() == EMERGENCIES  # one version per placement
