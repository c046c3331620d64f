"""Rows only services write are read-only in the admin of every app, for a superuser too."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.contrib.auth import get_user_model
from django.urls import reverse

from allocations.models import AllocationPlan, AllocationWindow, UsageRecord, WindowSyncStatus
from committee.models import Notification, NotificationDigest, OutboxMessage
from tests.allocations.plans import W, publish


@pytest.fixture(autouse=True)
def clock():
    with time_machine.travel(datetime(2026, 12, 1, 10, 0, tzinfo=UTC), tick=False):
        yield


@pytest.fixture
def root(client, world):
    get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    client.force_login(get_user_model().objects.get(username="root"))
    publish([W(world.a100, world.team_a, 16, 8, 56, ref=1)], refs_are_requests=False, explanations=[])
    start = world.cycle.starts_at
    UsageRecord.objects.create(pool=world.a100, team=world.team_a, period_start=start,
                               period_end=start + timedelta(hours=1), gpu_hours_used=8, mean_utilization_pct=90,
                               idempotency_key="u1")
    return client


def url(model, view, *args):
    meta = model._meta
    return reverse(f"admin:{meta.app_label}_{meta.model_name}_{view}", args=args)


@pytest.mark.parametrize("model", [AllocationPlan, AllocationWindow, UsageRecord])
def test_published_rows_are_shown_and_never_changed(root, model):
    obj = model.objects.get()
    changelist = root.get(url(model, "changelist"))
    assert changelist.status_code == 200 and "delete_selected" not in changelist.content.decode()
    assert root.get(url(model, "change", obj.pk)).status_code == 200
    assert root.get(url(model, "add")).status_code == 403
    assert root.get(url(model, "delete", obj.pk)).status_code == 403
    assert root.post(url(model, "change", obj.pk), {}).status_code == 403
    assert model.objects.filter(pk=obj.pk).exists()


@pytest.mark.parametrize("model", [WindowSyncStatus, OutboxMessage, Notification, NotificationDigest])
def test_service_written_rows_cannot_be_added(root, model):
    assert root.get(url(model, "changelist")).status_code == 200
    assert root.get(url(model, "add")).status_code == 403
