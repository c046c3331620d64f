"""The elastic agent's lending on Kueue: what it changes on a team's ClusterQueue (pure; no Kubernetes client here).

docket-kueue-sync renders each team's ClusterQueue (docket_scheduler.kueue) with a `lendingLimit` per flavor that
already holds what Docket's hourly evaluation offers (`lendable_gpus`). The agent decides at the minute
(elastic_agent.decide: idle lending, the night opening); on Kueue its decision is this patch of the team's queue:
the flavor's `nvidia.com/gpu` `lendingLimit` raised by the GPUs the agent lends, never above the flavor's standard GPUs
(the queue's `docket.io/windows` annotation: a priority window is a reservation, the agent never lends it) nor its
`nominalQuota` (Kueue's webhook refuses more). Where the sync already lends every standard GPU (`standard_lend_pct`
100, its default: Kueue lends idle quota by itself), the agent adds nothing; it matters where the operator lends less
(`--standard-lend-pct`). The raise is written written in the annotation `docket.io/elastic-lent` (flavor → GPUs) so the
next minute, or a reclaim, takes back exactly what the agent added and nothing the sync set. Borrowing is left as
the sync renders it: a borrower's queue already has no `borrowingLimit` where it holds preemptible windows, and an
owner takes its GPUs back with `reclaimWithinCohort: Any` within seconds, whatever the agent does.

Standard library only.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

from docket_scheduler.kueue import ANNOTATION_PREFIX, GPU_RESOURCE

LENT_ANNOTATION = f"{ANNOTATION_PREFIX}elastic-lent"


class KueuePatchError(ValueError):
    """The ClusterQueue does not have the shape docket-kueue-sync renders: nothing is patched."""


def agent_lent(cluster_queue: Mapping[str, Any]) -> dict[str, int]:
    """What the agent added to each flavor's lendingLimit, from the queue's annotation ({} when nothing)."""
    text = (cluster_queue.get("metadata", {}).get("annotations") or {}).get(LENT_ANNOTATION)
    if not text:
        return {}
    try:
        found = json.loads(text)
    except ValueError:
        raise KueuePatchError(f"the annotation {LENT_ANNOTATION} is not JSON: {text!r}") from None
    if not isinstance(found, dict) or not all(isinstance(v, int) and v >= 0 for v in found.values()):
        raise KueuePatchError(f"the annotation {LENT_ANNOTATION} is not flavor → GPUs: {text!r}")
    return {str(k): int(v) for k, v in found.items()}


def lend_on_cluster_queue(cluster_queue: Mapping[str, Any], lent: Mapping[str, int]) -> dict[str, Any]:
    """A copy of `cluster_queue` whose flavors lend, beyond what the sync set, the GPUs in `lent` (flavor → GPUs;
    a flavor left out or 0 lends nothing more). The lendingLimit never goes above the flavor's standard GPUs (or what
    the sync set, when more) nor its nominalQuota.
    Idempotent: patching the result again with the same `lent` gives the same object."""
    if cluster_queue.get("kind") != "ClusterQueue":
        raise KueuePatchError(f"not a ClusterQueue: {cluster_queue.get('kind')!r}")
    if any(gpus < 0 for gpus in lent.values()):
        raise KueuePatchError("GPUs lent cannot be negative")
    patched = copy.deepcopy(dict(cluster_queue))
    before = agent_lent(patched)
    standard = _standard_gpus(patched)
    seen: set[str] = set()
    after: dict[str, int] = {}
    for group in patched.get("spec", {}).get("resourceGroups", []):
        for flavor in group.get("flavors", []):
            name = str(flavor.get("name", ""))
            for resource in flavor.get("resources", []):
                if resource.get("name") != GPU_RESOURCE:
                    continue
                seen.add(name)
                nominal = int(resource.get("nominalQuota", 0))
                base = int(resource.get("lendingLimit", 0)) - before.get(name, 0)
                if base < 0:
                    raise KueuePatchError(f"flavor {name}: lendingLimit is below what the agent added: changed by "
                                          "another hand")
                raise_by = min(int(lent.get(name, 0)), max(0, min(nominal, standard.get(name, 0)) - base))
                resource["lendingLimit"] = base + raise_by
                if raise_by:
                    after[name] = raise_by
    unknown = sorted({k for k, v in lent.items() if v} - seen)
    if unknown:
        raise KueuePatchError(f"the queue has no {GPU_RESOURCE} quota on flavor {', '.join(unknown)}")
    annotations = patched.setdefault("metadata", {}).setdefault("annotations", {})
    if after:
        annotations[LENT_ANNOTATION] = json.dumps(dict(sorted(after.items())), separators=(",", ":"))
    else:
        annotations.pop(LENT_ANNOTATION, None)
    return patched


def _standard_gpus(cluster_queue: Mapping[str, Any]) -> dict[str, int]:
    """Each flavor's GPUs of the team's active standard windows, from the annotation docket-kueue-sync writes."""
    text = (cluster_queue.get("metadata", {}).get("annotations") or {}).get(f"{ANNOTATION_PREFIX}windows") or "[]"
    try:
        windows = json.loads(text)
        found: dict[str, int] = {}
        for window in windows:
            if window["tier"] == "standard":
                found[str(window["flavor"])] = found.get(str(window["flavor"]), 0) + int(window["gpus"])
    except (ValueError, KeyError, TypeError):
        raise KueuePatchError(f"the annotation {ANNOTATION_PREFIX}windows is not the sync's: {text[:100]!r}") from None
    return found
