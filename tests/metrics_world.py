"""A world with something to measure, for the /metrics tests, and what its gauges must say."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.utils import timezone

from allocations.models import AllocationWindow, SyncState, UsageRecord, WindowSyncStatus
from committee.models import Notification, OutboxMessage
from tests.allocations.plans import W, publish


def build_metrics_world(world: Any) -> dict[str, float]:
    """Windows in each sync state, an outbox backlog, a usage report, a late notification; the expected samples.

    The suite's now is Wednesday 2026-12-02 10:00 UTC, hour 58 of week 2026-W49 (UTC, the default zone).
    """
    now = timezone.now()
    publish([
        W(world.a100, world.team_a, 8, 48, 96, ref=1),  # running since Wednesday 00:00: in sync
        W(world.a100, world.team_b, 8, 60, 90, ref=2),  # starts in 2 h: failed to sync
        W(world.h100, world.team_a, 8, 100, 120, ref=3),  # starts Thursday: no report yet
        W(world.h100, world.team_b, 8, 0, 24, ref=4),  # ended Tuesday: not counted
    ])
    windows = {w.request_ref: w for w in AllocationWindow.objects.all()}
    for ref, state in ((1, SyncState.IN_SYNC), (2, SyncState.FAILED), (4, SyncState.FAILED)):
        WindowSyncStatus.objects.create(
            window=windows[ref], client_name="slurm-sync", state=state, nodes_requested=1,
            nodes_reserved=1 if state == SyncState.IN_SYNC else 0, reported_at=now,
        )
    OutboxMessage.objects.all().delete()
    for minutes, done in ((15, False), (5, False), (0, False), (60, True)):
        OutboxMessage.objects.create(
            key=f"metrics-{minutes}", task_name="committee.send_digests", created_at=now - timedelta(minutes=minutes),
            done_at=now if done else None, done_by="worker@test pid 1" if done else "",
        )
    record = UsageRecord.objects.create(
        pool=world.a100, team=world.team_a, period_start=now - timedelta(hours=3), period_end=now - timedelta(hours=2),
        gpu_hours_used=Decimal(8), mean_utilization_pct=80, idempotency_key="metrics-1",
    )
    UsageRecord.objects.filter(pk=record.pk).update(reported_at=now - timedelta(hours=2))
    Notification.objects.all().delete()
    Notification.objects.create(recipient=world.chair, kind="intake_closing", key="late",
                                created_at=now - timedelta(days=2))
    Notification.objects.create(recipient=world.chair, kind="intake_closing", key="fresh", created_at=now)
    return {
        "docket_outbox_backlog": 3,
        "docket_outbox_oldest_waiting_age_seconds": 900,
        'docket_windows{state="in_sync"}': 1,
        'docket_windows{state="failed"}': 1,
        'docket_windows{state="short"}': 0,
        'docket_windows{state="unreported"}': 1,
        'docket_windows_next_start_seconds{state="failed"}': 2 * 3600,
        'docket_usage_report_age_seconds{cluster="atlas"}': 2 * 3600,
        f'docket_cycle_state{{state="open",week="{world.cycle.week}"}}': 1,
        f'docket_cycle_state{{state="in_review",week="{world.cycle.week}"}}': 0,
        "docket_notifications_waiting_over_a_day": 1,
        "docket_metrics_database_up": 1,
    }
