"""What a pool's GPU-hour costs in a week: the governed value `pool.<cluster>/<slug>.price_per_gpu_hour`
(governed.params), versioned with an effective week like every rule. Every reader of a price (charges, statements,
the dashboards' costs) reads it here, for the week it prices."""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal

from allocations.models import GpuPool
from governed.params import BILLING_WEIGHT, POOL_PREFIX, PRICE, billing_weight, pool_price
from governed.selectors import policy_values_for_weeks


def pool_keys_by_id(*, pool_ids: Iterable[int]) -> dict[int, str]:
    """Each pool's key ("cluster/slug"), the name its governed values are kept under, by pool id. One query."""
    return {
        pk: f"{cluster}/{slug}"
        for pk, cluster, slug in GpuPool.objects.filter(pk__in=set(pool_ids)).values_list("pk", "cluster__slug", "slug")
    }


def pool_prices(*, keys: Iterable[tuple[int, str]]) -> dict[tuple[int, str], Decimal]:
    """For each (pool id, ISO week): the pool's price per GPU-hour in force that week, 0 where no change names the
    pool. Two queries, whatever the count (none without keys)."""
    keys = set(keys)
    if not keys:
        return {}
    pool_keys = pool_keys_by_id(pool_ids={pool_id for pool_id, _week in keys})
    in_force = policy_values_for_weeks(
        weeks=sorted({week for _pool, week in keys}),
        keys=tuple(f"{POOL_PREFIX}{key}.{PRICE}" for key in pool_keys.values()))
    return {(pool_id, week): pool_price(in_force.get(week, {}), pool_keys.get(pool_id, "")) for pool_id, week in keys}


def pool_prices_for_weeks(*, pools: Iterable[GpuPool], weeks: Iterable[str]) -> dict[tuple[int, str], Decimal]:
    """`pool_prices` of every pool (with its cluster loaded) in every week. One query."""
    pools, weeks = list(pools), sorted(set(weeks))
    if not pools or not weeks:
        return {}
    in_force = policy_values_for_weeks(weeks=weeks, keys=tuple(f"{POOL_PREFIX}{p.key}.{PRICE}" for p in pools))
    return {(pool.pk, week): pool_price(in_force.get(week, {}), pool.key) for pool in pools for week in weeks}


def pool_prices_and_weights_for_weeks(
    *, pools: Iterable[GpuPool], weeks: Iterable[str]
) -> dict[tuple[int, str], tuple[Decimal, Decimal]]:
    """Each pool's (with its cluster loaded) price per GPU-hour and billing weight (A100-equivalents of one of its
    GPU-hours) in force in each week, as `pool_prices_for_weeks` and `governed.params.billing_weight` read them. One
    query."""
    pools, weeks = list(pools), sorted(set(weeks))
    if not pools or not weeks:
        return {}
    in_force = policy_values_for_weeks(weeks=weeks, keys=tuple(
        f"{POOL_PREFIX}{p.key}.{field}" for p in pools for field in (PRICE, BILLING_WEIGHT)))
    return {(pool.pk, week): (pool_price(in_force.get(week, {}), pool.key),
                              billing_weight(in_force.get(week, {}), pool.key))
            for pool in pools for week in weeks}
