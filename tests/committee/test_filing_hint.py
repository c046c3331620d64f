"""The forward calendar's hint on the request form (docs/multi-week-runs.md): how committed the pool is in the
window chosen, and in how many of the weeks before a request of that size was placed, computed by the server."""

from __future__ import annotations

import re

from django.urls import reverse

from committee.models import GpuRequest
from tests.committee.test_multiweek_runs import next_week, publish_week, run_fields
from tests.factories import file_request

HINT = reverse("committee:request-filing-hint")


def hint_text(html: str) -> str:
    inside = html.split('id="filing-hint"', 1)[1].split(">", 1)[1].split("</div>", 1)[0]
    return " ".join(re.sub(r"<[^>]+>", " ", inside).split())


def fields(world, **overrides):
    values = {"pool": world.a100.pk, "gpu_count": "16", "run_weeks": "1",
              "earliest_start": world.cycle.starts_at.strftime("%Y-%m-%d %H:%M"),
              "latest_end": world.cycle.ends_at.strftime("%Y-%m-%d %H:%M")}
    values.update(overrides)
    return values


def test_the_hint_counts_a_runs_commitment_in_the_window_and_the_weeks_a_request_of_the_size_was_placed(world, client):
    run = file_request(world, **run_fields(world))  # 16 GPUs on atlas/a100, the last 48 h of W50, then W51 and W52
    publish_week(world, (run, 6))
    next_week(world)  # W51, open for intake: the run's week 2 holds 16 GPUs of it
    client.force_login(world.member_b)
    burst, standby, _fast_lane = world.a100.reserves()  # no fast lane here (0 %)
    placeable = 64 - (64 * burst // 100 + 64 * standby // 100)

    answer = client.get(HINT, fields(world))

    assert answer.status_code == 200
    text = hint_text(answer.content.decode())
    assert f"atlas/a100 is {round(100 * 16 / placeable)}% committed in your window, Mon 14 Dec, 00:00 UTC to " \
           "Mon 21 Dec, 00:00 UTC" in text
    assert "A request of 16 GPUs or more was placed on it in 1 of the last 1 published week." in text
    bigger = hint_text(client.get(HINT, fields(world, gpu_count="17")).content.decode())
    assert "A request of 17 GPUs or more was placed on it in 0 of the last 1 published week." in bigger
    # Half the week, Thursday on: the run holds it all the same, so the share is the same.
    late = fields(world, earliest_start=(world.cycle.starts_at.replace(day=17)).strftime("%Y-%m-%d %H:%M"))
    assert f"is {round(100 * 16 / placeable)}% committed" in hint_text(client.get(HINT, late).content.decode())
    # The other pool: nothing held there.
    h100 = client.get(HINT, fields(world, pool=world.h100.pk))
    assert "orion/h100 is 0% committed" in hint_text(h100.content.decode())
    # A run of two weeks reaches into W52, which the run holds too.
    two = hint_text(client.get(HINT, fields(world, run_weeks="2")).content.decode())
    assert "to Mon 28 Dec, 00:00 UTC" in two and f"is {round(100 * 16 / placeable)}% committed" in two


def test_the_hint_waits_for_valid_fields_and_changes_nothing(world, client):
    client.force_login(world.member_a)
    before = GpuRequest.objects.count()
    for odd in ({"pool": "x"}, {"gpu_count": "²"}, {"gpu_count": "0"}, {"latest_end": "yesterday"},
                {"pool": "999999"}, {"run_weeks": "-1"}):
        answer = client.get(HINT, fields(world, **odd))
        assert answer.status_code == 200, odd
        assert "Choose the pool, the GPUs and the window" in hint_text(answer.content.decode()), odd
    assert GpuRequest.objects.count() == before
    assert "Choose the pool" in hint_text(client.get(reverse("committee:request-create")).content.decode())
    client.logout()
    assert client.get(HINT, fields(world)).status_code == 302


def test_editing_a_request_shows_the_hint_for_its_own_pool_and_window(world, client):
    gpu_request = file_request(world, gpu_count=8)
    client.force_login(world.member_a)
    text = hint_text(client.get(reverse("committee:request-edit", args=[gpu_request.pk])).content.decode())
    assert text.startswith("atlas/a100 is 0% committed in your window")
    assert "No earlier week has a published plan to compare with." in text
