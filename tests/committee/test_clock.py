"""The weekly clock: the beat schedule fires each job once at its hour in the committee's time zone, and each
job, run with a frozen `now`, acts once however often it runs."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from celery import Celery
from celery.schedules import crontab
from django.conf import settings as django_settings
from django.core import mail
from django.core.management import CommandError, call_command
from django.urls import reverse

from committee import services
from committee.models import (
    CycleStatus,
    FairShareSnapshot,
    Notification,
    NotificationKind,
    OutboxMessage,
    ReviewCycle,
)
from tests.committee.reviewing import decide, score
from tests.factories import file_request

BERLIN = ZoneInfo("Europe/Berlin")
# A week far from the test run's own calendar: Monday 1 March 2027 opens week 2027-W10 (intake that week).
MONDAY = datetime(2027, 3, 1, 0, 0, tzinfo=BERLIN)
THURSDAY = MONDAY + timedelta(days=3, hours=10)
FRIDAY_18 = MONDAY + timedelta(days=4, hours=18)
REVIEW_MONDAY_06 = MONDAY + timedelta(days=7, hours=6)
WEEK = "2027-W10"
CLOCK_JOBS = {
    # beat entry: (weekday (Mon=0) or None for every day, hour) in the committee's time zone
    "open-next-cycle": (0, 0),
    "remind-teams": (3, 10),
    "close-due-intake": (4, 18),
    "remind-committee": (0, 6),
    "send-digests": (None, 7),
}


@pytest.fixture
def calendar(world, settings):
    """The committee sits in Berlin; the world's own open cycle is removed so only the clock's cycles exist."""
    settings.TIME_ZONE = "Europe/Berlin"
    ReviewCycle.objects.filter(pk=world.cycle.pk).delete()
    return world


def _beat_fires(*, start: datetime, days: int, step: timedelta, zone: str) -> dict[str, list[datetime]]:
    """Run the settings' beat schedule the way celery beat does, on a clock the test moves."""
    app = Celery("clock-test", set_as_current=False)
    app.conf.timezone = zone
    app.conf.enable_utc = True
    moment = [start]
    fires: dict[str, list[datetime]] = {}
    entries = {}
    for name, entry in django_settings.CELERY_BEAT_SCHEDULE.items():
        original = entry["schedule"]
        assert isinstance(original, crontab)
        entries[name] = crontab(
            minute=original._orig_minute, hour=original._orig_hour, day_of_week=original._orig_day_of_week,
            day_of_month=original._orig_day_of_month, month_of_year=original._orig_month_of_year,
            nowfun=lambda: moment[0], app=app,
        )
    last_run = dict.fromkeys(entries, start)
    while moment[0] < start + timedelta(days=days):
        moment[0] += step
        for name, schedule in entries.items():
            if schedule.is_due(last_run[name]).is_due:
                fires.setdefault(name, []).append(moment[0].astimezone(ZoneInfo(zone)))
                last_run[name] = moment[0]
    return fires


def test_beat_fires_each_job_once_at_its_hour_in_the_committees_zone():
    fires = _beat_fires(start=datetime(2027, 3, 7, 23, 55, tzinfo=BERLIN), days=7, step=timedelta(minutes=5),
                        zone="Europe/Berlin")
    for name, (weekday, hour) in CLOCK_JOBS.items():
        times = fires[name]
        expected = 7 if weekday is None else 1
        assert len(times) == expected, (name, times)
        for fired in times:
            assert (fired.hour, fired.minute) == (hour, 0), (name, fired)
            assert weekday is None or fired.weekday() == weekday, (name, fired)
    assert len(fires["relay-outbox"]) == 7 * 24 * 12  # every step of five minutes: every minute in beat


def test_beat_hours_are_committee_hours_not_utc():
    # In Berlin (UTC+1 in March) intake closes at 17:00 UTC; the digest still goes out at 07:00 local on the
    # day summer time starts (28 March 2027), once.
    fires = _beat_fires(start=datetime(2027, 3, 21, 23, 55, tzinfo=BERLIN), days=7, step=timedelta(minutes=5),
                        zone="Europe/Berlin")
    (closing,) = fires["close-due-intake"]
    assert closing.astimezone(ZoneInfo("UTC")).hour == 17
    digests = [f for f in fires["send-digests"] if f.date() == datetime(2027, 3, 28).date()]
    assert [(f.hour, f.minute) for f in digests] == [(7, 0)]
    assert digests[0].utcoffset() == timedelta(hours=2)


