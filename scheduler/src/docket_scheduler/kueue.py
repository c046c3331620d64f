"""Render a cluster's windows as Kueue objects: the quotas, lending and borrowing that hold at `at`.

Kueue has no time windows, so the rendering is the state that holds at one moment `at`;
`kueue_sync` applies it at every window boundary (`next_change()`), or prints it (`--export`).

Objects (docs/adapters.md, "Kueue", has the long form):

- one WorkloadPriorityClass per tier, `docket-priority` > `docket-standard` >
  `docket-preemptible` (`TIER_PRIORITY_VALUES`); jobs pick one with the label
  `kueue.x-k8s.io/priority-class`;
- one Cohort per cluster (`docket-<cluster>` unless the operator names it) holding, per
  flavor, the GPUs of the cluster's active *preemptible* windows: the part of the burst
  reserve the engine placed, which belongs to no team's nominal quota and can only be
  borrowed;
- with departments (`departments`, from Docket's cluster reference): one Cohort per department that has a
  ClusterQueue, `<cohort>-<department key>`, whose parent (`parentName`) is the cluster's cohort and whose
  `fairSharing.weight` is the department's weight; its teams' ClusterQueues sit in it instead of the cluster's
  cohort, so they lend and borrow first within the department, then across the cluster (Kueue's hierarchical
  cohorts); teams in no department stay in the cluster's cohort;
- one ResourceFlavor per GPU pool label (`scheduler_label`, else the GPU model), selecting
  nodes labelled `docket.io/gpu-model: <flavor>`;
- one ClusterQueue per team, `docket-<team key>` (`team_key`: the slug, or for a slug that is
  not a DNS label its cleaned prefix, "--" and a hash), in the cohort, one resource group covering
  `nvidia.com/gpu`; per flavor, with P, S, E the GPUs of the team's active priority,
  standard and preemptible windows there:
    nominalQuota   = P + S            (what the team is guaranteed)
    lendingLimit   = min(S, S * standard_lend_pct // 100 + S_off)
                     + min(P, P * priority_lend_pct // 100 + P_off)
                     (idle standard GPUs are lent; priority GPUs, by default, only
                     the `lendable_gpus` the elastic policy offers, S_off and P_off)
    borrowingLimit = by `KueuePolicy.borrowing`: "elastic" (the default) none where E > 0
                     (the team's preemptible work may take E and any other idle GPU of
                     the cohort, and gives them back when their owners reclaim), 0 where
                     E = 0; "granted": E exactly; "any": none for every queue
  and preemption `reclaimWithinCohort: Any` (an owner takes its lent GPUs back from
  whoever borrowed them) and `withinClusterQueue: LowerPriority` (a team's own priority
  work goes before its preemptible work); windows that have not begun give 0, so a queue
  keeps existing between its windows and LocalQueues pointing at it stay valid;
- optionally a LocalQueue `docket` in each namespace the operator maps to a team.

Every object is labelled `app.kubernetes.io/managed-by: docket` and `docket.io/cluster`.
Pure: no Django, no cluster access. PyYAML only for `render_yaml` (imported there, so the
sync, which sends JSON, runs with the standard library alone).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from docket_scheduler.base import DesiredWindow

API_GROUP = "kueue.x-k8s.io"
# v0.19.2 stores v1beta2 and serves v1beta1 as deprecated; v1beta1 only for older Kueues.
API_VERSIONS = ("v1beta2", "v1beta1")
GPU_RESOURCE = "nvidia.com/gpu"
NODE_LABEL = "docket.io/gpu-model"
TEAM_NAMESPACE_LABEL = "docket.io/team"
CLUSTER_LABEL = "docket.io/cluster"
MANAGED_BY_KEY = "app.kubernetes.io/managed-by"
MANAGED_BY = {MANAGED_BY_KEY: "docket"}
ANNOTATION_PREFIX = "docket.io/"
LOCAL_QUEUE_NAME = "docket"

TIERS = ("priority", "standard", "preemptible")
# Kueue priorities are int32; far apart so an operator can slot classes of their own between them.
TIER_PRIORITY_VALUES = {"priority": 10000, "standard": 1000, "preemptible": 100}
TIER_DESCRIPTIONS = {
    "priority": "Docket priority window: GPUs held for the team alone, never lent.",
    "standard": "Docket standard window: the team's GPU quota; idle GPUs are lent and reclaimed by preemption.",
    "preemptible": "Docket preemptible work: runs on borrowed GPUs and is the first to be preempted.",
}

BORROWING_MODES = ("elastic", "granted", "any")

_INVALID_NAME_CHARS = re.compile(r"[^a-z0-9-]+")
# `docket-` + key is a DNS label (63 characters at most); a suffixed key is prefix + "--" + 10 hex digits.
TEAM_KEY_MAX_CHARS = 56
TEAM_KEY_PREFIX_CHARS = 40
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@dataclass(frozen=True)
class KueuePolicy:
    """How much of each tier a ClusterQueue lends and may borrow (docs/adapters.md, "Kueue").

    `standard_lend_pct` of a team's standard GPUs are lent to the cohort while idle (100:
    all of them, the elastic pool); `priority_lend_pct` of its priority GPUs (0: a priority
    window is a hard guarantee, no workload of the owner ever waits for a preemption).
    `borrowing` says which queues may borrow, on each flavor:
    - "elastic": a queue with an active preemptible window there, any idle GPU of the
      cohort (no borrowingLimit); the others, none (borrowingLimit 0);
    - "granted": exactly the GPUs of its active preemptible windows there (borrowingLimit E);
    - "any": every queue, any idle GPU (no borrowingLimit at all).
    """

    standard_lend_pct: int = 100
    priority_lend_pct: int = 0
    borrowing: str = "elastic"

    def __post_init__(self) -> None:
        for name in ("standard_lend_pct", "priority_lend_pct"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 100:
                raise ValueError(f"{name} must be an integer from 0 to 100, got {value!r}")
        if self.borrowing not in BORROWING_MODES:
            raise ValueError(f"borrowing must be one of {', '.join(BORROWING_MODES)}, got {self.borrowing!r}")


def flavor_name(window: DesiredWindow) -> str:
    """The ResourceFlavor (and node label value) for a window's pool: a DNS-1123 label."""
    return _dns_label(window.scheduler_label or window.gpu_model, what=f"window {window.id}'s pool label")


