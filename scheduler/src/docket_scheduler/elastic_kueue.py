"""The elastic agent's lending on Kueue: what it changes on a team's ClusterQueue (pure; no Kubernetes client here).

docket-kueue-sync renders each team's ClusterQueue (docket_scheduler.kueue) with a `lendingLimit` per flavor that
already holds what Docket's hourly evaluation offers (`lendable_gpus`). The agent decides at the minute
(elastic_agent.decide: idle lending, the night opening); on Kueue its decision is this patch of the team's queue:
the flavor's `nvidia.com/gpu` `lendingLimit` raised by the GPUs the agent lends, never above the flavor's standard GPUs
(the queue's `docket.io/windows` annotation: a priority window is a reservation, the agent never lends it) nor its
`nominalQuota` (Kueue's webhook refuses more). Where the sync already lends every standard GPU (`standard_lend_pct`
100, its default: Kueue lends idle quota by itself), the agent adds nothing; it matters where the operator lends less
(`--standard-lend-pct`). The raise is written in the annotation `docket.io/elastic-lent` (flavor → GPUs) so the
next minute, or a reclaim, takes back exactly what the agent added and nothing the sync set. Borrowing is left as
the sync renders it: a borrower's queue already has no `borrowingLimit` where it holds preemptible windows, and an
owner takes its GPUs back with `reclaimWithinCohort: Any` within seconds, whatever the agent does.

`KueueLending` is how the agent's minute loop applies it (`docket-elastic-agent --kueue`): it reads the cluster's
ClusterQueues from the Kubernetes API server (those docket-kueue-sync labels for the cluster), patches each team's
with what is lent and opened for the night (flavor → GPUs), and applies the queues that change by server-side apply,
as the sync does. The sync's next pass puts its own lendingLimit back (the annotation goes with it); the agent's next
minute applies its lending again. The burst reserve and the cold standby stay Slurm's (the scavenger and quota QOS):
on Kueue a hot team borrows its cohort's idle quota by itself.

Standard library only.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from docket_scheduler.base import DesiredWindow
from docket_scheduler.kube_api import KubeClient, KubeError
from docket_scheduler.kueue import (
    ANNOTATION_PREFIX,
    API_VERSIONS,
    CLUSTER_LABEL,
    GPU_RESOURCE,
    MANAGED_BY_KEY,
    cluster_queue_name,
)

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


# What the API server adds to an object; a server-side apply sends what the agent means, nothing it read.
SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation")


class KueueLendingError(Exception):
    """The API server could not be read or refused a queue (the agent's AgentError carries the message)."""


@dataclass
class KueueLending:
    """The agent's lending on Kueue: each team's ClusterQueue `lendingLimit`, raised by what is lent and taken back
    on a reclaim (`lend_on_cluster_queue`). `queues` holds the team's queues as the last `read` found them."""

    kube: KubeClient
    cluster: str
    api_version: str = "v1beta2"
    queues: dict[str, dict[str, Any]] = field(default_factory=dict)  # ClusterQueue name → the object

    what = "the ClusterQueues' lendingLimit"

    def read(self) -> None:
        """The cluster's ClusterQueues docket-kueue-sync applied (its labels), kept in `queues`."""
        if self.api_version not in API_VERSIONS:
            raise KueueLendingError(f"unknown Kueue API version {self.api_version!r}")
        selector = f"{MANAGED_BY_KEY}=docket,{CLUSTER_LABEL}={self.cluster}"
        try:
            found = self.kube.list(f"kueue.x-k8s.io/{self.api_version}", "ClusterQueue", label_selector=selector)
        except KubeError as exc:
            raise KueueLendingError(f"the ClusterQueues not read: {exc}") from None
        self.queues = {str(q.get("metadata", {}).get("name")): q for q in found}

    def owner_preempts(self) -> Callable[[DesiredWindow], bool]:
        """A window is lent only where its team's queue takes lent GPUs back from the cohort (`reclaimWithinCohort`
        other than Never), as the sync renders it: the owner's workload preempts the borrower within seconds."""

        def check(window: DesiredWindow) -> bool:
            queue = self.queues.get(cluster_queue_name(window.team))
            if queue is None:
                return False
            spec = queue.get("spec", {})
            cohort = spec.get("cohortName") or spec.get("cohort")
            return bool(cohort) and (spec.get("preemption") or {}).get("reclaimWithinCohort", "Never") != "Never"

        return check

    def apply(self, lent: Mapping[str, Mapping[str, int]], *, dry_run: bool) -> str | None:
        """Patch each team's queue to lend `lent[team]` (flavor → GPUs) beyond the sync's lendingLimit, and take back
        what a team no longer lends; apply the queues that change. What was applied, None when nothing changed.
        A queue the agent cannot patch (another hand lowered its lendingLimit) or the API server refuses stops the
        minute: the queues before it are applied, the agent reports nothing and tries again the next minute."""
        by_queue = {cluster_queue_name(team): flavors for team, flavors in lent.items()}
        missing = sorted(name for name, flavors in by_queue.items() if any(flavors.values()) and name not in
                         self.queues)
        if missing:
            raise KueueLendingError(f"no ClusterQueue {', '.join(missing)}: docket-kueue-sync has not applied it")
        lines = []
        for name, queue in sorted(self.queues.items()):
            try:
                patched = lend_on_cluster_queue(queue, by_queue.get(name, {}))
            except KueuePatchError as exc:
                raise KueueLendingError(f"ClusterQueue {name}: {exc}") from None
            if patched == queue:
                continue
            metadata = patched["metadata"]
            for key in SERVER_FIELDS:
                metadata.pop(key, None)
            patched.pop("status", None)
            if not dry_run:
                try:
                    self.kube.apply(patched)
                except KubeError as exc:
                    raise KueueLendingError(f"ClusterQueue {name} not applied: {exc}") from None
                self.queues[name] = patched
            lines.append(f"ClusterQueue {name} lendingLimit " + ", ".join(
                f"{flavor}={gpus}" for flavor, gpus in _lending_limits(patched).items()))
        return "; ".join(lines) or None


def _lending_limits(cluster_queue: Mapping[str, Any]) -> dict[str, int]:
    return {str(flavor.get("name")): int(resource.get("lendingLimit", 0))
            for group in cluster_queue.get("spec", {}).get("resourceGroups", [])
            for flavor in group.get("flavors", [])
            for resource in flavor.get("resources", []) if resource.get("name") == GPU_RESOURCE}
