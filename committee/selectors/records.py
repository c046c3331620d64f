"""Where a week's decision record stands: the archive writes it after the change commits, through the outbox.

A finalize, publish, correction or appeal writes one outbox message for the record in its own transaction
(`reports.services.decision_record_enqueue`, which names it with `cycle_record_key`); the record is written once
the message is done. The chair reads the progress on the week's review page (`cycle_record_progress`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime

from django.db.models import Count, Max, Q

from committee.models import OutboxMessage, ReviewCycle


def _record_key_prefix(cycle_id: int) -> str:
    return f"decision-record:{cycle_id}:"


def cycle_record_key(*, cycle: ReviewCycle) -> str:
    """The outbox key of one change's record write: one message per change (a key of its own each time, so a
    correction after the record of the publish was written is written too); the write itself is idempotent."""
    return f"{_record_key_prefix(cycle.pk)}{uuid.uuid4().hex}"


@dataclass(frozen=True)
class RecordProgress:
    waiting: int  # record writes asked for and not done yet
    last_error: str  # why the latest of them failed, "" if none has
    written_at: datetime | None  # when the latest write that is done was done

    @property
    def up_to_date(self) -> bool:
        return self.waiting == 0 and self.written_at is not None


def cycle_record_progress(*, cycle: ReviewCycle) -> RecordProgress:
    """Whether the week's decision record is written (its outbox messages done), being written, or failing.

    Two queries whatever the number of changes. A week finalized before records were written after commit has no
    message: waiting 0, written_at None.
    """
    messages = OutboxMessage.objects.filter(key__startswith=_record_key_prefix(cycle.pk))
    tally = messages.aggregate(
        waiting=Count("id", filter=Q(done_at__isnull=True)), written_at=Max("done_at")
    )
    error = ""
    if tally["waiting"]:
        error = (
            messages.filter(done_at__isnull=True).exclude(last_error="").order_by("-id")
            .values_list("last_error", flat=True).first()
        ) or ""
    return RecordProgress(waiting=tally["waiting"], last_error=error, written_at=tally["written_at"])
