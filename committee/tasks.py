"""Celery tasks of the committee: the weekly clock's tick and the outbox relay (beat, see CELERY_BEAT_SCHEDULE),
and the notifications that user actions enqueue through the outbox.

Each task calls one service. The clock does each owed run once (committee/services/clock.py); the notification
tasks do their work once per outbox message (`outbox_once`: the message is marked done in the
same transaction as the notifications it records), so a task delivered twice acts once.
"""

from __future__ import annotations

from typing import Any

from celery import Task, shared_task
from django.utils import timezone

from committee import outbox, services


@shared_task(name="committee.clock_tick")
def clock_tick() -> list[str]:
    """The weekly clock (beat's `clock-tick`): every run owed now, each once (committee/calendar.py)."""
    return [f"{run.job} {run.period}" for run in services.clock_tick(now=timezone.now())]


@shared_task(name="committee.relay_outbox")
def relay_outbox() -> int:
    return outbox.outbox_relay().relayed


@shared_task(name="committee.notify_request_submitted", bind=True, acks_late=True)
def notify_request_submitted(self: Task, request_id: int) -> int:
    with outbox.outbox_once(self) as first:
        return services.notifications_for_request_submitted(request_id=request_id) if first else 0


@shared_task(name="committee.notify_intake_closed", bind=True, acks_late=True)
def notify_intake_closed(self: Task, cycle_id: int) -> int:
    with outbox.outbox_once(self) as first:
        return services.notifications_for_intake_closed(cycle_id=cycle_id) if first else 0


@shared_task(name="committee.notify_decisions_published", bind=True, acks_late=True)
def notify_decisions_published(self: Task, cycle_id: int, plan_id: int) -> int:
    with outbox.outbox_once(self) as first:
        return services.notifications_for_decisions_published(cycle_id=cycle_id, plan_id=plan_id) if first else 0


@shared_task(name="committee.chat_send", acks_late=True)
def chat_send(event: str, params: dict[str, Any]) -> str:
    """Post to the chat webhook. Marked done in the outbox when it succeeds; a refused post raises and waits."""
    return services.chat_send(event=event, params=params)


@shared_task(name="committee.notify_decision_corrected", bind=True, acks_late=True)
def notify_decision_corrected(self: Task, correction_id: int) -> int:
    with outbox.outbox_once(self) as first:
        return services.notifications_for_decision_corrected(correction_id=correction_id) if first else 0


@shared_task(name="committee.notify_appeal_filed", bind=True, acks_late=True)
def notify_appeal_filed(self: Task, appeal_id: int) -> int:
    with outbox.outbox_once(self) as first:
        return services.notifications_for_appeal_filed(appeal_id=appeal_id) if first else 0


@shared_task(name="committee.notify_appeal_decided", bind=True, acks_late=True)
def notify_appeal_decided(self: Task, appeal_id: int) -> int:
    with outbox.outbox_once(self) as first:
        return services.notifications_for_appeal_decided(appeal_id=appeal_id) if first else 0
