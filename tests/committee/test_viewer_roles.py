"""Who the viewer is, read once per request: a seat or a team that changes counts from the next request on."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest
import time_machine
from django.urls import reverse
from rest_framework.test import APIClient

from committee.models import CommitteeSeat, TeamMembership
from tests.factories import file_request


@pytest.fixture(autouse=True)
def clock():
    with time_machine.travel(datetime(2026, 12, 1, 10, 0, tzinfo=UTC), tick=False):
        yield


def test_a_seat_that_ends_closes_the_review_page_on_the_next_request(client, world):
    client.force_login(world.reviewer)
    page = reverse("committee:review-cycle", args=[world.cycle.week])
    assert client.get(page).status_code == 200
    CommitteeSeat.objects.filter(user=world.reviewer).update(active_to=date(2026, 11, 30))
    assert client.get(page).status_code == 403


def test_the_api_reads_the_roles_anew_for_each_request_even_for_one_user_instance(world):
    file_request(world)
    api = APIClient()
    api.force_authenticate(user=world.outsider)  # the same instance goes through every request
    assert api.get("/api/v1/requests/").json()["count"] == 0
    TeamMembership.objects.create(user=world.outsider, team=world.team_a)
    assert api.get("/api/v1/requests/").json()["count"] == 1
    CommitteeSeat.objects.create(user=world.outsider, role="finance", active_from=date(2026, 11, 1))
    assert api.get(f"/api/v1/cycles/{world.cycle.week}/ranking/").status_code == 200


def test_the_navigation_shows_committee_links_only_while_the_seat_lasts(client, world):
    client.force_login(world.reviewer)
    review = f'href="{reverse("committee:review")}"'
    assert review in client.get(reverse("reports:index")).content.decode()
    CommitteeSeat.objects.filter(user=world.reviewer).update(active_to=date(2026, 11, 30))
    assert review not in client.get(reverse("reports:index")).content.decode()
