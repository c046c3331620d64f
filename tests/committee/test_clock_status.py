"""The weekly clock's state where people look for it: the chair's clock page and /readyz's details."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from django.test import Client
from django.urls import reverse

from committee import services
from tests.readable import assert_readable


def test_the_chair_sees_a_missed_close_as_overdue_then_done_once_the_clock_has_run(world: Any, client: Client,
                                                                                   clock: Any) -> None:
    closes = world.cycle.intake_closes_at
    clock.move_to(closes + timedelta(minutes=5), tick=False)  # the broker was down at the close: nothing ran
    client.force_login(world.chair)
    page = client.get(reverse("committee:clock-status"))
    html = page.content.decode()
    assert page.status_code == 200
    assert "The clock has never run." in html and "The clock is not running" in html
    assert 'id="clock-overdue"' in html
    row = html[html.index('id="clock-close_intake"'):html.index('id="clock-open_cycle"')]
    assert f"{world.cycle.week}, due since" in row and "overdue" in row
    assert_readable(html)

    services.clock_tick(now=closes + timedelta(minutes=5))
    html = client.get(reverse("committee:clock-status")).content.decode()
    assert "The clock is not running" not in html and "overdue" not in html
    row = html[html.index('id="clock-close_intake"'):html.index('id="clock-open_cycle"')]
    assert "nothing" in row and f"{world.cycle.week} in review" in row
    assert_readable(html)


def test_the_clock_page_is_the_chairs(world: Any, client: Client) -> None:
    client.force_login(world.reviewer)
    assert client.get(reverse("committee:clock-status")).status_code == 403


def test_readyz_details_say_what_the_clock_owes_and_stay_ready(world: Any, clock: Any) -> None:
    closes = world.cycle.intake_closes_at
    clock.move_to(closes + timedelta(minutes=5), tick=False)
    response = Client().get("/readyz")
    body = json.loads(response.content)
    assert response.status_code == 200 and body["status"] == "ready"  # a clock behind does not take the site out
    assert body["clock"]["ticking"] is False and body["clock"]["last_tick"] is None
    assert {"job": "close_intake", "period": world.cycle.week} in body["clock"]["overdue"]
    services.clock_tick(now=closes + timedelta(minutes=5))
    body = json.loads(Client().get("/readyz").content)
    assert body["clock"]["ticking"] is True and body["clock"]["due"] == [] and body["clock"]["overdue"] == []
