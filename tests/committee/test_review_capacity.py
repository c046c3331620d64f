"""The capacity the review page and the API show is what the engine can place, by the engine's reserve rule."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import time_machine
from django.urls import reverse
from rest_framework.test import APIClient

from allocations import engine
from allocations.models import GpuPool
from tests.committee.reviewing import close
from tests.factories import file_request
from tests.governed.version_one import version_1_set


@pytest.fixture(autouse=True)
def clock():
    with time_machine.travel(datetime(2026, 12, 1, 10, 0, tzinfo=UTC), tick=False):
        yield


def engine_can_place(world, pool) -> tuple[int, int]:
    """GPU-hours the engine places on `pool` for two whole-week demands asking for every GPU.

    One standard, one preemptible: together they take all the engine will give, (standard, burst).
    """
    key = f"{pool.cluster.slug}/{pool.slug}"
    start, end = world.cycle.starts_at, world.cycle.ends_at
    hours = int((end - start).total_seconds()) // 3600
    demands = [
        engine.Demand(ref=ref, pool=key, gpu_count=pool.gpu_count, min_gpu_count=1, duration_hours=hours,
                      earliest_start=start, latest_end=end, preemptible_ok=preemptible)
        for ref, preemptible in ((1, False), (2, True))
    ]
    capacity = engine.PoolCapacity(key=key, gpu_count=pool.gpu_count, burst_reserve_pct=pool.burst_reserve_pct,
                                   standby_pct=pool.standby_pct)
    result = engine.allocate(week_start=start, pools=[capacity], demands=demands, hours=hours)
    placed = {w.tier: w.gpu_count * hours for w in result.windows}
    return placed.get(engine.TIER_PRIORITY, 0) + placed.get(engine.TIER_STANDARD, 0), placed[engine.TIER_PREEMPTIBLE]


def test_review_page_capacity_is_what_the_engine_can_place(client, world):
    file_request(world)
    close(world)
    client.force_login(world.reviewer)
    body = client.get(reverse("committee:review-cycle", args=[world.cycle.week])).content.decode()
    capacity = body[body.index('id="capacity"'):body.index('id="matrix-section"')]
    # a100: 64 GPUs keep 6 standby and 12 burst GPUs, so 46 × 168 + 12 × 168 = 7,728 + 2,016 = 9,744
    # (not 9,676, 70% + 20% of 64 × 168); h100: 32 GPUs keep 3 + 6, so 3,864 + 1,008 = 4,872.
    assert engine_can_place(world, world.a100) == (7728, 2016)
    assert engine_can_place(world, world.h100) == (3864, 1008)
    assert "9,744 <small>(7,728 + 2,016)</small>" in capacity
    assert "4,872 <small>(3,864 + 1,008)</small>" in capacity


def test_review_page_follows_a_pool_whose_reserves_round_down(client, world):
    version_1_set({"pool.orion/h100.burst_reserve_pct": "25", "pool.orion/h100.standby_pct": "10"})
    world.h100.gpu_count = 12
    world.h100.save()
    world.h100 = GpuPool.objects.select_related("cluster").get(pk=world.h100.pk)
    file_request(world)
    close(world)
    client.force_login(world.reviewer)
    body = client.get(reverse("committee:review-cycle", args=[world.cycle.week])).content.decode()
    # 12 GPUs: 3 burst and 1 standby GPU (25% and 10% round down), 8 standard GPUs for 168 hours.
    standard, burst = engine_can_place(world, world.h100)
    assert (standard, burst) == (8 * 168, 3 * 168)
    assert f"{standard + burst:,} <small>({standard:,} + {burst:,})</small>" in body


def test_cycle_api_shows_each_pools_capacity_as_the_engine_places_it(world):
    api = APIClient()
    api.force_authenticate(user=world.member_a)
    response = api.get(f"/api/v1/cycles/{world.cycle.week}/")
    assert response.status_code == 200
    standard, burst = engine_can_place(world, world.a100)
    assert response.json()["capacity"] == [
        {"pool": "atlas/a100", "gpu_model": "A100", "gpu_count": 64, "standard_gpu_hours": standard,
         "burst_gpu_hours": burst, "allocatable_gpu_hours": standard + burst},
        {"pool": "orion/h100", "gpu_model": "H100", "gpu_count": 32, "standard_gpu_hours": 3864,
         "burst_gpu_hours": 1008, "allocatable_gpu_hours": 4872},
    ]
