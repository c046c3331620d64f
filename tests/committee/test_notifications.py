"""Notifications: recorded per person, grouped into one digest per person per day, opt-outs respected."""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from django.core import mail

from committee import services
from committee.models import (
    Notification,
    NotificationDigest,
    NotificationKind,
    NotificationOptOut,
)
from tests.committee.reviewing import close, decide, score
from tests.factories import file_request

BERLIN = ZoneInfo("Europe/Berlin")
MORNING = datetime(2027, 3, 9, 7, 0, tzinfo=BERLIN)


def _record(user, kind, key, **params):
    return services.notifications_record(recipient_ids=[user.pk], kind=kind, key=key, params=params)


def _mail_to(user):
    return [m for m in mail.outbox if m.to == [user.email]]


def test_recording_the_same_notification_twice_records_it_once(world):
    assert _record(world.member_a, NotificationKind.REQUEST_SUBMITTED, "request:1", team="Team A", title="X") == 1
    assert _record(world.member_a, NotificationKind.REQUEST_SUBMITTED, "request:1", team="Team A", title="X") == 0
    assert Notification.objects.count() == 1


def test_a_digest_groups_a_persons_notifications_into_one_email(world):
    _record(world.lead_a, NotificationKind.REQUEST_SUBMITTED, "request:1", team="Team A", title="Ranker retrain",
            week="2027-W10", by="Lead A", path="/requests/1/")
    _record(world.lead_a, NotificationKind.REQUEST_SUBMITTED, "request:2", team="Team A", title="Eval sweep",
            week="2027-W10", by="Member A", path="/requests/2/")
    _record(world.lead_a, NotificationKind.DECISION_PUBLISHED, "decision:1:plan-v1", team="Team A",
            title="Ranker retrain", week="2027-W10", outcome="partial", granted_gpu_count=8, requested_gpu_count=16,
            version=1, path="/requests/1/")
    _record(world.member_b, NotificationKind.REQUEST_SUBMITTED, "request:3", team="Team B", title="Vision model",
            week="2027-W10", by="Member B", path="/requests/3/")
    assert services.digests_send(now=MORNING) == 2
    assert len(mail.outbox) == 2
    (to_lead,) = _mail_to(world.lead_a)
    assert to_lead.subject.startswith("Docket: 3 updates for")
    body = to_lead.body
    assert body.index("== Requests submitted ==") < body.index("== Decisions published ==")
    assert "“Ranker retrain” was submitted for week 2027-W10 by Lead A." in body
    assert "“Eval sweep” was submitted" in body
    assert "“Ranker retrain” — Partial grant, 8 of 16 GPUs (week 2027-W10, plan version 1)." in body
    assert "http://127.0.0.1:8000/requests/1/" in body and "/profile/" in body
    assert "Vision model" not in body
    digest = NotificationDigest.objects.get(recipient=world.lead_a)
    assert digest.notification_count == 3 and digest.day == MORNING.date()
    assert Notification.objects.filter(digest=digest).count() == 3


def test_one_digest_per_person_per_day(world):
    _record(world.lead_a, NotificationKind.REQUEST_SUBMITTED, "request:1", team="Team A", title="First")
    assert services.digests_send(now=MORNING) == 1
    _record(world.lead_a, NotificationKind.REQUEST_SUBMITTED, "request:2", team="Team A", title="Second")
    assert services.digests_send(now=MORNING + timedelta(hours=3)) == 0  # the same day: it waits
    assert services.digests_send(now=MORNING) == 0
    assert len(mail.outbox) == 1
    assert services.digests_send(now=MORNING + timedelta(days=1)) == 1
    assert len(mail.outbox) == 2 and "Second" in mail.outbox[1].body and "First" not in mail.outbox[1].body


def test_the_digest_day_is_the_committees_day(world, settings):
    settings.TIME_ZONE = "Europe/Berlin"
    _record(world.lead_a, NotificationKind.REQUEST_SUBMITTED, "request:1", team="Team A", title="Late")
    late_monday_utc = datetime(2027, 3, 8, 23, 30, tzinfo=ZoneInfo("UTC"))  # Tuesday 00:30 in Berlin
    services.digests_send(now=late_monday_utc)
    assert NotificationDigest.objects.get().day == datetime(2027, 3, 9).date()


def test_opted_out_kinds_are_left_out_and_never_sent(world):
    NotificationOptOut.objects.create(user=world.lead_a, kind=NotificationKind.REQUEST_SUBMITTED)
    _record(world.lead_a, NotificationKind.REQUEST_SUBMITTED, "request:1", team="Team A", title="Ranker retrain")
    _record(world.lead_a, NotificationKind.DECISION_PUBLISHED, "decision:1:plan-v1", team="Team A",
            title="Eval sweep", week="2027-W10", outcome="grant", version=1)
    assert services.digests_send(now=MORNING) == 1
    (to_lead,) = _mail_to(world.lead_a)
    assert "Eval sweep" in to_lead.body and "Ranker retrain" not in to_lead.body
    assert Notification.objects.get(kind=NotificationKind.REQUEST_SUBMITTED).skipped
    # Opting back in later does not send what was skipped.
    NotificationOptOut.objects.all().delete()
    assert services.digests_send(now=MORNING + timedelta(days=1)) == 0


