"""The engine through publishing: what allocate() places is what the database and the API hold."""

from __future__ import annotations

import random
from collections import defaultdict
from datetime import timedelta
from typing import Any

from rest_framework.test import APIClient

from allocations import selectors, services
from allocations.engine import Demand, PoolCapacity, allocate, reserved_gpus
from allocations.models import AllocationWindow
from tests.allocations.plans import bearer, this_week, token_for, week_start


def _pools(world):
    return {f"{p.cluster.slug}/{p.slug}": p for p in (world.a100, world.h100)}


def _demands(world, week_begins, count=60):
    rng = random.Random(7)
    keys = sorted(_pools(world))
    demands = []
    for ref in range(1, count + 1):
        gpus = rng.choice([4, 8, 8, 16, 24, 32])
        hours = rng.choice([12, 24, 36, 48, 72])
        earliest = rng.randrange(0, 168 - hours)
        latest = min(168, earliest + hours + rng.randrange(0, 72))
        demands.append(Demand(ref=ref, pool=rng.choice(keys), gpu_count=gpus, min_gpu_count=max(1, gpus // 2),
                              duration_hours=hours, earliest_start=week_begins + timedelta(hours=earliest),
                              latest_end=week_begins + timedelta(hours=latest), preemptible_ok=rng.random() < 0.3))
    return demands


def _publish(world, week, demands):
    pools = _pools(world)
    result = allocate(
        week_start=week_start(week),
        pools=[PoolCapacity(key=k, gpu_count=p.gpu_count, gpu_model=p.gpu_model,
                            burst_reserve_pct=p.burst_reserve_pct, standby_pct=p.standby_pct)
               for k, p in pools.items()],
        demands=demands,
    )
    teams = {d.ref: (world.team_a if d.ref % 2 else world.team_b) for d in demands}
    start, end = week_start(week), week_start(week) + timedelta(days=7)
    plan = services.plan_publish(week=week, week_starts_at=start, week_ends_at=end, source_ref="engine-test",
                                 windows=result.windows, explanations=result.explanations, pools=pools,
                                 teams=teams, published_by_name="Chris Chair")
    return plan, result


def test_published_windows_are_the_engines_and_never_exceed_capacity(world):
    week = this_week()
    plan, result = _publish(world, week, _demands(world, week_start(week)))
    pools = _pools(world)
    stored = {(w.request_ref, f"{w.cluster.slug}/{w.pool.slug}", w.gpu_count, w.start, w.end, w.tier)
              for w in selectors.plan_window_list(plan=plan)}
    assert stored == {(w.ref, w.pool, w.gpu_count, w.start, w.end, w.tier) for w in result.windows}
    assert len(stored) >= 10  # a busy week: many placed, some not
    assert [e.request_ref for e in plan.explanations.all()] == [e.ref for e in result.explanations]

    load: dict[tuple[str, object], list[int]] = defaultdict(lambda: [0, 0])  # (pool, hour) -> [standard, all]
    for w in AllocationWindow.objects.select_related("pool", "cluster"):
        hour = w.start
        while hour < w.end:
            cell = load[(f"{w.cluster.slug}/{w.pool.slug}", hour)]
            cell[1] += w.gpu_count
            if w.tier != "preemptible":
                cell[0] += w.gpu_count
            hour += timedelta(hours=1)
    for (key, _hour), (standard, total) in load.items():
        pool = pools[key]
        burst, standby = reserved_gpus(PoolCapacity(key=key, gpu_count=pool.gpu_count,
                                                    burst_reserve_pct=pool.burst_reserve_pct,
                                                    standby_pct=pool.standby_pct))
        assert total <= pool.gpu_count - standby
        assert standard <= pool.gpu_count - burst - standby


def test_the_api_serves_exactly_the_engines_windows_for_the_cluster(world):
    week = this_week()
    _plan, result = _publish(world, week, _demands(world, week_start(week), count=30))
    api = APIClient()
    api.credentials(**bearer(token_for(world.atlas)))
    seen: list[dict[str, Any]] = []
    url, params = "/api/v1/windows/", {"cluster": "atlas", "week": week, "page_size": "7"}
    page = api.get(url, params).json()
    seen.extend(page["results"])
    while page["next"]:
        page = api.get(page["next"]).json()
        seen.extend(page["results"])
    assert sorted((w["request_id"], w["gpu_count"], w["tier"]) for w in seen) == sorted(
        (w.ref, w.gpu_count, w.tier) for w in result.windows if w.pool == "atlas/a100"
    )


def test_rerunning_the_engine_on_the_same_input_changes_no_window(world):
    week = this_week()
    demands = _demands(world, week_start(week), count=40)
    first, _ = _publish(world, week, demands)
    second, _ = _publish(world, week, demands)
    assert second.version == 2 and second.windows.count() == 0  # every window carried over
    assert [w.pk for w in selectors.plan_window_list(plan=second)] == [
        w.pk for w in selectors.plan_window_list(plan=first)
    ]