def team_key(team: str) -> str:
    """The team as Kubernetes names it: its ClusterQueue is `docket-<key>`, its namespaces carry
    `docket.io/team=<key>`. One key per team slug by construction: a slug that already is a DNS label without
    "--" (`search`, `team-a`) is its own key; any other (`search_`, `Search`, a long one) becomes its
    cleaned-up prefix, "--" and a hash of the whole slug (`search--1b4e8c0f2a`), so `search` and `search_` no
    longer share `docket-search`. Plain keys never contain "--" and suffixed ones always do, so the two kinds
    cannot meet; `render` refuses two teams whose keys still agree (a hash collision)."""
    if _DNS_LABEL.match(team) and "--" not in team and len(team) <= TEAM_KEY_MAX_CHARS:
        return team
    prefix = re.sub("-+", "-", _INVALID_NAME_CHARS.sub("-", team.lower())).strip("-")[:TEAM_KEY_PREFIX_CHARS]
    digest = hashlib.sha256(team.encode()).hexdigest()[:10]
    return f"{prefix.rstrip('-') or 'team'}--{digest}"


def cluster_queue_name(team: str) -> str:
    return _dns_label(f"docket-{team_key(team)}", what=f"team {team!r}")


def cohort_name(cluster: str) -> str:
    return _dns_label(f"docket-{cluster}", what=f"cluster {cluster!r}")


def department_cohort_name(cohort: str, department: str) -> str:
    """A department's Cohort under the cluster's: `<cohort>-<department key>` (the key as `team_key` makes it)."""
    return _dns_label(f"{cohort}-{team_key(department)}", what=f"department {department!r}")


