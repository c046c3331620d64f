"""Where a week's decision record stands: the archive writes it after the change commits, through the outbox.

A finalize, publish, correction or appeal writes one outbox message for the record in its own transaction
(`reports.services.decision_record_enqueue`, which names it with `cycle_record_key`); the record is written once
the message is done. The chair reads the progress on the week's review page (`cycle_record_progress`). The weekly
clock asks for it again for a week that ended with elastic agents' actions its record lacks (`cycles_record_behind`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Count, Max, Q

from allocations.elastic.selectors import agent_actions_last_received
from committee.models import CycleStatus, OutboxMessage, ReviewCycle


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


# The clock brings an ended week's record up to date with the agents' actions that reach Docket up to this long after
# the week's end (an agent cut off from Docket reports when it is back); `manage.py sync_decision_records --week` any
# later one. As the outcomes' catch-up (committee.services.realized.ASK_CATCH_UP): a bound on what each hour reads.
AGENT_ACTIONS_CATCH_UP = timedelta(days=7)


def cycles_record_behind(*, now: datetime) -> list[ReviewCycle]:
    """The finalized or published weeks ended in the last AGENT_ACTIONS_CATCH_UP whose decision record lacks some of
    the elastic agents' actions acted in the week: no write of the record is waiting, and the last one was done before
    the week ended (it said the week had not ended) or before Docket received one of those actions.

    A week's record written after its end and after its last action lists them all (`decision_record_data`), so once
    that write is done the week is not behind any more: each late batch of actions is written once. Three queries a
    week ended in that span (one or two), one when none ended.
    """
    ended = ReviewCycle.objects.filter(
        status__in=[CycleStatus.FINALIZED, CycleStatus.PUBLISHED],
        ends_at__lte=now, ends_at__gt=now - AGENT_ACTIONS_CATCH_UP,
    ).order_by("starts_at")
    behind = []
    for cycle in ended:
        received = agent_actions_last_received(acted_from=cycle.starts_at, acted_before=cycle.ends_at)
        if received is None:
            continue  # no agent acted in the week: its record has nothing to add
        progress = cycle_record_progress(cycle=cycle)
        if progress.waiting:
            continue  # a write is on its way, and it reads every action received by then
        if progress.written_at is None or progress.written_at < max(cycle.ends_at, received):
            behind.append(cycle)
    return behind
