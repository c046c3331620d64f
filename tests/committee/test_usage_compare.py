"""Last week's usage as stated by the team, next to what the schedulers measured, on the review and the request page."""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from allocations.models import UsageRecord
from committee import selectors, services, weeks
from committee.models import GpuRequest, UsageReport
from tests.committee.reviewing import bulk_requests, bulk_teams, close
from tests.factories import file_request


def _measure(world, team, pool, gpu_hours, utilization=80, *, start=None, hours=24):
    """One usage record, by default on the Tuesday of the week the cycle's requests report."""
    since, _until = weeks.week_bounds(weeks.reported_usage_week(world.cycle.week))
    start = start or since + timedelta(days=1)
    return UsageRecord.objects.create(
        pool=pool, team=team, period_start=start, period_end=start + timedelta(hours=hours),
        gpu_hours_used=gpu_hours, mean_utilization_pct=utilization,
        idempotency_key=f"{team.slug}:{pool.slug}:{start.isoformat()}",
    )


def _state(gpu_request, used, utilization=80):
    UsageReport.objects.filter(request=gpu_request).update(gpu_hours_used=used, mean_utilization_pct=utilization)


def _compare(gpu_request):
    fresh = GpuRequest.objects.select_related("team", "cycle", "pool__cluster", "usage_report").get(pk=gpu_request.pk)
    return selectors.measured_usage(requests=[fresh])[fresh.pk]


# --- the selector -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stated", "measured", "flagged", "shown_pct"),
    [
        (110, 100, False, 10),  # exactly 10% above: not flagged
        (90, 100, False, 10),  # exactly 10% below: not flagged
        (Decimal("110.1"), 100, True, 10),  # just over
        (Decimal("89.9"), 100, True, 10),
        (126, 100, True, 26),
        (100, 100, False, 0),
    ],
)
def test_a_gap_over_10_percent_of_the_measurement_is_flagged(world, stated, measured, flagged, shown_pct):
    gpu_request = file_request(world)
    _state(gpu_request, stated)
    _measure(world, world.team_a, world.a100, measured)
    usage = _compare(gpu_request)
    assert usage.measured and usage.measured_gpu_hours == Decimal(measured)
    assert usage.stated_gpu_hours == Decimal(stated)
    assert usage.flagged is flagged
    assert usage.gap_label_pct == shown_pct


def test_only_the_same_team_pool_and_week_are_measured(world):
    gpu_request = file_request(world)
    week = weeks.reported_usage_week(world.cycle.week)
    since, until = weeks.week_bounds(week)
    _measure(world, world.team_a, world.a100, 300, 90, start=since)  # Monday 00:00 committee time: counts
    _measure(world, world.team_a, world.a100, 100, 60, start=until - timedelta(hours=1), hours=1)  # last hour: counts
    _measure(world, world.team_a, world.a100, 999, start=until)  # the next week (intake week): not last week
    _measure(world, world.team_a, world.a100, 999, start=since - timedelta(seconds=1), hours=1)  # the week before
    _measure(world, world.team_a, world.h100, 999)  # another pool
    _measure(world, world.team_b, world.a100, 999)  # another team
    usage = _compare(gpu_request)
    assert usage.week == week
    assert usage.measured_gpu_hours == Decimal("400.0")
    assert usage.measured_utilization_pct == Decimal("82.5")  # weighted by GPU-hours: (300×90 + 100×60) / 400


def test_no_measurement_is_not_a_zero(world):
    gpu_request = file_request(world)
    usage = _compare(gpu_request)
    assert not usage.measured and usage.measured_gpu_hours is None
    assert usage.gap_pct is None and not usage.flagged


def test_use_stated_where_the_schedulers_measured_none_is_flagged(world):
    gpu_request = file_request(world)
    _measure(world, world.team_a, world.a100, 0, 0)
    usage = _compare(gpu_request)
    assert usage.measured and usage.measured_gpu_hours == 0
    assert usage.flagged and usage.gap_pct is None


# --- the pages --------------------------------------------------------------------------------


def _card(body: str, pk: int) -> str:
    start = body.index(f'id="request-{pk}"')
    end = body.find('<article id="request-', start + 1)
    return body[start:end if end != -1 else len(body)]


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_review_shows_stated_next_to_measured_and_flags_the_gap_in_words(client, world):
    week = weeks.reported_usage_week(world.cycle.week)
    close_enough = file_request(world, title="Close enough")
    _state(close_enough, 630, 75)
    _measure(world, world.team_a, world.a100, 600, 78)
    gap = file_request(world, team=world.team_b, title="Over-stated", pool=world.a100)
    _state(gap, 600, 90)
    _measure(world, world.team_b, world.a100, 480, 60)
    unmeasured = file_request(world, team=world.team_b, title="Never measured", pool=world.h100)
    close(world)
    client.force_login(world.reviewer)
    body = client.get(reverse("committee:review-cycle", args=[world.cycle.week])).content.decode()

    card = _card(body, close_enough.pk)
    assert 'data-flagged="false"' in card
    text = _text(card)
    assert f"Last week's usage: week {week} on atlas/a100" in text
    assert "GPU-hours used 630 600" in text and "Mean utilization 75.0% 78.0%" in text
    assert "Stated and measured agree within 10% (5% apart)." in text
    assert "Gap over 10%" not in text

    card = _card(body, gap.pk)
    assert 'data-flagged="true"' in card and 'class="usage-compare flagged"' in card
    text = _text(card)
    assert "GPU-hours used 600 480" in text
    # Not colour only: the flag is words, in a note.
    assert "Gap over 10%: the team stated 25% more GPU-hours than the schedulers measured." in text
    assert 'role="note"' in card

    text = _text(_card(body, unmeasured.pk))
    assert "GPU-hours used 600 not measured" in text
    assert f"Not measured: the schedulers reported no usage for Team B on orion/h100 in week {week}" in text