def department_tree(cluster: Mapping[str, Any]) -> dict[str, tuple[str, int]]:
    """Team slug -> (department slug, department weight), from the `departments` of Docket's cluster reference
    (`GET /api/v1/clusters/<slug>/`)."""
    return {str(team["team"]): (str(entry["slug"]), int(entry["fair_share_weight"]))
            for entry in cluster.get("departments", []) for team in entry.get("teams", [])}


def priority_class_name(tier: str) -> str:
    return f"docket-{tier}"


def _dns_label(text: str, *, what: str) -> str:
    name = _INVALID_NAME_CHARS.sub("-", text.lower()).strip("-")[:63].rstrip("-")
    if not _DNS_LABEL.match(name):
        raise ValueError(f"{what} {text!r} gives no valid Kubernetes name")
    return name


def next_change(windows: Sequence[DesiredWindow], *, at: datetime) -> datetime | None:
    """The first window start or end after `at`: when the rendered quotas stop being true."""
    boundaries = [moment for w in windows for moment in (w.start, w.end) if moment > at]
    return min(boundaries, default=None)


@dataclass
class _Share:
    """One team's (or the cohort's) GPUs on one flavor at `at`, by tier."""

    priority: int = 0
    standard: int = 0
    preemptible: int = 0
    # GPUs of the priority and standard windows the elastic policy offers to preemptible work now.
    priority_offered: int = 0
    standard_offered: int = 0

    def add(self, window: DesiredWindow) -> None:
        setattr(self, window.tier, getattr(self, window.tier) + window.gpu_count)
        if window.tier in ("priority", "standard"):
            name = f"{window.tier}_offered"
            setattr(self, name, getattr(self, name) + window.lendable_gpus)


