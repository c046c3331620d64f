"""Each role lands where its work is; the review opens the week that needs work.

The demo walked again after `seed_demo --reset`: tests/test_week_walk_browser.py (the walk's own request and teams are
gone, the first steps work again); what the README's first step finds: tests/committee/test_seed_demo.py."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from committee import selectors, weeks
from committee.models import CycleStatus, ReviewCycle
from committee.services import cycle_create
from tests.committee.reviewing import close
from tests.conftest import make_user

pytestmark = pytest.mark.django_db


def landing(client: Client, user) -> str:
    client.force_login(user)
    return client.get("/", follow=True).redirect_chain[-1][0]


def test_a_team_member_lands_on_their_requests_and_a_committee_member_on_the_week_in_review(client, world):
    assert landing(client, world.lead_a) == reverse("committee:portal")
    close(world)
    for member in (world.reviewer, world.chair):
        assert landing(Client(), member) == reverse("committee:review-cycle", args=[world.cycle.week])


def _week_after(week: str, n: int = 1) -> str:
    return weeks.week_label(weeks.parse_week(week) + timedelta(days=7 * n))


def test_the_review_opens_the_week_that_needs_work(world):
    # world.cycle: next week, open for intake. An older week published, a newer one finalized and unpublished.
    published = cycle_create(week=_week_after(world.cycle.week, -1), status=CycleStatus.PUBLISHED)
    assert selectors.cycle_for_review() == world.cycle  # intake open: what comes in next, not last week
    finalized = cycle_create(week=_week_after(world.cycle.week, 1), status=CycleStatus.FINALIZED)
    assert selectors.cycle_for_review() == finalized  # the chair's next step: publish it
    in_review = cycle_create(week=_week_after(world.cycle.week, 2), status=CycleStatus.IN_REVIEW)
    assert selectors.cycle_for_review() == in_review
    ReviewCycle.objects.exclude(pk=published.pk).delete()
    assert selectors.cycle_for_review() == published  # nothing else: the latest published


def test_the_portal_tells_a_person_without_a_team_where_to_go(client, world):
    client.force_login(world.finance)
    page = client.get(reverse("committee:portal")).content.decode()
    assert "You sit on the committee" in page and f'href="{reverse("committee:review")}"' in page
    assert "Your teams have not filed" not in page
    client.force_login(make_user("newcomer"))
    page = client.get(reverse("committee:portal")).content.decode()
    assert "Ask your team's lead, or an administrator, to add you to your team." in page


def test_the_chair_opens_the_next_week_when_none_is_open_and_no_one_else_can(client, world):
    url = reverse("committee:cycle-open-following")
    ReviewCycle.objects.filter(pk=world.cycle.pk).update(status=CycleStatus.PUBLISHED)

    client.force_login(world.reviewer)
    assert client.post(url).status_code == 403
    client.force_login(world.lead_a)
    assert "Open the next week for intake" not in client.get(reverse("committee:portal")).content.decode()

    client.force_login(world.chair)
    assert "Open the next week for intake" in client.get(reverse("committee:portal")).content.decode()
    answer = client.post(url, follow=True)
    opened = ReviewCycle.objects.get(status=CycleStatus.OPEN)
    assert opened.week == _week_after(world.cycle.week)  # after the latest week, which exists already
    assert opened.intake_closes_at > timezone.now()
    assert f"Week {opened.week} is open for intake until" in answer.content.decode()

    again = client.post(url, follow=True)
    assert f"Week {opened.week} is already open for intake." in again.content.decode()
    assert ReviewCycle.objects.filter(status=CycleStatus.OPEN).count() == 1
