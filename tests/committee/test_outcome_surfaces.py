"""Every surface says decided and placed in the same words and numbers, and the difference with its reason.

One contended, published week (tests/committee/contended.py): team A's 40-GPU grant placed as decided,
team B's 16-GPU grant shortened to 6, team A's 24-GPU grant on orion/h100 not placed.
"""

from __future__ import annotations

import csv
import io
import re
from datetime import timedelta

from django.core import mail
from django.urls import reverse
from django.utils import timezone

from committee import selectors, services
from committee.services import personal_token_create
from reports.models import Page
from tests.committee.contended import ContendedWeek, contended_week


def _week(world, django_capture_on_commit_callbacks) -> ContendedWeek:
    with django_capture_on_commit_callbacks(execute=True):
        return contended_week(world)


def _text(html: str) -> str:
    """A page's text, tags removed and spaces squeezed, as a reader sees it."""
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def _record(world) -> str:
    page = Page.objects.select_related("latest_revision").get(source_key=f"cycle:{world.cycle.week}")
    assert page.latest_revision is not None
    return page.latest_revision.body


def _digest_for(user) -> str:
    services.digests_send(now=timezone.now() + timedelta(days=1))
    bodies = [m.body for m in mail.outbox if user.email in m.to]
    assert len(bodies) == 1
    return str(bodies[0])


def test_the_request_page_shows_decided_placed_and_the_difference(client, world, django_capture_on_commit_callbacks):
    week = _week(world, django_capture_on_commit_callbacks)
    client.force_login(world.member_b)
    page = _text(client.get(reverse("committee:request-detail", args=[week.shortened.pk])).content.decode())
    assert "Decided Grant, 16 GPUs (768 GPU-hours)" in page
    assert "Placed 6 A100, Tue 00:00–Thu 00:00, standard (288 GPU-hours)" in page
    assert "Difference shortened (6 of 16 GPUs)" in page
    assert "Why shortened to 6 GPUs: only 6 free for 48 h between Tue 00:00 and Thu 00:00" in page

    client.force_login(world.lead_a)
    unplaced = _text(client.get(reverse("committee:request-detail", args=[week.unplaced.pk])).content.decode())
    assert "Placed not placed" in unplaced and "Difference" not in unplaced  # said once
    assert "Why not placed: needs at least 24 GPUs, the orion/h100 pool has 23 for standard windows" in unplaced
    assert "capacity this week" not in unplaced
    assert "Placed windows" not in unplaced


def test_the_portal_has_an_outcome_column(client, world, django_capture_on_commit_callbacks):
    week = _week(world, django_capture_on_commit_callbacks)
    client.force_login(world.lead_a)
    page = _text(client.get(reverse("committee:portal")).content.decode())
    assert "Outcome: decided → placed" in page
    assert "Grant 40 → placed 40" in page
    assert "Grant 24 → not placed not placed" in page  # the summary, and the difference beneath it
    assert week.shortened.title not in page  # team B's request is not team A's to see
    client.force_login(world.member_b)
    page_b = _text(client.get(reverse("committee:portal")).content.decode())
    assert "Grant 16 → placed 6 (shortened) shortened (6 of 16 GPUs)" in page_b and "Defer" in page_b