def render(
    windows: Sequence[DesiredWindow],
    *,
    at: datetime,
    cluster: str | None = None,
    cohort: str | None = None,
    policy: KueuePolicy | None = None,
    namespaces: Mapping[str, Sequence[str]] | None = None,
    api_version: str = "v1beta2",
    departments: Mapping[str, tuple[str, int]] | None = None,
) -> list[dict[str, Any]]:
    """Kueue objects for `windows` at `at`, in apply order: WorkloadPriorityClasses, the
    Cohort, the department Cohorts, ResourceFlavors, ClusterQueues, LocalQueues, each kind by name.

    `departments` maps a team slug to its department's slug and weight (`department_tree`).

    `cluster` is the windows' cluster (required when there are none); `cohort` overrides
    `docket-<cluster>`; `namespaces` maps a team slug to the namespaces that get a
    LocalQueue `docket` pointing at its ClusterQueue.

    Invariants: every flavor a ClusterQueue or the Cohort names is rendered; each queue
    lists each of its team's flavors once, in name order, with integers
    0 <= lendingLimit <= nominalQuota (Kueue's webhook refuses more) as the module
    docstring computes them. Windows not active at `at` add no quota and no annotation.
    Windows of several clusters, or of another cluster than `cluster`, are refused: one
    Kubernetes cluster's quotas cannot be summed across clusters.
    """
    if api_version not in API_VERSIONS:
        raise ValueError(f"api_version must be one of {', '.join(API_VERSIONS)}")
    if at.tzinfo is None:
        raise ValueError("at must be a timezone-aware datetime")
    policy = policy or KueuePolicy()
    clusters = sorted({w.cluster for w in windows} | ({cluster} if cluster else set()))
    if len(clusters) > 1:
        raise ValueError(f"windows of several clusters: {', '.join(clusters)}")
    if not clusters:
        raise ValueError("no windows: name the cluster")
    [the_cluster] = clusters
    cohort = cohort or cohort_name(the_cluster)
    if not _DNS_LABEL.match(cohort) or len(cohort) > 63:
        raise ValueError(f"cohort {cohort!r} is not a Kubernetes name (lowercase letters, digits and '-')")
    labels = {**MANAGED_BY, CLUSTER_LABEL: _dns_label(the_cluster, what="cluster")}

    flavors = sorted({flavor_name(w) for w in windows})
    shares: dict[str, dict[str, _Share]] = defaultdict(dict)  # team → flavor → GPUs by tier
    burst: dict[str, int] = dict.fromkeys(flavors, 0)  # flavor → preemptible GPUs (the cohort's quota)
    active: dict[str, list[DesiredWindow]] = defaultdict(list)
    for window in windows:
        flavor = flavor_name(window)
        share = shares[window.team].setdefault(flavor, _Share())
        if window.tier not in TIERS:
            raise ValueError(f"window {window.id}: unknown tier {window.tier!r}")
        if window.is_active(at):
            share.add(window)
            active[window.team].append(window)
            if window.tier == "preemptible":
                burst[flavor] += window.gpu_count

    api = f"{API_GROUP}/{api_version}"
    until = next_change(windows, at=at)
    objects: list[dict[str, Any]] = [
        {
            "apiVersion": api,
            "kind": "WorkloadPriorityClass",
            "metadata": {"name": priority_class_name(tier), "labels": dict(labels)},
            "value": TIER_PRIORITY_VALUES[tier],
            "description": TIER_DESCRIPTIONS[tier],
        }
        for tier in sorted(TIERS, key=priority_class_name)
    ]
    objects.append(_cohort(cohort, burst, labels=labels, api=api, until=until))
    team_cohort: dict[str, str] = {}
    department_cohorts: dict[str, tuple[str, int]] = {}
    for team in sorted(shares):
        if team in (departments or {}):
            department, weight = (departments or {})[team]
            name = department_cohort_name(cohort, department)
            holder = department_cohorts.setdefault(name, (department, weight))
            if holder[0] != department or name == cohort:
                raise ValueError(f"departments {holder[0]!r} and {department!r} would share Cohort {name}")
            team_cohort[team] = name
    objects.extend(
        {
            "apiVersion": api,
            "kind": "Cohort",
            "metadata": {"name": name, "labels": dict(labels),
                         "annotations": {f"{ANNOTATION_PREFIX}department": department}},
            "spec": {"parentName": cohort, "fairSharing": {"weight": weight}},
        }
        for name, (department, weight) in sorted(department_cohorts.items())
    )
    objects.extend(
        {
            "apiVersion": api,
            "kind": "ResourceFlavor",
            "metadata": {"name": flavor, "labels": dict(labels)},
            "spec": {"nodeLabels": {NODE_LABEL: flavor}},
        }
        for flavor in flavors
    )
    queue_teams: dict[str, str] = {}
    for team in sorted(set(shares) | set(namespaces or {})):
        other = queue_teams.setdefault(cluster_queue_name(team), team)
        if other != team:
            raise ValueError(f"teams {other!r} and {team!r} would share ClusterQueue {cluster_queue_name(team)}")
    for team in sorted(shares, key=cluster_queue_name):
        objects.append(
            _cluster_queue(
                team, shares[team], active[team], cohort=team_cohort.get(team, cohort), policy=policy, labels=labels,
                api=api,
                api_version=api_version, until=until,
            )
        )
    for team, team_namespaces in sorted((namespaces or {}).items()):
        for namespace in sorted(set(team_namespaces)):
            objects.append(
                {
                    "apiVersion": api,
                    "kind": "LocalQueue",
                    "metadata": {
                        "name": LOCAL_QUEUE_NAME,
                        "namespace": _dns_label(namespace, what=f"namespace of team {team!r}"),
                        "labels": dict(labels),
                    },
                    "spec": {"clusterQueue": cluster_queue_name(team)},
                }
            )
    return objects


def _until(until: datetime | None) -> dict[str, str]:
    """Until when the rendered quotas hold: the next window boundary, or "none"."""
    return {f"{ANNOTATION_PREFIX}quota-until": _iso(until) if until else "none"}


def _cohort(
    name: str, burst: dict[str, int], *, labels: dict[str, str], api: str, until: datetime | None
) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if burst:
        spec["resourceGroups"] = [
            {
                "coveredResources": [GPU_RESOURCE],
                "flavors": [
                    {"name": flavor, "resources": [{"name": GPU_RESOURCE, "nominalQuota": gpus}]}
                    for flavor, gpus in sorted(burst.items())
                ],
            }
        ]
    return {
        "apiVersion": api,
        "kind": "Cohort",
        "metadata": {"name": name, "labels": dict(labels), "annotations": _until(until)},
        "spec": spec,
    }


