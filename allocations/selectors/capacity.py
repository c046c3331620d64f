"""What each pool can hold in a week: the engine's capacity, with its reserves."""

from __future__ import annotations

from collections.abc import Iterable

from django.utils import timezone

from allocations import engine
from allocations.models import GpuPool
from core.datetimes import format_isoweek
from governed.params import POOL_PREFIX, pool_reserves
from governed.selectors import policy_values


def pool_reserves_for_week(*, week: str, pools: Iterable[GpuPool]) -> list[GpuPool]:
    """`pools` as the engine places on them in `week`: each one's burst reserve, cold standby and fast-lane reserve
    (in memory, never saved) the values in force that week (the one store, governed), or the declared defaults for a
    pool no change names. One query, for any number of pools."""
    stored = policy_values(week=week, prefix=POOL_PREFIX)
    out = list(pools)
    for pool in out:
        pool._reserves = pool_reserves(stored, pool.key)
    return out


def pool_reserves_now(pools: Iterable[GpuPool]) -> list[GpuPool]:
    """`pools` with the reserves in force in the current week (`pool_reserves_for_week`). One query."""
    return pool_reserves_for_week(week=format_isoweek(timezone.now()), pools=pools)


def pool_capacity(*, pool: GpuPool) -> engine.PoolCapacity:
    """A pool as the engine's input: its GPUs and the reserves held back from them."""
    return engine.PoolCapacity(
        key=pool.key,
        gpu_count=pool.gpu_count,
        gpu_model=pool.gpu_model,
        burst_reserve_pct=pool.burst_reserve_pct,
        standby_pct=pool.standby_pct,
        fast_lane_pct=pool.fast_lane_pct,
    )


def pool_week_capacity(*, pool: GpuPool, hours: int) -> engine.WeekCapacity:
    """The GPU-hours the engine can place on a pool over a week of `hours` hours (standard + burst).

    Every page, API and command that shows a pool's capacity reads it here, so it is what the
    engine places, by the engine's own reserve rule.
    """
    return engine.week_capacity(pool_capacity(pool=pool), hours=hours)


def pool_week_capacity_list(*, hours: int) -> list[tuple[GpuPool, engine.WeekCapacity]]:
    """Every pool (by cluster name, then slug) with its week's capacity, as `pool_week_capacity`, by the reserves in
    force this week. Two queries."""
    pools = pool_reserves_now(GpuPool.objects.select_related("cluster").order_by("cluster__name", "slug"))
    return [(pool, pool_week_capacity(pool=pool, hours=hours)) for pool in pools]


def pool_list_with_capacity(
    *, hours: int = 168
) -> list[tuple[GpuPool, engine.WeekCapacity, tuple[int, int, int]]]:
    """Every pool with its week's capacity and its reserved GPUs (burst, standby, fast lane), for the pools API. Two
    queries."""
    return [
        (pool, capacity, (*engine.reserved_gpus(pool_capacity(pool=pool)),
                          engine.fast_lane_gpus(pool_capacity(pool=pool))))
        for pool, capacity in pool_week_capacity_list(hours=hours)
    ]
