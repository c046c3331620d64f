"""The admin cannot change a pool's burst reserve or cold standby around the one-change-a-week rule."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from allocations.models import GpuPool
from governed.models import PolicyChange
from tests.conftest import World


@pytest.fixture
def admin_client(world: World) -> Client:
    root = get_user_model().objects.create_superuser("root", "root@example.com", "pw-root-123456")
    client = Client()
    client.force_login(root)
    return client


def _form(pool: GpuPool, **overrides: Any) -> dict[str, Any]:
    return {
        "cluster": pool.cluster_id, "slug": pool.slug, "gpu_model": pool.gpu_model, "gpu_count": pool.gpu_count,
        "gpus_per_node": pool.gpus_per_node, "burst_reserve_pct": pool.burst_reserve_pct,
        "standby_pct": pool.standby_pct, "price_per_gpu_hour": "1.0000", "scheduler_label": pool.scheduler_label,
        "change_reason": "New rate card.", **overrides,
    }


def _reserves(pk: int) -> tuple[int, int]:
    """(burst reserve %, cold standby %): the two the admin asks for (the fast-lane reserve is the policy lab's)."""
    burst, standby, _fast_lane = GpuPool.objects.select_related("cluster").get(pk=pk).reserves()
    return burst, standby


def test_the_change_page_shows_the_reserves_read_only_and_ignores_a_posted_reserve(admin_client: Client,
                                                                                 world: World) -> None:
    url = reverse("admin:allocations_gpupool_change", args=[world.a100.pk])
    page = admin_client.get(url).content.decode()
    assert 'name="burst_reserve_pct"' not in page and 'name="standby_pct"' not in page
    assert 'name="price_per_gpu_hour"' not in page
    changes = PolicyChange.objects.count()
    response = admin_client.post(url, _form(world.a100, burst_reserve_pct=45, standby_pct=0))
    assert response.status_code == 302
    pool = GpuPool.objects.get(pk=world.a100.pk)
    assert (*_reserves(pool.pk), pool.price_per_gpu_hour) == (20, 10, 0)
    assert PolicyChange.objects.count() == changes


def test_reverting_a_historical_row_keeps_the_reserves(admin_client: Client, world: World) -> None:
    pool = world.a100
    first = pool.history.earliest()
    changes = PolicyChange.objects.count()
    url = reverse("admin:allocations_gpupool_simple_history", args=[pool.pk, first.history_id])
    response = admin_client.post(url, _form(pool, burst_reserve_pct=30, change_reason="Back to the first row."),
                                 follow=True)
    assert response.status_code == 200
    assert _reserves(pool.pk) == (20, 10) and PolicyChange.objects.count() == changes


def test_a_new_pool_is_added_with_its_first_reserves_and_price(admin_client: Client, world: World) -> None:
    form = _form(world.a100, slug="a100b", burst_reserve_pct=15, standby_pct=5, price_per_gpu_hour="3.1415")
    assert admin_client.post(reverse("admin:allocations_gpupool_add"), form).status_code == 302
    pool = GpuPool.objects.select_related("cluster").get(slug="a100b")
    assert _reserves(pool.pk) == (15, 5) and str(pool.price_per_gpu_hour) == "3.1415"
    # Recorded in the one store, exempt from one change a week: a new pool changes no number in force.
    recorded = PolicyChange.objects.get(source_ref=f"pool:{pool.pk}")
    assert recorded.exempt_reason and recorded.source == "admin" and recorded.reason == "New rate card."


def test_a_new_pool_with_reserves_reaching_100_is_refused_and_nothing_is_written(admin_client: Client,
                                                                                  world: World) -> None:
    changes = PolicyChange.objects.count()
    form = _form(world.a100, slug="a100c", burst_reserve_pct=95, standby_pct=10)
    response = admin_client.post(reverse("admin:allocations_gpupool_add"), form)
    assert response.status_code == 200 and "must stay below 100%" in response.content.decode()
    assert not GpuPool.objects.filter(slug="a100c").exists() and PolicyChange.objects.count() == changes
