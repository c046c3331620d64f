"""The banner above every page while the week's intake closes within 48 hours: for team members, saying what their
teams still have to do; gone once intake closes."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.urls import reverse

from committee import services
from tests.factories import file_request

pytestmark = pytest.mark.django_db


def banner(client: Any) -> str:
    page = client.get(reverse("committee:profile")).content.decode()
    if 'class="intake-banner"' not in page:
        return ""
    start = page.index('class="intake-banner"')
    return page[start:page.index("</aside>", start)]


def test_the_banner_shows_from_48_hours_before_intake_closes(world: Any, client: Any, pinned: Any) -> None:
    client.force_login(world.lead_a)
    closes = world.cycle.intake_closes_at
    pinned.move_to(closes - timedelta(hours=48, seconds=1))
    assert banner(client) == ""
    pinned.move_to(closes - timedelta(hours=48))
    text = banner(client)
    assert f"Intake for week {world.cycle.week} closes in 48 hours" in text
    assert "No request submitted yet: Team A." in text


def test_the_banner_says_what_is_left_and_goes_when_intake_closes(world: Any, client: Any, pinned: Any) -> None:
    file_request(world, title="Ranker retrain")  # Team A submitted
    file_request(world, team=world.team_b, title="Vision model", submit=False)  # Team B: a draft only
    closes = world.cycle.intake_closes_at
    pinned.move_to(closes - timedelta(hours=1, minutes=30))
    client.force_login(world.tech)  # tech lead, and a member of team B
    text = banner(client)
    assert "closes in 1 hour" in text
    assert "No request submitted yet: Team B." in text and "1 draft is not submitted." in text
    client.force_login(world.lead_a)
    assert "No request submitted yet" not in banner(client)
    pinned.move_to(closes)
    assert banner(client) == ""
    services.cycle_close_intake(cycle=world.cycle, actor=world.chair)
    assert banner(client) == ""


def test_no_banner_for_someone_in_no_team(world: Any, client: Any, pinned: Any) -> None:
    pinned.move_to(world.cycle.intake_closes_at - timedelta(hours=2))
    client.force_login(world.finance)
    assert banner(client) == ""
