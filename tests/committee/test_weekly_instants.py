"""The instants where weekly code breaks, each tested on purpose in the committee's zone (Europe/Berlin).

Monday 00:00, the Friday 18:00 intake close, Sunday 23:59, ISO week 53 (2026-W53 begins Monday
2026-12-28 and holds 1 January 2027), the year boundary, and both changes of summer time (2026-10-25,
when a day has 25 hours and its week 169; 2027-03-28, 23 and 167).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from django.core import mail
from django.core.exceptions import ValidationError
from rest_framework.test import APIClient

from allocations import engine
from allocations.models import UsageRecord
from allocations.selectors import usage_gpu_hours_by_team_per_week
from committee import calendar, services, weeks
from committee.models import CycleStatus, ReviewCycle
from committee.services.notifications import digests_send, notifications_record
from tests.allocations.plans import W, bearer, publish, token_for
from tests.factories import file_request

BERLIN = ZoneInfo("Europe/Berlin")


def berlin(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=BERLIN)


@pytest.fixture
def committee_zone(settings):
    settings.TIME_ZONE = "Europe/Berlin"


# --- week labels and bounds -------------------------------------------------------------------------------


@pytest.mark.parametrize(("day", "label"), [
    (date(2026, 12, 27), "2026-W52"),  # Sunday before week 53
    (date(2026, 12, 28), "2026-W53"),  # Monday of week 53
    (date(2026, 12, 31), "2026-W53"),
    (date(2027, 1, 1), "2026-W53"),  # New Year's Day belongs to 2026's last week
    (date(2027, 1, 3), "2026-W53"),
    (date(2027, 1, 4), "2027-W01"),
    (date(2025, 12, 29), "2026-W01"),  # and the other way round: a December day in next year's first week
])
def test_week_label_follows_iso_weeks_across_the_year_boundary(day, label):
    assert weeks.week_label(day) == label
    assert weeks.parse_week(label) <= day < weeks.parse_week(label) + timedelta(days=7)


def test_week_53_exists_only_in_years_that_have_it():
    assert weeks.parse_week("2026-W53") == date(2026, 12, 28)
    for impossible in ("2025-W53", "2027-W53", "2026-W54", "2026-W00"):
        with pytest.raises(ValueError, match="is not a week of"):
            weeks.parse_week(impossible)


def test_the_week_changes_at_monday_00_00_committee_time_not_utc(committee_zone):
    sunday_late = berlin(2026, 12, 27, 23, 59, 59)
    monday = berlin(2026, 12, 28, 0, 0)
    assert monday.astimezone(UTC).date() == date(2026, 12, 27)  # still Sunday in UTC
    assert weeks.current_week_label(sunday_late) == "2026-W52"
    assert weeks.current_week_label(monday) == "2026-W53"
    assert weeks.next_week_label(sunday_late) == "2026-W53"
    assert weeks.next_week_label(monday) == "2027-W01"


@pytest.mark.parametrize(("week", "hours"), [
    ("2026-W43", 169),  # 19–26 October 2026: summer time ends on Sunday the 25th, a day of 25 hours
    ("2027-W12", 167),  # 22–29 March 2027: summer time starts on Sunday the 28th, a day of 23 hours
    ("2026-W53", 168),
    ("2026-W49", 168),
])
def test_week_bounds_are_local_midnights_and_a_week_has_the_hours_it_really_has(committee_zone, week, hours):
    start, end = weeks.week_bounds(week)
    assert (start.hour, start.minute, start.weekday()) == (0, 0, 0)
    assert (end.hour, end.minute, end.weekday()) == (0, 0, 0)
    assert weeks.week_hours(week) == hours
    assert (end.astimezone(UTC) - start.astimezone(UTC)) == timedelta(hours=hours)


def test_week_53_runs_from_monday_28_december_into_the_new_year(committee_zone):
    start, end = weeks.week_bounds("2026-W53")
    assert start == berlin(2026, 12, 28) and end == berlin(2027, 1, 4)
    assert start.astimezone(UTC) == datetime(2026, 12, 27, 23, 0, tzinfo=UTC)


# --- cycle deadlines and the beat jobs --------------------------------------------------------------------


@pytest.mark.parametrize(("week", "closes", "review"), [
    ("2026-W53", berlin(2026, 12, 25, 18, 0), berlin(2026, 12, 28, 9, 0)),
    ("2027-W01", berlin(2027, 1, 1, 18, 0), berlin(2027, 1, 4, 9, 0)),  # intake closes inside week 53
    ("2026-W44", berlin(2026, 10, 23, 18, 0), berlin(2026, 10, 26, 9, 0)),  # across the end of summer time
    ("2027-W13", berlin(2027, 3, 26, 18, 0), berlin(2027, 3, 29, 9, 0)),  # across its start
])
def test_cycle_calendar_keeps_committee_hours_across_the_year_and_summer_time(committee_zone, week, closes, review):
    schedule = weeks.cycle_schedule(week)
    assert schedule["intake_closes_at"] == closes and schedule["review_at"] == review
    assert schedule["starts_at"] == berlin(*weeks.parse_week(week).timetuple()[:3])
    assert schedule["intake_closes_at"].astimezone(BERLIN).hour == 18


@pytest.fixture
def week_53_intake(world, committee_zone):
    """Intake for 2027-W01, which closes on New Year's Day (in week 53) at 18:00 Berlin."""
    ReviewCycle.objects.filter(pk=world.cycle.pk).delete()
    world.cycle = services.cycle_create(week="2027-W01")
    return world


