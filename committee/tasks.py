"""Celery tasks of the committee: the weekly clock's tick and the outbox relay (beat, see CELERY_BEAT_SCHEDULE),
the chat's posts, and the one task that records the notifications of any kind a user action enqueues.

Each task calls one service. The clock does each owed run once (committee/services/clock.py); the notification
task does its work once per outbox message (`outbox_once`: the message is marked done in the
same transaction as the notifications it records), so a task delivered twice acts once.
"""

from __future__ import annotations

from typing import Any

from celery import Task, shared_task
from django.utils import timezone

from committee import outbox, services
from committee.models import NotificationKind


@shared_task(name="committee.clock_tick")
def clock_tick() -> list[str]:
    """The weekly clock (beat's `clock-tick`): every run owed now, each once (committee/calendar.py)."""
    return [f"{run.job} {run.period}" for run in services.clock_tick(now=timezone.now())]


@shared_task(name="committee.relay_outbox")
def relay_outbox() -> int:
    return outbox.outbox_relay().relayed


@shared_task(name="committee.chat_send", acks_late=True)
def chat_send(event: str, params: dict[str, Any]) -> str:
    """Post to the chat webhook. Marked done in the outbox when it succeeds; a refused post raises and waits."""
    return services.chat_send(event=event, params=params)


@shared_task(name="committee.webhook_deliver", acks_late=True)
def webhook_deliver(delivery_id: int) -> str:
    """One attempt of a signed webhook (committee/services/webhooks.py); a failed POST is logged and retried by the
    clock with backoff, so the task itself succeeds and its outbox message is done."""
    return services.webhook_deliver(delivery_id=delivery_id)


@shared_task(name=services.NOTIFY_TASK, bind=True, acks_late=True)
def notify(self: Task, kind: str, arguments: dict[str, Any]) -> int:
    """Record the notifications of the kind an action enqueued (services.notification_enqueue), once.

    A kind not in the registry is refused (UnknownNotificationKind): the message stays not done, with the error.
    """
    return _deliver_once(self, kind=kind, arguments=arguments)


def _deliver_once(task: Task, *, kind: str, arguments: dict[str, Any]) -> int:
    with outbox.outbox_once(task) as first:
        return services.notifications_deliver(kind=kind, arguments=arguments) if first else 0


# The notification tasks before the one `committee.notify`: one per kind, the kind's arguments as keyword
# arguments. A message of one of these names queued before an upgrade (in the broker, or waiting in the outbox)
# is still delivered, as its kind, once. Nothing enqueues them any more: they can go once no deployment holds
# such a message not done (the admin's Committee › Outbox messages, by task).
LEGACY_NOTIFY_TASKS: dict[str, str] = {
    "committee.notify_request_submitted": NotificationKind.REQUEST_SUBMITTED,
    "committee.notify_intake_closed": NotificationKind.INTAKE_CLOSED,
    "committee.notify_decisions_published": NotificationKind.DECISION_PUBLISHED,
    "committee.notify_decision_corrected": NotificationKind.DECISION_CORRECTED,
    "committee.notify_appeal_filed": NotificationKind.APPEAL_FILED,
    "committee.notify_appeal_decided": NotificationKind.APPEAL_DECIDED,
}


def _legacy_notify_task(name: str, kind: str) -> Task:
    @shared_task(name=name, bind=True, acks_late=True)
    def legacy_notify(self: Task, **arguments: Any) -> int:
        return _deliver_once(self, kind=kind, arguments=arguments)

    return legacy_notify


legacy_notify_tasks = {name: _legacy_notify_task(name, kind) for name, kind in LEGACY_NOTIFY_TASKS.items()}
