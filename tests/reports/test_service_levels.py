"""Service levels: a pool's queue-wait target, set in the admin with a reason, and the monthly review's flag when the
month's measured mean queue wait is above it (equal meets it; no target or no usage, no flag)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from allocations.models import GpuPool, UsageRecord
from reports.dashboards import monthly

MONTH = "2026-11"
NOW_AFTER = monthly.month_bounds("2026-12")[0] + timedelta(days=1)


def _use(pool: GpuPool, team: Any, *, gpu_hours: str, wait: str, key: str, day: int = 3) -> None:
    start = monthly.month_bounds(MONTH)[0] + timedelta(days=day)
    UsageRecord.objects.create(
        pool=pool, team=team, period_start=start, period_end=start + timedelta(hours=1),
        gpu_hours_used=Decimal(gpu_hours), mean_utilization_pct=80, mean_queue_wait_minutes=Decimal(wait),
        idempotency_key=key,
    )


def _target(pool: GpuPool, minutes: int | None) -> None:
    pool.queue_wait_target_minutes = minutes
    pool._change_reason = "test"  # type: ignore[attr-defined]
    pool.save()


def _level(review: monthly.MonthlyReview, key: str) -> monthly.ServiceLevel | None:
    return next(row.service_level for row in review.rows if row.key == key)


def test_a_pool_waiting_longer_than_its_target_is_flagged_with_the_gpu_hour_weighted_mean(world):
    _target(world.a100, 15)
    # Weighted by GPU-hours: (30 × 10 + 10 × 40) / 40 = 17.5 minutes, above 15; the plain mean would be 25.
    _use(world.a100, world.team_a, gpu_hours="30", wait="10", key="a")
    _use(world.a100, world.team_b, gpu_hours="10", wait="40", key="b", day=4)
    review = monthly.monthly_review(month=MONTH, now=NOW_AFTER)
    level = _level(review, "atlas/a100")
    assert level is not None and level.breached
    assert (level.target_minutes, level.measured_minutes, level.over_minutes) == (15, Decimal("17.5"), Decimal("2.5"))
    assert [row.key for row, _level in review.service_level_breaches] == ["atlas/a100"]


@pytest.mark.parametrize(("wait", "breached"), [("15.0", False), ("15.1", True), ("14.9", False)])
def test_a_wait_equal_to_the_target_meets_it(world, wait, breached):
    _target(world.a100, 15)
    _use(world.a100, world.team_a, gpu_hours="5", wait=wait, key="a")
    level = _level(monthly.monthly_review(month=MONTH, now=NOW_AFTER), "atlas/a100")
    assert level is not None and level.breached is breached


def test_no_target_or_no_usage_is_no_flag(world):
    _target(world.h100, 10)  # a target, but no usage reported on h100 this month
    _use(world.a100, world.team_a, gpu_hours="5", wait="500", key="a")  # a long wait, but no target on a100
    review = monthly.monthly_review(month=MONTH, now=NOW_AFTER)
    assert _level(review, "atlas/a100") is None
    h100 = _level(review, "orion/h100")
    assert h100 is not None and h100.measured_minutes is None and not h100.breached
    assert review.service_level_breaches == []


def test_the_monthly_review_page_shows_the_breach_with_its_figures(world, client, clock):
    clock.move_to(NOW_AFTER, tick=False)
    _target(world.a100, 15)
    _target(world.h100, 60)
    _use(world.a100, world.team_a, gpu_hours="8", wait="22.5", key="a")
    _use(world.h100, world.team_b, gpu_hours="8", wait="30", key="b")
    client.force_login(world.finance)
    html = client.get(reverse("reports:monthly-review") + f"?month={MONTH}").content.decode()
    assert "1 pool waited longer than its target" in html
    assert "atlas/a100: a mean queue wait of 22.5 minutes against a target of 15 minutes" in html
    assert "above target by 7.5 min" in html
    assert "orion/h100: a mean queue wait" not in html  # 30 minutes meets its 60
    assert reverse("reports:executive-summary", args=[MONTH]) in html


def test_without_any_target_the_page_says_how_to_set_one(world, client, clock):
    clock.move_to(NOW_AFTER, tick=False)
    _use(world.a100, world.team_a, gpu_hours="8", wait="22.5", key="a")
    client.force_login(world.chair)
    html = client.get(reverse("reports:monthly-review") + f"?month={MONTH}").content.decode()
    assert "No pool has a queue-wait target." in html and "waited longer" not in html


@pytest.fixture
def admin_client(world: Any) -> Client:
    root = get_user_model().objects.create_superuser("root", "root@example.com", "pw", first_name="Ada")
    client = Client()
    client.force_login(root)
    return client


def _pool_form(pool: GpuPool, **overrides: Any) -> dict[str, Any]:
    return {
        "cluster": pool.cluster_id, "slug": pool.slug, "gpu_model": pool.gpu_model, "gpu_count": pool.gpu_count,
        "gpus_per_node": pool.gpus_per_node, "burst_reserve_pct": pool.burst_reserve_pct,
        "standby_pct": pool.standby_pct, "scheduler_label": pool.scheduler_label,
        **overrides,
    }


def test_the_target_is_set_in_the_admin_with_a_reason_kept_in_the_policy_history(world, admin_client, client):
    url = reverse("admin:allocations_gpupool_change", args=[world.a100.pk])
    refused = admin_client.post(url, _pool_form(world.a100, queue_wait_target_minutes="20", change_reason=" "))
    assert refused.status_code == 200 and "This field is required" in refused.content.decode()
    world.a100.refresh_from_db()
    assert world.a100.queue_wait_target_minutes is None

    zero = admin_client.post(url, _pool_form(world.a100, queue_wait_target_minutes="0", change_reason="Tighter."))
    assert zero.status_code == 200 and "greater than or equal to 1" in zero.content.decode()

    reason = "Teams agreed on a 20-minute service level for A100 jobs."
    assert admin_client.post(url, _pool_form(world.a100, queue_wait_target_minutes="20",
                                             change_reason=reason)).status_code == 302
    world.a100.refresh_from_db()
    assert world.a100.queue_wait_target_minutes == 20
    assert world.a100.history.latest().history_change_reason == reason
    client.force_login(world.member_a)
    html = client.get(reverse("committee:policy-history")).content.decode()
    assert "queue-wait target (minutes)" in html and reason in html
