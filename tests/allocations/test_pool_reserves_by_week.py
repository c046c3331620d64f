"""The engine places a week on the reserves in force in that week (the one store), not the pool's latest fields."""

from __future__ import annotations

from allocations.models import GpuPool
from allocations.selectors import pool_capacity, pool_reserves_for_week
from committee.selectors.publishing import engine_pools
from governed.services import policy_change_record
from tests.conftest import World


def test_a_reserve_change_reaches_the_plans_of_its_week_and_later_only(world: World) -> None:
    policy_change_record(actor=world.chair, changes={"pool.atlas/a100.burst_reserve_pct": 40},
                         effective_week="2026-W51", reason="Launch burst", source="command",
                         baseline={"pool.atlas/a100.standby_pct": 10})
    assert engine_pools(week="2026-W50")["atlas/a100"].burst_reserve_pct == 20
    assert engine_pools(week="2026-W51")["atlas/a100"].burst_reserve_pct == 40
    [pool] = pool_reserves_for_week(week="2027-W02", pools=[world.a100])
    assert pool_capacity(pool=pool).burst_reserve_pct == 40
    # The pool holds no reserve of its own: the current week (W49) reads the store's value in force then.
    assert GpuPool.objects.select_related("cluster").get(pk=world.a100.pk).burst_reserve_pct == 20
