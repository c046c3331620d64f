"""The elastic agent's lending on Kueue (docket_scheduler.elastic_kueue): the ClusterQueue docket-kueue-sync renders,
patched as the agent would, still valid against Kueue v0.19.2's own CRD schemas (tests/data/kueue), lending what the
agent adds and no more, and back to the sync's figure when the agent takes it back."""

from __future__ import annotations

import pytest

from docket_scheduler.elastic_kueue import LENT_ANNOTATION, KueuePatchError, agent_lent, lend_on_cluster_queue
from docket_scheduler.kueue import KueuePolicy, render
from tests.allocations.test_kueue import AT, TIERED, by_kind, limits, validate


@pytest.mark.parametrize("api_version", ["v1beta2", "v1beta1"])
def test_a_lend_raises_the_flavors_lending_limit_within_its_quota_and_a_reclaim_puts_the_syncs_back(
        api_version: str) -> None:
    # The operator lends a quarter of standard GPUs by itself; the rest only as the elastic policy says.
    objects = render(TIERED, at=AT, api_version=api_version, policy=KueuePolicy(standard_lend_pct=25))
    queue = by_kind(objects, "ClusterQueue")["docket-search"]
    # search: 8 priority (a reservation, never lent) and 16 standard GPUs on a100, 4 of them lent by the sync.
    assert limits(queue)["a100"] == {"nominalQuota": 24, "lendingLimit": 4, "borrowingLimit": 0}

    lent = lend_on_cluster_queue(queue, {"a100": 5})
    validate(lent)
    assert limits(lent)["a100"] == {"nominalQuota": 24, "lendingLimit": 9, "borrowingLimit": 0}
    assert limits(lent)["h100"] == limits(queue)["h100"] and agent_lent(lent) == {"a100": 5}
    assert lend_on_cluster_queue(lent, {"a100": 5}) == lent  # the same minute again: the same object
    # More than the standard GPUs: the priority window's 8 are never lent, so 12 more and no further.
    capped = lend_on_cluster_queue(lent, {"a100": 20})
    validate(capped)
    assert limits(capped)["a100"]["lendingLimit"] == 16 and agent_lent(capped) == {"a100": 12}
    # The reclaim: the sync's own lendingLimit and no annotation, whatever the agent added before.
    back = lend_on_cluster_queue(capped, {})
    validate(back)
    assert back == queue and LENT_ANNOTATION not in back["metadata"]["annotations"]
    assert queue["metadata"]["annotations"].get(LENT_ANNOTATION) is None  # the input is never changed


def test_a_queue_the_agent_cannot_read_is_refused_and_nothing_is_patched() -> None:
    queue = by_kind(render(TIERED, at=AT, policy=KueuePolicy(standard_lend_pct=0)), "ClusterQueue")["docket-search"]
    # The sync's default lends every standard GPU already (Kueue lends idle quota itself): the agent adds nothing.
    default = by_kind(render(TIERED, at=AT), "ClusterQueue")["docket-search"]
    assert lend_on_cluster_queue(default, {"a100": 5}) == default
    with pytest.raises(KueuePatchError, match=r"no nvidia\.com/gpu quota on flavor b200"):
        lend_on_cluster_queue(queue, {"b200": 2})
    with pytest.raises(KueuePatchError, match="cannot be negative"):
        lend_on_cluster_queue(queue, {"a100": -1})
    cohort = by_kind(render(TIERED, at=AT), "Cohort")["docket-atlas"]
    with pytest.raises(KueuePatchError, match="not a ClusterQueue"):
        lend_on_cluster_queue(cohort, {"a100": 1})
    # Someone lowered lendingLimit under what the agent added: the agent does not guess.
    lent = lend_on_cluster_queue(queue, {"a100": 5})
    lent["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["lendingLimit"] = 3  # 5 added, 0 the sync's
    with pytest.raises(KueuePatchError, match="changed by another hand"):
        lend_on_cluster_queue(lent, {"a100": 5})
    lent["metadata"]["annotations"][LENT_ANNOTATION] = "five"
    with pytest.raises(KueuePatchError, match="is not JSON"):
        lend_on_cluster_queue(lent, {})
