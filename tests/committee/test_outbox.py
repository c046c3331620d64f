"""The outbox: work is written with the change that asks for it, relayed after commit, and done once."""

from __future__ import annotations

import socket
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from committee import outbox, services
from committee.models import Notification, NotificationKind, OutboxMessage, RequestStatus
from committee.tasks import notify
from reports import services as report_services
from reports.models import ExportStatus
from reports.selectors import revision_latest
from tests.factories import file_request
from tests.reports.conftest import make_page


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def broker_down(settings, monkeypatch):
    """A broker URL where nothing listens: Redis is down."""
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{_closed_port()}/0"
    # Celery takes the CELERY_BROKER_URL variable (set in CI) over the setting.
    monkeypatch.setenv("CELERY_BROKER_URL", settings.CELERY_BROKER_URL)
    settings.CELERY_BROKER_CONNECTION_TIMEOUT = 1.0


def test_the_message_is_written_in_the_callers_transaction(world):
    with pytest.raises(RuntimeError), transaction.atomic():
        outbox.outbox_enqueue(task_name="committee.notify_request_submitted", key="k:rolled-back",
                              kwargs={"request_id": 1})
        raise RuntimeError("the change failed")
    assert not OutboxMessage.objects.filter(key="k:rolled-back").exists()


def test_the_same_key_is_one_message(world):
    first = outbox.outbox_enqueue(task_name="x.y", key="k:once", kwargs={"a": 1})
    second = outbox.outbox_enqueue(task_name="x.y", key="k:once", kwargs={"a": 2})
    assert first.pk == second.pk and OutboxMessage.objects.filter(key="k:once").count() == 1


def test_nothing_is_relayed_before_commit(world, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        gpu_request = file_request(world)
    message = OutboxMessage.objects.get(key=f"notify:request-submitted:{gpu_request.pk}")
    assert message.relayed_at is None and message.done_at is None and len(callbacks) == 1
    assert not Notification.objects.exists()


def test_without_a_broker_the_task_runs_in_process_after_commit(world, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        gpu_request = file_request(world)
    message = OutboxMessage.objects.get(key=f"notify:request-submitted:{gpu_request.pk}")
    assert message.done_at is not None and message.done_by.startswith("in-process@")
    assert message.relay_attempts == 1
    assert sorted(Notification.objects.filter(kind=NotificationKind.REQUEST_SUBMITTED)
                  .values_list("recipient__username", flat=True)) == ["lead_a", "member_a"]


def test_a_task_delivered_twice_does_its_work_once(world, django_capture_on_commit_callbacks, monkeypatch):
    with django_capture_on_commit_callbacks(execute=False):
        gpu_request = file_request(world)
    message = OutboxMessage.objects.get(key=f"notify:request-submitted:{gpu_request.pk}")
    calls = []
    real = services.notifications_deliver

    def counting(**kwargs):
        calls.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(services, "notifications_deliver", counting)
    task_id = outbox.task_id_for(message)
    assert notify.apply(kwargs=message.kwargs, task_id=task_id).get() == 2
    assert notify.apply(kwargs=message.kwargs, task_id=task_id).get() == 0
    assert len(calls) == 1 and Notification.objects.count() == 2


def test_a_failing_task_leaves_its_message_not_done(world, django_capture_on_commit_callbacks, monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("mail server on fire")

    monkeypatch.setattr(services, "notifications_deliver", broken)
    with django_capture_on_commit_callbacks(execute=True):
        gpu_request = file_request(world)  # the submission itself succeeds
    gpu_request.refresh_from_db()
    assert gpu_request.status == RequestStatus.SUBMITTED
    message = OutboxMessage.objects.get(key=f"notify:request-submitted:{gpu_request.pk}")
    assert message.done_at is None and "mail server on fire" in message.last_error
    monkeypatch.undo()
    # Handed over again once REDELIVER_AFTER has passed.
    later = timezone.now() + outbox.REDELIVER_AFTER + timedelta(seconds=1)
    assert outbox.outbox_relay(now=later).relayed == 1
    message.refresh_from_db()
    assert message.done_at is not None and message.relay_attempts == 2


def test_while_the_broker_is_down_a_submission_succeeds_and_its_work_waits(
    world, client, broker_down, django_capture_on_commit_callbacks
):
    draft = file_request(world, submit=False)
    client.force_login(world.lead_a)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("committee:request-submit", args=[draft.pk]), follow=True)
    assert response.status_code == 200
    draft.refresh_from_db()
    assert draft.status == RequestStatus.SUBMITTED
    message = OutboxMessage.objects.get(key=f"notify:request-submitted:{draft.pk}")
    assert message.relayed_at is None and message.done_at is None and message.relay_attempts == 0
    result = outbox.outbox_relay()
    assert result.broker_down and result.waiting == 1 and result.relayed == 0


def test_relay_outbox_command_says_the_broker_is_down(world, broker_down, capsys):
    outbox.outbox_enqueue(task_name="committee.notify_request_submitted", key="k:waits", kwargs={"request_id": 1})
    call_command("relay_outbox")
    out = capsys.readouterr().out
    assert "does not answer" in out and "1 message not done yet" in out


def test_relay_outbox_command_runs_waiting_work_without_a_broker(world, capsys):
    gpu_request = file_request(world)  # on_commit never ran (test transaction): the message waits
    call_command("relay_outbox")
    assert "1 message relayed" in capsys.readouterr().out
    assert OutboxMessage.objects.get(key=f"notify:request-submitted:{gpu_request.pk}").done_at is not None
    call_command("relay_outbox")
    assert "0 messages relayed" in capsys.readouterr().out


def test_a_pdf_export_goes_through_the_outbox(world, django_capture_on_commit_callbacks, settings, tmp_path):
    settings.DOCKET_PDF_ROOT = tmp_path
    settings.CHROMIUM_PATH = "/nonexistent"
    page = make_page(world)
    with django_capture_on_commit_callbacks(execute=True):
        export = report_services.pdf_export_request(actor=world.chair, revision=revision_latest(page=page))
    message = OutboxMessage.objects.get(key=f"pdf-export:{export.pk}:0")
    assert message.task_name == "reports.render_pdf_export" and message.kwargs == {"export_id": export.pk}
    assert message.done_at is not None
    export.refresh_from_db()
    assert export.status == ExportStatus.DONE


def test_a_pdf_asked_for_while_the_broker_is_down_renders_when_it_is_relayed(
    world, broker_down, settings, tmp_path, django_capture_on_commit_callbacks
):
    settings.DOCKET_PDF_ROOT = tmp_path
    settings.CHROMIUM_PATH = "/nonexistent"
    page = make_page(world)
    with django_capture_on_commit_callbacks(execute=True):
        export = report_services.pdf_export_request(actor=world.member_a, revision=revision_latest(page=page))
    export.refresh_from_db()
    assert export.status == ExportStatus.PENDING
    settings.CELERY_TASK_ALWAYS_EAGER = True  # "the broker is back", here as an in-process run
    assert outbox.outbox_relay().relayed == 1
    export.refresh_from_db()
    assert export.status == ExportStatus.DONE


def test_the_admin_shows_the_outbox_and_changes_nothing(client, world):
    from django.contrib.auth import get_user_model

    outbox.outbox_enqueue(task_name="committee.notify_request_submitted", key="k:admin", kwargs={"request_id": 1})
    admin_user = get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(admin_user)
    listing = client.get("/admin/committee/outboxmessage/")
    assert listing.status_code == 200 and "k:admin" in listing.content.decode()
    assert client.get("/admin/committee/outboxmessage/add/").status_code == 403
