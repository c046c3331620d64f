"""Signals the allocations app sends to the apps built on it (it imports none of them).

`windows_sync_failed` is sent inside the transaction that stored a scheduler's sync report, so a
receiver that writes (the committee's outbox) commits with the report or not at all. Sent with
sender=WindowSyncStatus and window_ids=<list of AllocationWindow ids> that have just become
"failed" (they were not failed at the previous report).
"""

from __future__ import annotations

from django.dispatch import Signal

windows_sync_failed = Signal()