def test_the_ranking_marks_a_gap_and_keeps_the_mark_after_an_inline_score(client, world):
    gap = file_request(world, title="Over-stated")
    _state(gap, 600)
    _measure(world, world.team_a, world.a100, 480)
    fine = file_request(world, team=world.team_b, title="Close", pool=world.a100)
    _state(fine, 500)
    _measure(world, world.team_b, world.a100, 480)
    close(world)
    client.force_login(world.reviewer)

    def ranking_row(body, pk):
        ranking = body[body.index('id="ranking"'):]
        start = ranking.index(f'data-request="{pk}"')
        return _text(ranking[start:ranking.index("</tr>", start)])

    body = client.get(reverse("committee:review-cycle", args=[world.cycle.week])).content.decode()
    assert "⚠ stated usage 25% above measured" in ranking_row(body, gap.pk)
    assert "stated usage" not in ranking_row(body, fine.pk)
    saved = client.post(reverse("committee:review-score", args=[world.cycle.week, fine.pk]),
                        {"criterion": "business_impact", "value": "7"}, headers={"HX-Request": "true"})
    assert saved.status_code == 200
    # The ranking the page asks for after the save keeps its usage flags.
    refreshed = client.get(reverse("committee:review-ranking", args=[world.cycle.week]), headers={"HX-Request": "true"})
    assert "⚠ stated usage 25% above measured" in ranking_row(refreshed.content.decode(), gap.pk)


def test_the_fairness_explanation_says_it_counts_measured_usage(client, world):
    gpu_request = file_request(world)
    _measure(world, world.team_a, world.a100, 500)
    close(world)
    client.force_login(world.reviewer)
    body = client.get(reverse("committee:review-cycle", args=[world.cycle.week])).content.decode()
    assert ("of the recent A100-equivalent GPU-hours the schedulers measured (decayed; usage on lent GPUs counted at "
            "the policy&#x27;s factor; not the usage teams state on their requests)") in _card(body, gpu_request.pk)


def test_request_page_shows_stated_next_to_measured(client, world):
    gpu_request = file_request(world)
    _state(gpu_request, 400, 70)
    _measure(world, world.team_a, world.a100, 500, 85)
    client.force_login(world.lead_a)
    body = client.get(reverse("committee:request-detail", args=[gpu_request.pk])).content.decode()
    text = _text(body)
    assert "Stated by the team Measured by the schedulers" in text
    assert "GPU-hours used 400 500" in text and "Mean utilization 70.0% 85.0%" in text
    assert "Gap over 10%: the team stated 20% fewer GPU-hours than the schedulers measured." in text


def test_request_page_says_when_nothing_was_measured(client, world):
    gpu_request = file_request(world, team=world.team_b, pool=world.h100)
    client.force_login(world.member_b)
    text = _text(client.get(reverse("committee:request-detail", args=[gpu_request.pk])).content.decode())
    assert "GPU-hours used 600 not measured" in text
    assert "Not measured: the schedulers reported no usage for Team B on orion/h100" in text


def test_the_committee_sees_the_comparison_only_where_it_may_read_the_request(client, world):
    gpu_request = file_request(world)
    _measure(world, world.team_a, world.a100, 500)
    client.force_login(world.member_b)  # team B: not team A's request
    response = client.get(reverse("committee:request-detail", args=[gpu_request.pk]))
    assert response.status_code == 404
    assert "500.0" not in response.content.decode()


# --- query counts -----------------------------------------------------------------------------


def test_review_page_measures_every_request_in_one_query(client, world):
    teams = bulk_teams(30)
    close(world)
    week_start, _end = weeks.week_bounds(weeks.reported_usage_week(world.cycle.week))

    def measure(chosen):
        UsageRecord.objects.bulk_create(
            UsageRecord(pool=pool, team=team, period_start=week_start + timedelta(days=1),
                        period_end=week_start + timedelta(days=2), gpu_hours_used=80 + index % 20,
                        mean_utilization_pct=70, idempotency_key=f"bulk:{team.slug}:{pool.slug}")
            for index, team in enumerate(chosen) for pool in (world.a100, world.h100)
        )

    bulk_requests(world, teams[:2], scored_by=(world.chair, world.reviewer))
    measure(teams[:2])
    client.force_login(world.reviewer)
    page = reverse("committee:review-cycle", args=[world.cycle.week])
    client.get(page)  # warm the session
    services.cycle_ranking_changed(cycle=world.cycle)  # both reads rank the week (bulk_requests moves it too)
    with CaptureQueriesContext(connection) as few:
        body = client.get(page).content.decode()
    assert body.count('class="usage-compare') == 4
    bulk_requests(world, teams[2:], scored_by=(world.chair, world.reviewer))
    measure(teams[2:25])  # five teams stay unmeasured
    with CaptureQueriesContext(connection) as many:
        body = client.get(page).content.decode()
    assert len(many) == len(few), "\n".join(q["sql"] for q in many.captured_queries)
    # One read of the usage records for all 60 (the fair-share factors were frozen when intake closed).
    assert sum("allocations_usagerecord" in q["sql"] for q in many.captured_queries) == 1
    # The page shows ten request cards at a time: the 60 are on six pages.
    pages = [body] + [client.get(page, {"page": n}).content.decode() for n in range(2, 7)]
    assert sum(p.count('class="usage-compare') for p in pages) == 60
    assert sum(p.count("Not measured: the schedulers reported no usage") for p in pages) == 10