def quota_of(share: _Share, policy: KueuePolicy) -> dict[str, int]:
    """The ClusterQueue resource entry's numbers for one team's share of one flavor."""
    nominal = share.priority + share.standard
    # What the elastic policy offers (a window measured idle, a quiet night) is lent on top of the policy's share.
    lending = min(share.standard, share.standard * policy.standard_lend_pct // 100 + share.standard_offered) + min(
        share.priority, share.priority * policy.priority_lend_pct // 100 + share.priority_offered
    )
    quota = {"nominalQuota": nominal, "lendingLimit": lending}
    if policy.borrowing == "granted" or (policy.borrowing == "elastic" and not share.preemptible):
        quota["borrowingLimit"] = share.preemptible
    return quota


def _cluster_queue(
    team: str,
    shares: dict[str, _Share],
    active: list[DesiredWindow],
    *,
    cohort: str,
    policy: KueuePolicy,
    labels: dict[str, str],
    api: str,
    api_version: str,
    until: datetime | None,
) -> dict[str, Any]:
    annotations = {
        f"{ANNOTATION_PREFIX}team": team,
        **_until(until),
        f"{ANNOTATION_PREFIX}windows": json.dumps(
            [
                {
                    "id": w.id,
                    "plan_version": w.plan_version,
                    "flavor": flavor_name(w),
                    "gpus": w.gpu_count,
                    "tier": w.tier,
                    **({"lendable_gpus": w.lendable_gpus} if w.lendable_gpus else {}),
                    "start": _iso(w.start),
                    "end": _iso(w.end),
                }
                for w in sorted(active, key=lambda w: w.id)
            ],
            separators=(",", ":"),
        ),
    }
    return {
        "apiVersion": api,
        "kind": "ClusterQueue",
        "metadata": {"name": cluster_queue_name(team), "labels": dict(labels), "annotations": annotations},
        "spec": {
            # v1beta2 renamed the field; v1beta1 still calls it `cohort`.
            ("cohortName" if api_version == "v1beta2" else "cohort"): cohort,
            # Only namespaces labelled for the team may submit to its queue (null would admit none).
            "namespaceSelector": {"matchLabels": {TEAM_NAMESPACE_LABEL: team_key(team)}},
            "preemption": {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"},
            "resourceGroups": [
                {
                    "coveredResources": [GPU_RESOURCE],
                    "flavors": [
                        {"name": flavor, "resources": [{"name": GPU_RESOURCE, **quota_of(share, policy)}]}
                        for flavor, share in sorted(shares.items())
                    ],
                }
            ],
        },
    }


def render_yaml(
    windows: Sequence[DesiredWindow],
    *,
    at: datetime,
    cluster: str | None = None,
    api_version: str = "v1beta2",
    **options: Any,
) -> str:
    """`render()` as multi-document YAML for `kubectl apply --server-side -f -`, with a header comment."""
    try:
        import yaml  # only here: the sync sends JSON and must run without PyYAML
    except ImportError:
        raise ValueError("printing YAML needs PyYAML: pip install 'docket-scheduler[kueue]'") from None

    objects = render(windows, at=at, cluster=cluster, api_version=api_version, **options)
    changes = next_change(windows, at=at)
    header = [
        "# Kueue quotas rendered by Docket from the published windows.",
        f"# Quotas as of {_iso(at)}; "
        + (f"next window boundary {_iso(changes)}: render again then." if changes else "no later window boundary."),
        "# Apply with: kubectl apply --server-side --field-manager=docket -f -   "
        f"(every object is labelled {MANAGED_BY_KEY}=docket), or run docket-kueue-sync.",
    ]
    body = yaml.safe_dump_all(objects, sort_keys=False, explicit_start=True)
    return "\n".join(header) + "\n" + body


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
