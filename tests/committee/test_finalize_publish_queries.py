"""Finalizing and publishing a week run the same number of queries for 3 requests as for 30.

Both include writing the week's decision record to the archive, which happens in the same
transaction; so does the task that records the teams' "decision published" notifications after
the commit. The counts are pinned so that a query per request (a save or an event in a loop)
shows up as a failure here.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import time_machine
from django.db import connection

from committee import services
from committee.models import CycleStatus, RequestEvent
from reports.models import Page
from reports.selectors import revision_latest
from tests.conftest import build_world
from tests.reports.big_week import big_week

PINNED = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
FINALIZE_QUERIES = 75  # the ranking (its score tallies; the alternatives are not read to rank), the record: decided
# and placed (request_outcome_map), the week's corrections and appeals,
# the policy changes since the week before (five history tables and the governed quorum and fair share), the quorum
# in force for the week (committee.selectors.governance_for_week, read by the ranking and the finalize), and the
# discussion the review shows (questions, comments, stale marks, conflicts) and the recusals the record lists; the
# rubric in force for the week (committee.selectors.rubric_for_week, read by the ranking, the review and the record),
# the page of the rules' version it is, and the pools' reserve changes in the store for the policy changes
PUBLISH_QUERIES = 89  # the record twice (decided and placed, corrections, appeals, policy changes, governance,
# recusals, the rubric in force and its version's page); a plan an emergency made; the pools' reserves in force for
# the week (governed); the budget alert's outbox message (four: its departments' budgets are read by the task)


@pytest.fixture
def world(db):
    from governed.services import policy_version_1

    policy_version_1()  # as migrated: an earlier transactional test's flush may have removed it
    with time_machine.travel(PINNED, tick=False):
        yield build_world()


@pytest.mark.parametrize("requests", [3, 30])
def test_finalize_and_publish_run_a_constant_number_of_queries(world, requests, django_assert_num_queries):
    big_week(world, requests=requests)

    with django_assert_num_queries(FINALIZE_QUERIES):
        cycle = services.cycle_finalize(cycle=world.cycle, actor=world.chair)
    with django_assert_num_queries(PUBLISH_QUERIES):
        plan = services.cycle_publish(actor=world.chair, cycle=cycle)

    cycle.refresh_from_db()
    assert cycle.status == CycleStatus.PUBLISHED and plan.windows.count() == requests
    assert RequestEvent.objects.filter(action="decided").count() == requests
    assert RequestEvent.objects.filter(action="published").count() == requests
    record = revision_latest(page=Page.objects.get(source_key=f"cycle:{cycle.week}"))
    assert len(record.data["plan"]["windows"]) == requests, connection.vendor


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
