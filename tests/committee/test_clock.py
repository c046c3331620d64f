"""The weekly clock: each job, run with a frozen `now`, acts once however often it runs; the tick does
what is owed once, also when it comes late (committee/services/clock.py). What is owed when:
tests/committee/test_clock_due.py."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.conf import settings as django_settings
from django.core import mail
from django.core.management import CommandError, call_command
from django.urls import reverse

from committee import selectors, services
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
@pytest.fixture
def calendar(world, settings):
    """The committee sits in Berlin; the world's own open cycle is removed so only the clock's cycles exist."""
    settings.TIME_ZONE = "Europe/Berlin"
    ReviewCycle.objects.filter(pk=world.cycle.pk).delete()
    return world


def test_beat_sends_one_tick_and_the_relay_nothing_else():
    """Every clock job hangs on what is owed at a tick (committee/calendar.py, and the apps above through
    committee.signals.clock_ticked), none on a beat message of its own."""
    schedule = django_settings.CELERY_BEAT_SCHEDULE
    assert sorted(schedule) == ["clock-tick", "relay-outbox"]
    assert schedule["clock-tick"]["task"] == "committee.clock_tick"
    assert schedule["clock-tick"]["schedule"] == float(django_settings.DOCKET_CLOCK_TICK_SECONDS) == 60.0


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
    assert "4 reminders" in capsys.readouterr().out  # nobody has filed: both teams' members
    call_command("close_due_intake", now="2027-03-05T17:59")
    assert "nothing to do" in capsys.readouterr().out
    call_command("close_due_intake", now="2027-03-05T18:00")
    assert "Intake for week 2027-W10 is closed" in capsys.readouterr().out
    call_command("remind_committee", now="2027-03-08T06:00")
    assert "4 reminders" in capsys.readouterr().out
    call_command("send_digests", now="2027-03-08T07:00")
    sent = capsys.readouterr().out
    assert "digest" in sent and "sent." in sent and "(s)" not in sent
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


def test_a_late_tick_closes_intake_once_as_of_friday_18_00(calendar, django_capture_on_commit_callbacks):
    cycle = _open(calendar)
    file_request(calendar, title="Ranker retrain")
    assert not [r for r in services.clock_tick(now=FRIDAY_18 - timedelta(seconds=1)) if r.job == "close_intake"]
    late = FRIDAY_18 + timedelta(minutes=3)  # the broker was down at 18:00; this is the first tick after
    with django_capture_on_commit_callbacks(execute=True):
        runs = services.clock_tick(now=late)
    assert [(r.job, r.period, r.due_at) for r in runs if r.job == "close_intake"] == [
        ("close_intake", WEEK, FRIDAY_18)]
    cycle.refresh_from_db()
    assert cycle.status == CycleStatus.IN_REVIEW and cycle.intake_closed_at == FRIDAY_18
    assert services.clock_tick(now=late + timedelta(minutes=1)) == []
    assert services.clock_tick(now=late + timedelta(minutes=1, seconds=1)) == []
    assert OutboxMessage.objects.filter(key=f"notify:intake-closed:{cycle.pk}").count() == 1
    assert Notification.objects.filter(kind=NotificationKind.INTAKE_CLOSED).count() == 4
    assert FairShareSnapshot.objects.filter(cycle=cycle).count() == 2


def test_until_the_tick_opens_mondays_week_teams_are_not_sent_to_last_weeks_closed_intake(calendar, client):
    cycle = _open(calendar)  # 2027-W10: intake closed Friday, and the close was missed too
    monday = MONDAY + timedelta(days=7, minutes=2)
    assert selectors.cycle_open_for_intake(now=FRIDAY_18 - timedelta(seconds=1)) == cycle
    assert selectors.cycle_open_for_intake(now=monday) is None  # not W10, whose intake is over
    runs = services.clock_tick(now=monday)
    assert [(r.job, r.period) for r in runs][:2] == [("close_intake", WEEK), ("open_cycle", "2027-W11")]
    intake = selectors.cycle_open_for_intake(now=monday)
    assert intake is not None and intake.week == "2027-W11"
    assert ReviewCycle.objects.filter(week="2027-W11").count() == 1
    assert services.clock_tick(now=monday + timedelta(minutes=1)) == []


def test_a_job_that_fails_records_nothing_holds_back_nothing_and_runs_at_the_next_tick(calendar, monkeypatch, caplog):
    _open(calendar)
    real = services.CLOCK_RUNNERS["send_digests"]
    monkeypatch.setitem(services.CLOCK_RUNNERS, "send_digests", lambda due, now: 1 / 0)
    monday_07 = MONDAY + timedelta(hours=7)
    runs = services.clock_tick(now=monday_07)
    assert "send_digests" not in {r.job for r in runs} and "elastic_evaluate" in {r.job for r in runs}
    assert "clock: send_digests for 2027-03-01 failed; the next tick tries again" in caplog.text
    monkeypatch.setitem(services.CLOCK_RUNNERS, "send_digests", real)
    assert [(r.job, r.period) for r in services.clock_tick(now=monday_07 + timedelta(minutes=1))] == [
        ("send_digests", "2027-03-01")]


def test_clock_tick_command_lists_what_is_owed_and_does_it_once(calendar, capsys):
    _open(calendar)
    call_command("clock_tick", now="2027-03-05T18:01", dry_run=True)
    assert f"close_intake {WEEK} (due 2027-03-05T18:00:00+01:00)" in capsys.readouterr().out
    assert ReviewCycle.objects.get(week=WEEK).status == CycleStatus.OPEN  # a dry run does nothing
    call_command("clock_tick", now="2027-03-05T18:01")
    assert f"close_intake {WEEK}: {WEEK} in review" in capsys.readouterr().out
    call_command("clock_tick", now="2027-03-05T18:01")
    assert "Nothing was owed" in capsys.readouterr().out