def test_a_team_can_submit_at_17_59_on_friday_and_not_at_18_01(week_53_intake, clock):
    world = week_53_intake
    clock.move_to(berlin(2027, 1, 1, 17, 59), tick=False)
    on_time = file_request(world)
    assert on_time.status == "submitted"

    late = file_request(world, team=world.team_b, submit=False)
    clock.move_to(berlin(2027, 1, 1, 18, 1), tick=False)
    with pytest.raises(ValidationError, match="Intake for 2027-W01 is closed"):
        services.request_submit(actor=world.member_b, gpu_request=late)
    late.refresh_from_db()
    assert late.status == "draft"


def test_the_clock_closes_intake_at_18_00_friday_not_a_minute_before(week_53_intake):
    cycle = week_53_intake.cycle
    assert services.cycle_close_due_intake(now=berlin(2027, 1, 1, 17, 59)) == []
    assert ReviewCycle.objects.get(pk=cycle.pk).status == CycleStatus.OPEN
    closed = services.cycle_close_due_intake(now=berlin(2027, 1, 1, 18, 1))
    assert [c.week for c in closed] == ["2027-W01"]
    assert ReviewCycle.objects.get(pk=cycle.pk).status == CycleStatus.IN_REVIEW


def test_monday_00_00_of_week_53_opens_the_first_week_of_next_year(world, committee_zone):
    ReviewCycle.objects.filter(pk=world.cycle.pk).delete()
    opening = berlin(2026, 12, 28, 0, 0)
    assert not [d for d in calendar.jobs_due(now=opening - timedelta(seconds=1), cycles=[], done=set())
                if d.job == calendar.OPEN_CYCLE]  # 2026-W53's intake is over: nothing to open on Sunday night
    runs = services.clock_tick(now=opening)
    assert [(r.job, r.period, r.due_at) for r in runs if r.job == calendar.OPEN_CYCLE] == [
        (calendar.OPEN_CYCLE, "2027-W01", opening)]
    cycle = ReviewCycle.objects.get(week="2027-W01")
    assert cycle.intake_closes_at == berlin(2027, 1, 1, 18, 0)
    closing = berlin(2027, 1, 1, 18, 0)
    state = [calendar.CycleState(cycle.week, True, cycle.intake_closes_at)]
    assert "close_intake" not in {d.job for d in calendar.jobs_due(now=closing - timedelta(seconds=1), cycles=state,
                                                                   done=set())}
    assert calendar.jobs_due(now=closing, cycles=state, done=set())[0] == calendar.Due("close_intake", "2027-W01",
                                                                                       closing)


def test_clock_jobs_are_owed_once_on_the_day_summer_time_ends(committee_zone):
    digests = calendar.JOB_BY_NAME["send_digests"]
    at_seven = calendar.latest_slot(digests, berlin(2026, 10, 25, 7, 0))
    assert (at_seven.period, at_seven.due_at.utcoffset()) == ("2026-10-25", timedelta(hours=1))
    assert calendar.latest_slot(digests, berlin(2026, 10, 25, 6, 59)).period == "2026-10-24"
    owed = calendar.jobs_due(now=berlin(2026, 10, 26, 0, 0), cycles=[], done=set())
    assert [(d.period, d.due_at) for d in owed if d.job == calendar.OPEN_CYCLE] == [
        ("2026-W45", berlin(2026, 10, 26, 0, 0))]


# --- the engine's hour grid -------------------------------------------------------------------------------


