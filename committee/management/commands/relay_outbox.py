from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand
from django.template.defaultfilters import pluralize

from committee import outbox


class Command(BaseCommand):
    help = (
        "Hand the work waiting in the outbox to the Celery broker (beat: every minute); without a broker, "
        "run it here. Safe to run at any time: every task does its work once."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        result = outbox.outbox_relay()
        if result.broker_down:
            self.stdout.write(self.style.WARNING(
                f"The broker does not answer: {result.waiting} message{pluralize(result.waiting)} "
                f"keep{pluralize(result.waiting, 's,')} waiting; run this again later."
            ))
        else:
            self.stdout.write(self.style.SUCCESS(f"{result.relayed} message{pluralize(result.relayed)} relayed."))
        if result.failed:
            self.stdout.write(self.style.ERROR(
                f"{result.failed} task{pluralize(result.failed)} failed; see the outbox in the admin."
            ))
        waiting = outbox.outbox_waiting_count()
        self.stdout.write(f"{waiting} message{pluralize(waiting)} not done yet.")