def test_someone_opted_out_of_everything_they_got_gets_no_email(world):
    NotificationOptOut.objects.create(user=world.member_a, kind=NotificationKind.REQUEST_SUBMITTED)
    _record(world.member_a, NotificationKind.REQUEST_SUBMITTED, "request:1", team="Team A", title="X")
    assert services.digests_send(now=MORNING) == 0
    assert mail.outbox == [] and not NotificationDigest.objects.exists()


def test_a_person_without_an_email_address_gets_nothing(world):
    world.member_a.email = ""
    world.member_a.save()
    _record(world.member_a, NotificationKind.REQUEST_SUBMITTED, "request:1", team="Team A", title="X")
    assert services.digests_send(now=MORNING) == 0 and mail.outbox == []


def test_a_failed_send_records_nothing_and_is_retried(world, monkeypatch):
    _record(world.lead_a, NotificationKind.REQUEST_SUBMITTED, "request:1", team="Team A", title="X")

    def refuse(*args, **kwargs):
        raise ConnectionRefusedError("smtp down")

    monkeypatch.setattr("django.core.mail.EmailMessage.send", refuse)
    assert services.digests_send(now=MORNING) == 0
    assert not NotificationDigest.objects.exists()
    assert Notification.objects.get().digest is None
    monkeypatch.undo()
    assert services.digests_send(now=MORNING) == 1


def test_submitting_tells_the_team(world, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        gpu_request = file_request(world, title="Ranker retrain")
    notes = Notification.objects.filter(kind=NotificationKind.REQUEST_SUBMITTED)
    assert sorted(notes.values_list("recipient__username", flat=True)) == ["lead_a", "member_a"]
    assert {n.key for n in notes} == {f"request:{gpu_request.pk}"}


def test_closing_intake_tells_the_committee(world, django_capture_on_commit_callbacks):
    file_request(world, title="Ranker retrain")
    with django_capture_on_commit_callbacks(execute=True):
        close(world)
    notes = Notification.objects.filter(kind=NotificationKind.INTAKE_CLOSED)
    assert sorted(notes.values_list("recipient__username", flat=True)) == ["chair", "finance", "reviewer", "tech"]


def test_publishing_tells_each_team_its_own_decisions(world, django_capture_on_commit_callbacks):
    ranker = file_request(world, title="Ranker retrain", gpu_count=16, min_gpu_count=8)
    vision = file_request(world, team=world.team_b, title="Vision model", pool=world.h100, gpu_count=24,
                          min_gpu_count=8)
    close(world)
    for member in (world.chair, world.reviewer, world.finance):
        score(member, ranker, 9, 8, 8)
        score(member, vision, 6, 6, 6)
    decide(world, ranker)
    decide(world, vision, outcome="partial", granted_gpu_count=8)
    Notification.objects.all().delete()
    with django_capture_on_commit_callbacks(execute=True):
        services.cycle_finalize(cycle=world.cycle, actor=world.chair)
        services.cycle_publish(actor=world.chair, cycle=world.cycle)
    notes = Notification.objects.filter(kind=NotificationKind.DECISION_PUBLISHED)
    by_person: dict[str, list[str]] = {}
    for note in notes:
        by_person.setdefault(note.recipient.username, []).append(note.params["title"])
    assert by_person == {"lead_a": ["Ranker retrain"], "member_a": ["Ranker retrain"],
                         "member_b": ["Vision model"], "tech": ["Vision model"]}
    services.digests_send(now=MORNING)
    (to_b,) = _mail_to(world.member_b)
    assert "“Vision model” — decided: Partial grant, 8 of 24 GPUs (384 GPU-hours); placed: 8 H100, " in to_b.body


def test_the_intake_closed_count_holds_however_late_the_task_runs(world, django_capture_on_commit_callbacks):
    ranker = file_request(world, title="Ranker retrain")
    with django_capture_on_commit_callbacks(execute=False):
        close(world)  # the worker is slow: the committee decides before the notification task runs
    for member in (world.chair, world.reviewer, world.finance):
        score(member, ranker, 8, 8, 8)
    decide(world, ranker)
    services.cycle_finalize(cycle=world.cycle, actor=world.chair)
    services.notifications_deliver(kind=NotificationKind.INTAKE_CLOSED, arguments={"cycle_id": world.cycle.pk})
    assert {n.params["count"] for n in Notification.objects.filter(kind=NotificationKind.INTAKE_CLOSED)} == {1}
