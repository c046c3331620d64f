"""A week's decision record says which policy parameters changed before it was ranked, with who and why."""

from __future__ import annotations

import html
import re
from datetime import timedelta
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.translation import gettext as _
from django.utils.translation import pgettext

from allocations.models import Team
from committee import services as committee_services
from committee.services import cycle_create
from committee.weeks import week_label
from governed.services import policy_change_record
from reports.models import Page
from reports.selectors import revision_latest
from tests.committee.reviewing import close, decide, score
from tests.factories import file_request

pytestmark = pytest.mark.django_db

REASON = "Team A carries the company's ranking model from January; the board asked for twice the share."


def html_text(cell: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", cell)).strip()


def change_weight(team: Any, weight: int, *, by: Any, reason: str) -> None:
    team.fair_share_weight = weight
    team._change_reason = reason
    team._history_user = by  # who the admin would record (tests/committee/test_policy_history.py drives the admin)
    team.save()


def last_week_closed(world: Any) -> None:
    """The week before the world's cycle, its intake closed now."""
    week = week_label(timezone.localtime(world.cycle.starts_at).date() - timedelta(days=7))
    previous = cycle_create(week=week)
    previous.intake_closed_at = timezone.now()
    previous.save()


def finalize(world: Any, capture: Any) -> dict[str, Any]:
    first = file_request(world, title="Ranker retrain", gpu_count=16, min_gpu_count=8)
    close(world)
    for member in (world.chair, world.reviewer, world.finance):
        score(member, first, 9, 8, 9)
    decide(world, first, rationale="The ranking model pays for the quarter.")
    with capture(execute=True):
        world.cycle = committee_services.cycle_finalize(cycle=world.cycle, actor=world.chair)
    page = Page.objects.get(source_key=f"cycle:{world.cycle.week}")
    return {"data": revision_latest(page=page).data, "body": revision_latest(page=page).body, "slug": page.slug}


def test_a_weight_changed_before_intake_closed_is_in_the_record_with_who_and_why(
    world, clock, client, django_capture_on_commit_callbacks
):
    clock.shift(timedelta(minutes=5))
    change_weight(world.team_a, 4, by=world.chair, reason=REASON)
    record = finalize(world, django_capture_on_commit_callbacks)

    changed = [c for c in record["data"]["policy_changes"] if c["subject"] == "Team A" and c["action"] == "changed"]
    assert [(c["changes"], c["who"], c["reason"]) for c in changed] == [
        ([{"label": "fair-share weight", "old": "2", "new": "4", "field": "fair_share_weight"}], "Chair", REASON)
    ]
    assert "## Policy changes since the previous week" in record["body"]
    client.force_login(world.member_b)  # anyone signed in reads the archive
    page = client.get(reverse("reports:page", args=[record["slug"]])).content.decode()
    row = re.search(r"<tr>\s*<td>[^<]*10:05 UTC</td>(.*?)</tr>", page, re.S)
    assert row is not None, page
    cells = [html_text(cell) for cell in re.findall(r"<td>(.*?)</td>", row.group(1), re.S)]
    assert cells == ["Team: Team A", "changed (fair-share weight: 2 → 4)", "Chair", REASON]


def test_a_zh_hans_reader_reads_the_records_policy_changes_in_chinese(
    world, clock, client, django_capture_on_commit_callbacks
):
    clock.shift(timedelta(minutes=5))
    change_weight(world.team_a, 4, by=world.chair, reason=REASON)
    policy_change_record(  # the quorum, a governed value: its change is a version of the one store
        actor=world.chair, changes={"review.quorum": 3}, effective_week=world.cycle.week, reason="Three voices.",
        source="command")
    record = finalize(world, django_capture_on_commit_callbacks)
    client.force_login(world.member_b)
    page = client.get(reverse("reports:page", args=[record["slug"]]), HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    with translation.override("zh-hans"):
        expected = [str(_("Team")), str(pgettext("a policy change", "changed")), str(_("Review and fair share")),
                    str(Team._meta.get_field("fair_share_weight").verbose_name),
                    _("v%(n)d, from week %(week)s") % {"n": 2, "week": world.cycle.week}]
    for text in expected:
        assert text in page, text
    assert "fair-share weight" not in page and "Review and fair share" not in page and "changed (" not in page
    assert REASON in page and "Three voices." in page  # what people wrote, as written


def test_a_change_after_intake_closed_waits_for_the_next_weeks_record(world, clock, django_capture_on_commit_callbacks):
    first = file_request(world, title="Ranker retrain", gpu_count=16, min_gpu_count=8)
    close(world)
    clock.shift(timedelta(minutes=5))
    change_weight(world.team_b, 7, by=world.chair, reason="Decided after the intake closed.")
    for member in (world.chair, world.reviewer, world.finance):
        score(member, first, 9, 8, 9)
    decide(world, first, rationale="The ranking model pays for the quarter.")
    with django_capture_on_commit_callbacks(execute=True):
        world.cycle = committee_services.cycle_finalize(cycle=world.cycle, actor=world.chair)
    data = revision_latest(page=Page.objects.get(source_key=f"cycle:{world.cycle.week}")).data

    assert "Decided after the intake closed." not in [c["reason"] for c in data.get("policy_changes", [])]
    assert world.team_b.history.latest().history_change_reason == "Decided after the intake closed."


def test_changes_before_the_previous_weeks_intake_closed_are_left_to_that_weeks_record(
    world, clock, django_capture_on_commit_callbacks
):
    change_weight(world.team_b, 3, by=world.chair, reason="Told in last week's record.")
    # Last week's cycle closed its intake after that change; only what came after belongs to this week.
    clock.shift(timedelta(minutes=5))
    last_week_closed(world)
    clock.shift(timedelta(minutes=5))
    change_weight(world.team_a, 5, by=world.chair, reason=REASON)
    record = finalize(world, django_capture_on_commit_callbacks)

    reasons = [c["reason"] for c in record["data"]["policy_changes"]]
    assert REASON in reasons and "Told in last week's record." not in reasons
    assert not [c for c in record["data"]["policy_changes"] if c["action"] == "created"]  # the world's set-up is older


def test_a_week_without_policy_changes_says_nothing_of_them(world, clock, django_capture_on_commit_callbacks):
    clock.shift(timedelta(minutes=5))
    last_week_closed(world)
    record = finalize(world, django_capture_on_commit_callbacks)
    assert "policy_changes" not in record["data"]
    assert "Policy changes since the previous week" not in record["body"]