@pytest.mark.parametrize(("week", "hours"), [("2026-W43", 169), ("2027-W12", 167)])
def test_engine_places_on_every_real_hour_of_a_summer_time_week(committee_zone, week, hours):
    start, end = weeks.week_bounds(week)  # committee-time datetimes, as a caller may pass them
    pool = engine.PoolCapacity(key="atlas/a100", gpu_count=8, burst_reserve_pct=0, standby_pct=0)
    whole_week = engine.Demand(ref=1, pool=pool.key, gpu_count=8, min_gpu_count=8, duration_hours=hours,
                               earliest_start=start, latest_end=end)
    after_sunday = engine.Demand(ref=2, pool=pool.key, gpu_count=8, min_gpu_count=8, duration_hours=1,
                                 earliest_start=berlin(2026, 1, 1), latest_end=end)
    result = engine.allocate(week_start=start, pools=[pool], demands=[whole_week], hours=hours)
    (window,) = result.windows
    assert (window.start, window.end) == (start, end)
    assert window.end - window.start == timedelta(hours=hours)  # aware arithmetic: absolute hours
    assert window.end.astimezone(UTC) - window.start.astimezone(UTC) == timedelta(hours=hours)
    one_hour = engine.allocate(week_start=start, pools=[pool], demands=[after_sunday], hours=hours).windows[0]
    assert one_hour.start.astimezone(UTC) == start.astimezone(UTC)
    sunday_noon = berlin(*weeks.parse_week(week).timetuple()[:3]) + timedelta(days=6, hours=12)
    late = engine.Demand(ref=3, pool=pool.key, gpu_count=8, min_gpu_count=8, duration_hours=2,
                         earliest_start=sunday_noon, latest_end=end)
    placed = engine.allocate(week_start=start, pools=[pool], demands=[late], hours=hours).windows[0]
    assert placed.start.astimezone(BERLIN).hour == 12  # noon on the Sunday, in committee time, not an hour off


# --- the windows API's "not ended" default ----------------------------------------------------------------


def test_windows_that_end_at_monday_00_00_are_served_until_then_and_not_after(world, committee_zone, clock):
    week = "2026-W53"
    token = token_for(world.atlas)
    publish([W(world.a100, world.team_a, 8, 150, 168, ref=1)], week=week)  # Sunday 06:00 to Monday 00:00
    api = APIClient()
    clock.move_to(berlin(2027, 1, 3, 23, 59), tick=False)
    served = api.get("/api/v1/windows/", {"cluster": "atlas"}, **bearer(token)).json()["results"]
    assert [w["request_id"] for w in served] == [1]
    assert served[0]["end"] == "2027-01-03T23:00:00Z"  # Monday 00:00 Berlin, in UTC
    clock.move_to(berlin(2027, 1, 4, 0, 0), tick=False)
    assert api.get("/api/v1/windows/", {"cluster": "atlas"}, **bearer(token)).json()["results"] == []


# --- fair-share decay buckets -----------------------------------------------------------------------------


def test_usage_falls_in_its_committee_week_across_the_end_of_summer_time(world, committee_zone):
    """Buckets are committee weeks before `until` (Friday 18:00), not 168-hour steps that slide by an hour."""
    until = berlin(2026, 10, 30, 18, 0)  # Friday after summer time ended on Sunday the 25th
    just_inside = berlin(2026, 10, 23, 18, 30)  # 30 minutes after the previous Friday's close: this week
    just_before = berlin(2026, 10, 23, 17, 30)  # 30 minutes before it: the week before
    for start, used in ((just_inside, 10), (just_before, 4)):
        UsageRecord.objects.create(team=world.team_a, pool=world.a100, period_start=start,
                                   period_end=start + timedelta(hours=1), gpu_hours_used=Decimal(used),
                                   mean_utilization_pct=Decimal(50), mean_queue_wait_minutes=Decimal(0),
                                   idempotency_key=f"usage-{used}")
    buckets = usage_gpu_hours_by_team_per_week(until=until, weeks=3)
    assert buckets[0] == {world.team_a.pk: Decimal(10)}
    assert buckets[1] == {world.team_a.pk: Decimal(4)}
    assert buckets[2] == {}


# --- digests ----------------------------------------------------------------------------------------------


def _note(world, title: str) -> None:
    notifications_record(recipient_ids=[world.lead_a.pk], kind="request_submitted", key=title,
                         params={"team": "Team A", "title": title, "week": "2027-W01", "by": "Lead A"})


def test_digests_change_day_at_local_midnight_on_new_years_eve(world, committee_zone, clock):
    clock.move_to(berlin(2026, 12, 31, 23, 0), tick=False)
    _note(world, "first")
    assert digests_send(now=berlin(2026, 12, 31, 23, 59)) == 1
    _note(world, "second")
    assert digests_send(now=berlin(2026, 12, 31, 23, 59, 30)) == 0  # one digest a committee day
    assert digests_send(now=berlin(2027, 1, 1, 0, 0)) == 1  # 23:00 UTC, but already 1 January in Berlin
    assert len(mail.outbox) == 2


def test_one_digest_on_the_25_hour_day(world, committee_zone, clock):
    clock.move_to(berlin(2026, 10, 25, 1, 30), tick=False)
    _note(world, "first")
    early = datetime(2026, 10, 25, 2, 30, fold=1, tzinfo=BERLIN)  # the second 02:30, in winter time
    late = berlin(2026, 10, 25, 23, 30)
    assert digests_send(now=early) == 1
    _note(world, "second")
    assert digests_send(now=late) == 0
    assert digests_send(now=berlin(2026, 10, 26, 0, 0)) == 1
