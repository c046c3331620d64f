"""The registry of notification kinds and the one task that delivers any of them.

A kind registered here, in a fixture, goes the whole way: enqueued in the action's transaction, recorded once per
recipient by `committee.notify` after commit, emailed in the digest and shown in the inbox under its heading.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest
from django.core import mail
from django.db import transaction
from django.urls import reverse

from committee import outbox, selectors, services
from committee.models import GpuRequest, Notification, NotificationKind, OutboxMessage
from committee.services.notification_kinds import (
    NOTIFICATION_KINDS,
    Delivery,
    NotificationKindSpec,
    UnknownNotificationKind,
    notification_kind_register,
)
from committee.tasks import LEGACY_NOTIFY_TASKS, notify
from config.celery import app
from tests.factories import file_request

TOLD = "told_in_a_test"
MORNING = datetime(2027, 3, 9, 7, 0, tzinfo=ZoneInfo("Europe/Berlin"))


@pytest.fixture
def told() -> Iterator[NotificationKindSpec]:
    """A kind Docket does not have: the committee hears of a request, in request_submitted's words."""
    spec = notification_kind_register(
        NotificationKindSpec(
            TOLD,
            "Told by a test",
            template="committee/notifications/request_submitted.txt",
            delivery=Delivery[GpuRequest](
                message=lambda *, gpu_request: (f"notify:told:{gpu_request.pk}", {"request_id": gpu_request.pk}),
                load=lambda *, request_id: [GpuRequest.objects.select_related("team", "cycle").get(pk=request_id)],
                recipients=lambda requests: [selectors.committee_member_ids() for _request in requests],
                key=lambda gpu_request: f"told:{gpu_request.pk}",
                params=lambda gpu_request: {
                    "team": gpu_request.team.name,
                    "title": gpu_request.title,
                    "week": gpu_request.cycle.week,
                    "by": "a test",
                    "path": reverse("committee:request-detail", args=[gpu_request.pk]),
                },
            ),
        )
    )
    yield spec
    del NOTIFICATION_KINDS[TOLD]


def _told_to() -> list[str]:
    return sorted(Notification.objects.filter(kind=TOLD).values_list("recipient__username", flat=True))


def test_a_kind_registered_in_a_test_is_delivered_end_to_end_by_the_one_task_once(
    world, told, client, django_capture_on_commit_callbacks
):
    gpu_request = file_request(world, title="Ranker retrain")
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        services.notification_enqueue(kind=TOLD, gpu_request=gpu_request)
    message = OutboxMessage.objects.get(key=f"notify:told:{gpu_request.pk}")
    assert (message.task_name, message.kwargs) == (
        "committee.notify",
        {"kind": TOLD, "arguments": {"request_id": gpu_request.pk}},
    )
    assert message.done_at is not None and message.done_by.startswith("in-process@")
    assert _told_to() == ["chair", "finance", "reviewer", "tech"]

    # Asked for again: the same message, already done; nothing new is recorded.
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        again = services.notification_enqueue(kind=TOLD, gpu_request=gpu_request)
    assert again.pk == message.pk and OutboxMessage.objects.filter(key__startswith="notify:told:").count() == 1
    # The broker delivers the task twice: the second run does nothing.
    assert notify.apply(kwargs=message.kwargs, task_id=outbox.task_id_for(message)).get() == 0
    # The same subject delivered outside the outbox: each recipient already has its (kind, key).
    assert services.notifications_deliver(kind=TOLD, arguments={"request_id": gpu_request.pk}) == 0
    assert Notification.objects.filter(kind=TOLD).count() == 4

    # The digest groups it under the kind's heading, in the kind's words; the inbox shows the same.
    assert services.digests_send(now=MORNING) == 4
    (to_chair,) = [m for m in mail.outbox if m.to == [world.chair.email]]
    assert "== Told by a test ==" in to_chair.body
    assert f"Team A: “Ranker retrain” was submitted for week {world.cycle.week} by a test." in to_chair.body
    client.force_login(world.chair)
    page = client.get(reverse("committee:inbox")).content.decode()
    assert "Told by a test" in page and "“Ranker retrain” was submitted" in page


def test_nothing_is_told_of_an_action_that_rolls_back(world, told, django_capture_on_commit_callbacks):
    gpu_request = file_request(world)
    with django_capture_on_commit_callbacks(execute=True), pytest.raises(RuntimeError), transaction.atomic():
        services.notification_enqueue(kind=TOLD, gpu_request=gpu_request)
        raise RuntimeError("the action failed")
    assert not OutboxMessage.objects.filter(key__startswith="notify:told:").exists()
    assert _told_to() == []


def test_an_unknown_kind_is_refused_with_a_clear_error_and_nothing_is_written(world):
    gpu_request = file_request(world)
    messages = OutboxMessage.objects.count()
    expected = r"unknown notification kind 'no_such_kind': the kinds are intake_closing, request_submitted, "
    with pytest.raises(UnknownNotificationKind, match=expected):
        services.notification_enqueue(kind="no_such_kind", gpu_request=gpu_request)
    with pytest.raises(UnknownNotificationKind, match=expected):
        services.notifications_deliver(kind="no_such_kind", arguments={"request_id": gpu_request.pk})
    assert OutboxMessage.objects.count() == messages and not Notification.objects.exists()


def test_the_task_refuses_an_unknown_kind_and_its_message_waits_with_the_error(
    world, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        message = outbox.outbox_enqueue(
            task_name=services.NOTIFY_TASK, key="notify:retired:1", kwargs={"kind": "retired", "arguments": {}}
        )
    message.refresh_from_db()
    assert message.done_at is None and "unknown notification kind 'retired'" in message.last_error
    assert not Notification.objects.exists()


def test_a_kind_its_service_records_at_once_is_not_enqueued(world):
    with pytest.raises(ValueError, match="notification kind 'emergency' is recorded by its service, not enqueued"):
        services.notification_enqueue(kind=NotificationKind.EMERGENCY, gpu_request=file_request(world))


def test_a_kind_is_registered_once(told):
    with pytest.raises(ValueError, match=f"notification kind '{TOLD}' is already registered"):
        notification_kind_register(told)


def test_the_registry_has_every_kind_of_the_model_in_the_digests_order():
    assert list(NOTIFICATION_KINDS) == NotificationKind.values


@pytest.mark.parametrize("name", sorted(LEGACY_NOTIFY_TASKS))
def test_each_old_task_name_is_still_a_task_that_delivers_its_kind(name):
    assert name in app.tasks
    assert NOTIFICATION_KINDS[LEGACY_NOTIFY_TASKS[name]].delivery is not None


def test_a_message_of_an_old_task_name_waiting_from_before_the_upgrade_is_delivered_once(world):
    gpu_request = file_request(world)  # its own message (committee.notify) is never relayed here
    waiting = OutboxMessage.objects.create(
        key="before-the-upgrade:1",
        task_name="committee.notify_request_submitted",
        kwargs={"request_id": gpu_request.pk},
    )
    assert outbox.outbox_relay(message_ids=[waiting.pk]).relayed == 1
    waiting.refresh_from_db()
    assert waiting.done_at is not None and waiting.last_error == ""
    told = Notification.objects.filter(kind=NotificationKind.REQUEST_SUBMITTED, key=f"request:{gpu_request.pk}")
    assert sorted(told.values_list("recipient__username", flat=True)) == ["lead_a", "member_a"]
    old = app.tasks["committee.notify_request_submitted"]
    assert old.apply(kwargs=waiting.kwargs, task_id=outbox.task_id_for(waiting)).get() == 0
