"""Copy last week's request: start from the team's request of an earlier week, moved into the open week."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.urls import reverse

from committee import services, weeks
from committee.models import (
    Alternative,
    CycleStatus,
    GpuRequest,
    ImpactForecast,
    RequestStatus,
    ReviewCycle,
    UsageReport,
)
from tests.committee.filing import form_data, local


def _filed(world, cycle, *, team=None, pool=None, start, end, deadline=None, title="Holiday ranker"):
    row = GpuRequest.objects.create(
        team=team or world.team_a, cycle=cycle, pool=pool or world.a100, title=title, gpu_count=16, min_gpu_count=8,
        duration_hours=24, earliest_start=start, latest_end=end, deadline=deadline, baseline_gpu_hours=900,
        slip_consequence="The launch slips.", status=RequestStatus.SUBMITTED, submitted_at=start - timedelta(days=3),
        preemptible_ok=True,
    )
    UsageReport.objects.create(request=row, gpu_hours_granted=700, gpu_hours_used=650, mean_utilization_pct=88)
    ImpactForecast.objects.create(request=row, kind="revenue", estimated_value=Decimal(75000), value_unit="USD/week",
                                  confidence="high", narrative="Holiday traffic peaks.")
    Alternative.objects.create(request=row, description="Distilled", gpu_hours=200, feasible=True)
    return row


@pytest.fixture
def new_year(clock, world):
    """Wednesday 30 December 2026: 2026-W53 was published, 2027-W01 is open for intake; team A filed in W53."""
    clock.move_to(datetime(2026, 12, 30, 10, tzinfo=UTC), tick=False)
    ReviewCycle.objects.filter(pk=world.cycle.pk).update(status=CycleStatus.PUBLISHED)
    w53 = services.cycle_create(week="2026-W53", status=CycleStatus.PUBLISHED)
    world.cycle = services.cycle_create(week="2027-W01")
    source = _filed(
        world, w53,
        start=datetime(2026, 12, 31, 10, tzinfo=UTC),  # Thursday 10:00
        end=datetime(2027, 1, 2, 10, tzinfo=UTC),  # Saturday 10:00
        deadline=datetime(2027, 1, 3, 12, tzinfo=UTC),  # Sunday 12:00
    )
    return source


def test_a_copy_from_week_53_moves_into_2027_w01_on_the_same_weekdays(client, world, new_year):
    source = new_year
    client.force_login(world.member_a)
    portal = client.get(reverse("committee:portal")).content.decode()
    link = f"{reverse('committee:request-create')}?copy={source.pk}"
    assert link in portal and "Copy “Holiday ranker”" in portal
    body = client.get(link).content.decode()
    assert 'name="earliest_start" value="2027-01-07 10:00"' in body  # Thursday 10:00 of W01
    assert 'name="latest_end" value="2027-01-09 10:00"' in body
    assert 'name="deadline" value="2027-01-10 12:00"' in body
    assert 'value="Holiday ranker"' in body and "Holiday traffic peaks." in body and 'value="Distilled"' in body
    assert 'name="usage-gpu_hours_used" value="650.0"' in body
    assert "Copied from “Holiday ranker” (Team A, atlas/a100, week 2026-W53)." in body
    assert "moved into week 2027-W01" in body and "Nothing is saved until you save the form." in body
    assert "clipped" not in body
    assert GpuRequest.objects.count() == 1  # nothing saved by looking


def test_the_copy_is_saved_only_when_the_form_is(client, world, new_year):
    source = new_year
    client.force_login(world.member_a)
    data = form_data(
        world, title="Holiday ranker", duration_hours="24", earliest_start="2027-01-07 10:00",
        latest_end="2027-01-09 10:00", deadline="2027-01-10 12:00", copy=str(source.pk),
    )
    response = client.post(reverse("committee:request-create"), data)
    assert response.status_code == 302
    copied = GpuRequest.objects.get(cycle=world.cycle)
    assert copied.earliest_start == datetime(2027, 1, 7, 10, tzinfo=UTC)
    assert copied.status == RequestStatus.DRAFT and copied.carried_from is None
    assert copied.events.get(action="created").detail == "copied from “Holiday ranker”, week 2026-W53"


def test_bad_input_on_a_copy_stores_nothing_and_keeps_the_notice(client, world, new_year):
    source = new_year
    client.force_login(world.member_a)
    data = form_data(world, copy=str(source.pk), gpu_count="", latest_end="2027-01-12 00:00")
    response = client.post(reverse("committee:request-create"), data)
    assert response.status_code == 400
    body = response.content.decode()
    assert "Copied from “Holiday ranker”" in body
    assert "The window must lie within week 2027-W01: end by Mon 11 Jan 2027, 00:00 UTC." in body
    assert GpuRequest.objects.count() == 1


def test_a_window_past_its_week_is_clipped_to_the_new_one(client, world, new_year):
    late = _filed(
        world, new_year.cycle, pool=world.h100, title="Runs over", start=datetime(2027, 1, 3, 12, tzinfo=UTC),
        end=datetime(2027, 1, 4, 12, tzinfo=UTC),  # past W53's end (Monday 4 January 00:00)
    )
    client.force_login(world.member_a)
    body = client.get(f"{reverse('committee:request-create')}?copy={late.pk}").content.decode()
    assert 'name="earliest_start" value="2027-01-10 12:00"' in body
    assert 'name="latest_end" value="2027-01-11 00:00"' in body  # W01's end, not Monday noon of W02
    assert "clipped to week 2027-W01" in body


def test_another_team_s_request_cannot_be_copied(client, world, new_year):
    client.force_login(world.member_b)
    body = client.get(f"{reverse('committee:request-create')}?copy={new_year.pk}").content.decode()
    assert "That request cannot be copied" in body
    assert "Holiday ranker" not in body
    for raw in ("abc", "99999", "-1"):
        assert "That request cannot be copied" in client.get(
            f"{reverse('committee:request-create')}?copy={raw}").content.decode()


def test_a_request_of_the_open_week_is_not_a_copy_source(client, world, new_year):
    this_week = _filed(world, world.cycle, pool=world.h100, title="This week's", start=world.cycle.starts_at,
                       end=world.cycle.starts_at + timedelta(hours=48))
    client.force_login(world.member_a)
    body = client.get(f"{reverse('committee:request-create')}?copy={this_week.pk}").content.decode()
    assert "That request cannot be copied" in body


@pytest.mark.parametrize(
    ("moment", "from_week", "to_week", "moved"),
    [
        ("2026-12-28T00:00", "2026-W53", "2027-W01", "2027-01-04T00:00"),  # Monday 00:00
        ("2027-01-03T23:59", "2026-W53", "2027-W01", "2027-01-10T23:59"),  # the last minute of week 53
        ("2026-12-02T10:00", "2026-W49", "2026-W50", "2026-12-09T10:00"),
        ("2027-01-04T06:00", "2026-W53", "2027-W01", "2027-01-11T00:00"),  # past its week: clipped
    ],
)
def test_moment_into_week(moment, from_week, to_week, moved):
    result = weeks.moment_into_week(datetime.fromisoformat(moment).replace(tzinfo=UTC), from_week=from_week,
                                    to_week=to_week)
    assert result == datetime.fromisoformat(moved).replace(tzinfo=UTC)


def test_moment_into_week_keeps_the_wall_clock_across_summer_time(settings):
    settings.TIME_ZONE = "Europe/Berlin"
    # Monday 09:00 in Berlin in the last winter-time week and in the first summer-time week of 2026.
    winter = datetime(2026, 3, 23, 9, tzinfo=weeks.committee_zone())
    moved = weeks.moment_into_week(winter, from_week="2026-W13", to_week="2026-W14")
    assert moved.astimezone(weeks.committee_zone()).strftime("%a %H:%M") == "Mon 09:00"
    assert moved == datetime(2026, 3, 30, 7, tzinfo=UTC)
    assert local(moved)  # the form shows it


def test_the_portal_offers_no_copy_without_an_earlier_request(client, world):
    client.force_login(world.member_a)
    assert "start from an earlier week" not in client.get(reverse("committee:portal")).content.decode()
