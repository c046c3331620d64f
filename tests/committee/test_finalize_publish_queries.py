"""Finalizing and publishing a week run the same number of queries for 3 requests as for 30.

The chair waits for the transaction only: it writes the decisions, the plan, the events and two outbox messages
(the week's decision record, the teams' "decision published" notifications). The record is written after commit by
the outbox's task, in a number of queries of its own that does not grow with the week either (at 1,000 requests it
grows by a few queries per archive page the record is split over: bench/finalize_queries.py). The counts are
pinned so that a query per request (a save or an event in a loop) shows up as a failure here.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import time_machine
from django.db import connection

from committee import selectors, services
from committee.models import CycleStatus, RequestEvent
from reports.models import Page
from reports.selectors import revision_latest
from tests.conftest import build_world
from tests.reports.big_week import big_week

PINNED = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
FINALIZE_QUERIES = 18  # the ranking (its score tallies, the quorum and rubric in force for the week), the decisions,
# the events, the requests' status, the cycle, and the record's outbox message (whether its address is free)
PUBLISH_QUERIES = 43  # the placement (the decisions and the other pools they name, the pools and their reserves for
# the week, the windows already started), the plan and its windows, the events, the cycle, the two outbox messages;
# the runs over several weeks (docs/multi-week-runs.md): the commitments carried in, the continuation threshold, the
# week's runs to commit (their windows are read back only in a week that has runs: one query more); the budget
# alert's outbox message (four: its departments' budgets are read by the task)
RECORD_AT_FINALIZE_QUERIES = 76  # after commit: the outbox's task writes the record (decided and placed, the week's
# corrections and appeals, the policy changes since the week before (the store's pool reserves and prices apart), the
# discussion, recusals and waivers of conflicts found (docs/conflicts.md), the rubric's page, the runs carried into
# the week, the later weeks this week's runs committed, the grants given back and extended, the other pools the grants
# name)
RECORD_AT_PUBLISH_QUERIES = 97  # after commit: the record again, with the plan; the notifications' task; the budget
# alert's task (the departments' budgets and what they were charged)


@pytest.fixture
def world(db):
    from governed.services import policy_version_1

    policy_version_1()  # as migrated: an earlier transactional test's flush may have removed it
    with time_machine.travel(PINNED, tick=False):
        yield build_world()


@pytest.mark.parametrize("requests", [3, 30])
def test_finalize_and_publish_run_a_constant_number_of_queries(
    world, requests, django_assert_num_queries, django_capture_on_commit_callbacks
):
    big_week(world, requests=requests)

    with django_capture_on_commit_callbacks() as after_finalize, django_assert_num_queries(FINALIZE_QUERIES):
        cycle = services.cycle_finalize(cycle=world.cycle, actor=world.chair)
    with django_assert_num_queries(RECORD_AT_FINALIZE_QUERIES):
        for callback in after_finalize:
            callback()
    with django_capture_on_commit_callbacks() as after_publish, django_assert_num_queries(PUBLISH_QUERIES):
        plan = services.cycle_publish(actor=world.chair, cycle=cycle)
    with django_assert_num_queries(RECORD_AT_PUBLISH_QUERIES):
        for callback in after_publish:
            callback()

    cycle.refresh_from_db()
    assert cycle.status == CycleStatus.PUBLISHED and plan.windows.count() == requests
    assert RequestEvent.objects.filter(action="decided").count() == requests
    assert RequestEvent.objects.filter(action="published").count() == requests
    record = revision_latest(page=Page.objects.get(source_key=f"cycle:{cycle.week}"))
    assert len(record.data["plan"]["windows"]) == requests, connection.vendor
    assert selectors.cycle_record_progress(cycle=cycle).up_to_date  # what the chair reads on the week's page


NOTIFY_QUERIES = 11  # with each decision's placement: request_outcome_map's five


@pytest.mark.parametrize("requests", [3, 30])
def test_the_teams_hear_of_a_published_week_in_a_constant_number_of_queries(
    world, requests, django_assert_num_queries
):
    from django.contrib.auth import get_user_model

    from allocations.models import Team
    from committee.models import Notification, NotificationKind, TeamMembership

    big_week(world, requests=requests)
    teams = list(Team.objects.filter(slug__startswith="big-"))
    users = get_user_model().objects.bulk_create(
        get_user_model()(username=f"member-{team.slug}", first_name="Member") for team in teams
    )
    TeamMembership.objects.bulk_create(TeamMembership(user=u, team=t) for u, t in zip(users, teams, strict=True))
    cycle = services.cycle_finalize(cycle=world.cycle, actor=world.chair)
    plan = services.cycle_publish(actor=world.chair, cycle=cycle)

    with django_assert_num_queries(NOTIFY_QUERIES):
        recorded = services.notifications_deliver(
            kind=NotificationKind.DECISION_PUBLISHED, arguments={"cycle_id": cycle.pk, "plan_id": plan.pk}
        )

    assert recorded == requests  # one member per team, one notification per decided request
    assert Notification.objects.filter(kind=NotificationKind.DECISION_PUBLISHED).count() == requests
    assert services.notifications_deliver(
        kind=NotificationKind.DECISION_PUBLISHED, arguments={"cycle_id": cycle.pk, "plan_id": plan.pk}
    ) == 0  # idempotent
