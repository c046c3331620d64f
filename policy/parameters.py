"""The vocabulary of policy parameters: the names a proposal changes and a replay overrides.

A key names one parameter. Pool parameters carry the pool's slug, elastic ones the field of
allocations.ElasticPolicyVersion:

    rubric.business_impact, rubric.feasibility, rubric.urgency, rubric.fairness   whole percents, sum 100
    pool.<slug>.burst_reserve_pct, pool.<slug>.standby_pct                        whole percents
    fairshare.half_life_weeks, fairshare.trailing_weeks                           whole weeks
    review.quorum                                                                 member scores per criterion
    elastic.<field>                                                               ElasticPolicyVersion's field
"""

from __future__ import annotations

RUBRIC_PREFIX = "rubric."
POOL_PREFIX = "pool."
ELASTIC_PREFIX = "elastic."
FAIRSHARE_HALF_LIFE = "fairshare.half_life_weeks"
FAIRSHARE_TRAILING = "fairshare.trailing_weeks"
QUORUM = "review.quorum"
POOL_FIELDS = ("burst_reserve_pct", "standby_pct")


def pool_key(slug: str, field: str) -> str:
    """`pool.<slug>.<field>` for one of POOL_FIELDS."""
    if field not in POOL_FIELDS:
        raise ValueError(f"not a pool parameter: {field}")
    return f"{POOL_PREFIX}{slug}.{field}"


def pool_key_parse(key: str) -> tuple[str, str] | None:
    """(slug, field) of a pool key, None for any other key."""
    if not key.startswith(POOL_PREFIX):
        return None
    slug, _dot, field = key.removeprefix(POOL_PREFIX).rpartition(".")
    if not slug or field not in POOL_FIELDS:
        return None
    return slug, field