def test_the_beat_schedule_follows_docket_time_zone():
    """CELERY_TIMEZONE follows DOCKET_TIME_ZONE, so the crontab hours above are the committee's."""
    env = {**os.environ, "DOCKET_TIME_ZONE": "Europe/Berlin", "DJANGO_SETTINGS_MODULE": "config.settings",
           "SECRET_KEY": "clock-test-key", "DEBUG": "0", "CELERY_BROKER_URL": ""}
    code = ("import django; django.setup(); from config.celery import app; "
            "print(app.conf.timezone, sorted(app.conf.beat_schedule))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         timeout=60).stdout
    assert out.startswith("Europe/Berlin") and "close-due-intake" in out and "send-digests" in out


def test_open_cycle_opens_next_week_once(calendar):
    cycle, created = services.cycle_open_next(now=MONDAY)
    assert created and cycle.week == WEEK and cycle.status == CycleStatus.OPEN
    assert cycle.intake_closes_at == FRIDAY_18
    assert cycle.review_at == MONDAY + timedelta(days=7, hours=9)
    again, created_again = services.cycle_open_next(now=MONDAY + timedelta(minutes=1))
    assert not created_again and again.pk == cycle.pk
    assert ReviewCycle.objects.filter(week=WEEK).count() == 1


def test_open_cycle_run_after_fridays_close_opens_the_week_after(calendar):
    cycle, created = services.cycle_open_next(now=FRIDAY_18 + timedelta(hours=20))
    assert created and cycle.week == "2027-W11"


def _open(calendar):
    cycle, _created = services.cycle_open_next(now=MONDAY)
    calendar.cycle = cycle
    return cycle


def test_teams_that_have_not_submitted_are_reminded_on_thursday_once(calendar):
    _open(calendar)
    file_request(calendar, title="Ranker retrain")  # team A submitted
    file_request(calendar, team=calendar.team_b, title="Vision model", submit=False)  # team B: a draft only
    assert services.teams_remind_unfiled(now=THURSDAY - timedelta(hours=24)) == 0  # 56 hours before: too early
    assert services.teams_remind_unfiled(now=THURSDAY) == 2  # member_b and tech, of team B
    assert services.teams_remind_unfiled(now=THURSDAY) == 0
    reminders = Notification.objects.filter(kind=NotificationKind.INTAKE_CLOSING)
    assert sorted(reminders.values_list("recipient__username", flat=True)) == ["member_b", "tech"]
    assert {n.params["drafts"] for n in reminders} == {1}


def test_intake_closes_at_friday_18_once(calendar, django_capture_on_commit_callbacks):
    cycle = _open(calendar)
    file_request(calendar, title="Ranker retrain")
    assert services.cycle_close_due_intake(now=FRIDAY_18 - timedelta(minutes=1)) == []
    with django_capture_on_commit_callbacks(execute=True):
        closed = services.cycle_close_due_intake(now=FRIDAY_18)
    assert [c.pk for c in closed] == [cycle.pk]
    cycle.refresh_from_db()
    assert cycle.status == CycleStatus.IN_REVIEW and cycle.intake_closed_at == FRIDAY_18
    assert FairShareSnapshot.objects.filter(cycle=cycle).count() == 2
    assert services.cycle_close_due_intake(now=FRIDAY_18 + timedelta(minutes=1)) == []
    # The committee hears about it, once each (outbox → task → notifications).
    message = OutboxMessage.objects.get(key=f"notify:intake-closed:{cycle.pk}")
    assert message.done_at is not None
    closed_notes = Notification.objects.filter(kind=NotificationKind.INTAKE_CLOSED)
    assert sorted(closed_notes.values_list("recipient__username", flat=True)) == [
        "chair", "finance", "reviewer", "tech"]
    assert {n.params["count"] for n in closed_notes} == {1}


def test_committee_is_reminded_before_the_review_once(calendar):
    cycle = _open(calendar)
    first = file_request(calendar, title="Ranker retrain")
    file_request(calendar, team=calendar.team_b, title="Vision model", pool=calendar.h100, gpu_count=8,
                 min_gpu_count=4)
    services.cycle_close_due_intake(now=FRIDAY_18)
    score(calendar.chair, first, 8, 7, 6)
    assert services.committee_remind_review(now=REVIEW_MONDAY_06 - timedelta(hours=30)) == 0  # too early
    assert services.committee_remind_review(now=REVIEW_MONDAY_06) == 4
    assert services.committee_remind_review(now=REVIEW_MONDAY_06) == 0
    notes = {n.recipient.username: n.params for n in Notification.objects.filter(kind=NotificationKind.REVIEW_COMING)}
    assert notes["chair"]["count"] == 2 and notes["chair"]["unscored"] == 1
    assert notes["reviewer"]["unscored"] == 2
    assert notes["tech"]["count"] == 1  # tech is in team B: its request is not theirs to score
    assert all(n["week"] == cycle.week for n in notes.values())


def test_commands_run_the_clock_jobs_and_say_what_they_did(calendar, capsys):
    call_command("open_cycle", now="2027-03-01T00:00")
    assert "Opened week 2027-W10" in capsys.readouterr().out
    call_command("open_cycle", now="2027-03-01T00:05")
    assert "already open" in capsys.readouterr().out
    call_command("remind_teams", now="2027-03-04T10:00")
    assert "4 reminder(s)" in capsys.readouterr().out  # nobody has filed: both teams' members
    call_command("close_due_intake", now="2027-03-05T17:59")
    assert "nothing to do" in capsys.readouterr().out
    call_command("close_due_intake", now="2027-03-05T18:00")
    assert "Intake for week 2027-W10 is closed" in capsys.readouterr().out
    call_command("remind_committee", now="2027-03-08T06:00")
    assert "4 reminder(s)" in capsys.readouterr().out
    call_command("send_digests", now="2027-03-08T07:00")
    assert "digest(s) sent" in capsys.readouterr().out
    with pytest.raises(CommandError, match="ISO 8601"):
        call_command("open_cycle", now="next monday")


def test_a_week_runs_from_open_to_published_with_the_clock_and_the_chairs_two_clicks(
    calendar, client, django_capture_on_commit_callbacks
):
    world = calendar
    with django_capture_on_commit_callbacks(execute=True):
        cycle = _open(world)  # beat, Monday 00:00
        ranker = file_request(world, title="Ranker retrain")
        vision = file_request(world, team=world.team_b, title="Vision model", pool=world.h100, gpu_count=8,
                              min_gpu_count=4)
        services.teams_remind_unfiled(now=THURSDAY)  # beat, Thursday 10:00: both teams filed
        services.cycle_close_due_intake(now=FRIDAY_18)  # beat, Friday 18:00
        services.committee_remind_review(now=REVIEW_MONDAY_06)  # beat, Monday 06:00
    assert not Notification.objects.filter(kind=NotificationKind.INTAKE_CLOSING).exists()
    services.digests_send(now=REVIEW_MONDAY_06 + timedelta(hours=1))  # beat, Monday 07:00
    chair_mail = next(m for m in mail.outbox if m.to == ["chair@example.com"])
    assert "Intake for week 2027-W10 closed with 2 requests" in chair_mail.body
    assert "The review of week 2027-W10" in chair_mail.body
    for member in (world.chair, world.reviewer, world.finance):
        score(member, ranker, 8, 7, 7)
        score(member, vision, 6, 6, 5)
    decide(world, ranker)
    decide(world, vision)
    client.force_login(world.chair)
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(reverse("committee:cycle-finalize", args=[cycle.week]), {"confirm": "1"}).status_code == 302
        assert client.post(reverse("committee:cycle-publish", args=[cycle.week]), {"confirm": "1"}).status_code == 302
    cycle.refresh_from_db()
    assert cycle.status == CycleStatus.PUBLISHED
    mail.outbox.clear()
    services.digests_send(now=REVIEW_MONDAY_06 + timedelta(days=1, hours=1))  # beat, Tuesday 07:00
    to_team_a = next(m for m in mail.outbox if m.to == ["lead_a@example.com"])
    assert "“Ranker retrain” — decided: Grant, " in to_team_a.body
    assert "(week 2027-W10, plan version 1)" in to_team_a.body
    assert "Vision model" not in to_team_a.body


def test_remaining_estimate_counts_to_the_committees_friday_18_00():
    app = Celery("clock-test", set_as_current=False)
    app.conf.timezone = "Europe/Berlin"
    original = django_settings.CELERY_BEAT_SCHEDULE["close-due-intake"]["schedule"]
    assert isinstance(original, crontab)
    now = FRIDAY_18 - timedelta(hours=1, minutes=30)
    schedule = crontab(minute=original._orig_minute, hour=original._orig_hour,
                       day_of_week=original._orig_day_of_week, nowfun=lambda: now, app=app)
    last_run = FRIDAY_18 - timedelta(days=7)
    assert schedule.remaining_estimate(last_run) == timedelta(hours=1, minutes=30)
    assert not schedule.is_due(last_run).is_due