def test_the_decision_record_lists_shortened_and_unplaced_grants(world, django_capture_on_commit_callbacks):
    week = _week(world, django_capture_on_commit_callbacks)
    body = _record(world)
    section = body.split("## Shortened, demoted and unplaced grants", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| [[request:")]
    assert len(rows) == 2
    assert rows[0].startswith(
        f"| [[request:{week.shortened.pk}\\|Vision model]] | Team B | Grant, 16 GPUs (768 GPU-hours) |")
    assert "| shortened \\(6 of 16 GPUs\\) |" in rows[0] and "288 GPU\\-hours" in rows[0]
    assert rows[1].startswith(
        f"| [[request:{week.unplaced.pk}\\|Speech model]] | Team A | Grant, 24 GPUs (1,152 GPU-hours) |")
    assert "| not placed | not placed: needs at least 24 GPUs" in rows[1]
    assert "Grant 16 → placed 6 \\(shortened\\)" in body  # the ranking's decision column


def test_the_record_before_publish_says_the_placement_is_to_come(world, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        contended_week(world, publish=False)
    body = _record(world)
    assert "Not published yet: the engine places the grants when the chair publishes the plan" in body
    assert "Grant 16 → not yet published" in body


def test_the_digest_says_decided_placed_and_why(world, django_capture_on_commit_callbacks):
    _week(world, django_capture_on_commit_callbacks)
    to_b = " ".join(_digest_for(world.member_b).split())
    assert ("Team B: “Vision model” — decided: Grant, 16 GPUs (768 GPU-hours); placed: 6 A100, Tue 00:00–Thu 00:00, "
            "standard (288 GPU-hours), shortened (6 of 16 GPUs); the engine: shortened to 6 GPUs") in to_b
    assert "Team B: “Search index” — decided: Defer (week" in to_b
    to_a = " ".join(_digest_for(world.lead_a).split())
    assert ("Team A: “Speech model” — decided: Grant, 24 GPUs (1,152 GPU-hours); not placed: needs at least 24 GPUs"
            in to_a)
    assert "placed: 40 A100, Tue 00:00–Thu 00:00, priority (1,920 GPU-hours), as decided" in to_a


def test_the_dashboards_show_decided_and_placed_series(client, world, django_capture_on_commit_callbacks):
    _week(world, django_capture_on_commit_callbacks)
    client.force_login(world.chair)
    week = world.cycle.week
    response = client.get(reverse("reports:dashboard-csv", args=["granted-used"]), {"first_week": week,
                                                                                      "last_week": week})
    rows = {row["Team"]: row for row in csv.DictReader(io.StringIO(response.content.decode()))}
    # Both pools weigh 1 A100-equivalent until a change: 40×48 + 24×48.
    assert (rows["Team A"]["Decided A100-eq GPU-h"], rows["Team A"]["Placed A100-eq GPU-h"]) == ("3072.0", "1920.0")
    assert (rows["Team B"]["Decided A100-eq GPU-h"], rows["Team B"]["Placed A100-eq GPU-h"]) == ("768.0", "288.0")
    demand = client.get(reverse("reports:dashboard-csv", args=["demand-capacity"]), {"first_week": week,
                                                                                       "last_week": week})
    (row,) = csv.DictReader(io.StringIO(demand.content.decode()))
    assert (row["Decided A100-eq GPU-h"], row["Placed A100-eq GPU-h"]) == ("3840.0", "2208.0")


def test_the_same_numbers_on_every_surface(client, world, django_capture_on_commit_callbacks):
    week = _week(world, django_capture_on_commit_callbacks)
    outcome = selectors.request_outcome_get(gpu_request=week.shortened)
    numbers = ("16 GPUs (768 GPU-hours)", "6 A100, Tue 00:00–Thu 00:00, standard (288 GPU-hours)",
               "shortened (6 of 16 GPUs)")
    assert (outcome.decided_text.split(", ", 1)[1], outcome.placed_text, outcome.status_label) == numbers

    client.force_login(world.member_b)
    request_page = _text(client.get(reverse("committee:request-detail", args=[week.shortened.pk])).content.decode())
    portal = _text(client.get(reverse("committee:portal")).content.decode())
    record = _record(world).replace("\\", "")  # Markdown escapes
    digest = " ".join(_digest_for(world.member_b).split())
    _row, token = personal_token_create(user=world.member_b, name="surfaces")
    api = client.get(f"/api/v1/requests/{week.shortened.pk}/", HTTP_AUTHORIZATION=f"Token {token}").json()
    placement = api["placement"]
    api_text = f"{placement['decided_gpu_count']} GPUs ({placement['decided_gpu_hours']} GPU-hours) " + \
        f"{placement['windows'][0]['text']} ({placement['placed_gpu_hours']} GPU-hours) {placement['status_label']}"
    for name, surface in (("request page", request_page), ("record", record), ("digest", digest),
                          ("api", api_text)):
        for number in numbers:
            assert number in surface, (name, number)
    assert outcome.summary in portal and outcome.status_label in portal
    assert outcome.summary == placement["summary"] == "Grant 16 → placed 6 (shortened)"
    assert outcome.reason == placement["explanation"] and outcome.reason in request_page
