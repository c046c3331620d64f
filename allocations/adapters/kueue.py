"""Render a cluster's windows as Kueue objects: a quota snapshot for `kubectl apply`.

Kueue has no time windows, so the export is the quota that holds at one moment `at`:

- one ResourceFlavor per GPU pool label (`scheduler_label`, else the GPU model),
  selecting nodes labelled `docket.io/gpu-model: <flavor>`;
- one ClusterQueue per team, `docket-<team>`, with a single resource group covering
  `nvidia.com/gpu`; per flavor, nominalQuota = the GPUs of the team's windows active at
  `at` on that flavor (0 for the team's windows that have not begun), so a queue keeps
  existing between its windows and LocalQueues pointing at it stay valid;
- the active windows (ids, GPUs, starts, ends) and `at` as annotations, because the
  quota alone does not say why or until when.

Quotas change only at window boundaries; `next_change()` says when to render again.
Pure: no Django, no cluster access. PyYAML is the only dependency (`render_yaml`).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import yaml

from allocations.adapters.base import DesiredWindow

API_GROUP = "kueue.x-k8s.io"
# v0.19.2 stores v1beta2 and serves v1beta1 as deprecated; v1beta1 only for older Kueues.
API_VERSIONS = ("v1beta2", "v1beta1")
GPU_RESOURCE = "nvidia.com/gpu"
NODE_LABEL = "docket.io/gpu-model"
TEAM_NAMESPACE_LABEL = "docket.io/team"
MANAGED_BY = {"app.kubernetes.io/managed-by": "docket"}
ANNOTATION_PREFIX = "docket.io/"

_INVALID_NAME_CHARS = re.compile(r"[^a-z0-9-]+")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def flavor_name(window: DesiredWindow) -> str:
    """The ResourceFlavor (and node label value) for a window's pool: a DNS-1123 label."""
    return _dns_label(window.scheduler_label or window.gpu_model, what=f"window {window.id}'s pool label")


def cluster_queue_name(team: str) -> str:
    return _dns_label(f"docket-{team}", what=f"team {team!r}")


def _dns_label(text: str, *, what: str) -> str:
    name = _INVALID_NAME_CHARS.sub("-", text.lower()).strip("-")[:63].rstrip("-")
    if not _DNS_LABEL.match(name):
        raise ValueError(f"{what} {text!r} gives no valid Kubernetes name")
    return name


def next_change(windows: Sequence[DesiredWindow], *, at: datetime) -> datetime | None:
    """The first window start or end after `at`: when the rendered quotas stop being true."""
    boundaries = [moment for w in windows for moment in (w.start, w.end) if moment > at]
    return min(boundaries, default=None)


def render(windows: Sequence[DesiredWindow], *, at: datetime, api_version: str = "v1beta2") -> list[dict[str, Any]]:
    """Kueue objects for `windows` at `at`: ResourceFlavors first, then ClusterQueues, by name.

    Invariants: every flavor a ClusterQueue names is rendered; each queue lists each of
    its team's flavors once, in name order, with an integer nominalQuota >= 0 equal to
    the sum of gpu_count over the team's windows active at `at` on that flavor. Windows
    not active at `at` add no quota and no annotation. Windows of several clusters are
    refused: one Kubernetes cluster's quotas cannot be summed across clusters.
    """
    if api_version not in API_VERSIONS:
        raise ValueError(f"api_version must be one of {', '.join(API_VERSIONS)}")
    if at.tzinfo is None:
        raise ValueError("at must be a timezone-aware datetime")
    clusters = sorted({w.cluster for w in windows})
    if len(clusters) > 1:
        raise ValueError(f"windows of several clusters: {', '.join(clusters)}")

    flavors = sorted({flavor_name(w) for w in windows})
    quota: dict[str, dict[str, int]] = defaultdict(dict)  # team → flavor → GPUs
    active: dict[str, list[DesiredWindow]] = defaultdict(list)
    for window in windows:
        team_quota = quota[window.team]
        flavor = flavor_name(window)
        team_quota.setdefault(flavor, 0)
        if window.is_active(at):
            team_quota[flavor] += window.gpu_count
            active[window.team].append(window)

    api = f"{API_GROUP}/{api_version}"
    objects: list[dict[str, Any]] = [
        {
            "apiVersion": api,
            "kind": "ResourceFlavor",
            "metadata": {"name": flavor, "labels": dict(MANAGED_BY)},
            "spec": {"nodeLabels": {NODE_LABEL: flavor}},
        }
        for flavor in flavors
    ]
    for team in sorted(quota, key=cluster_queue_name):
        objects.append(_cluster_queue(team, quota[team], active[team], at=at, api=api))
    return objects


def _cluster_queue(
    team: str, quota: dict[str, int], active: list[DesiredWindow], *, at: datetime, api: str
) -> dict[str, Any]:
    annotations = {
        f"{ANNOTATION_PREFIX}team": team,
        f"{ANNOTATION_PREFIX}quota-at": _iso(at),
        f"{ANNOTATION_PREFIX}windows": json.dumps(
            [
                {
                    "id": w.id,
                    "plan_version": w.plan_version,
                    "flavor": flavor_name(w),
                    "gpus": w.gpu_count,
                    "tier": w.tier,
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
        "metadata": {"name": cluster_queue_name(team), "labels": dict(MANAGED_BY), "annotations": annotations},
        "spec": {
            # Only namespaces labelled for the team may submit to its queue (null would admit none).
            "namespaceSelector": {"matchLabels": {TEAM_NAMESPACE_LABEL: team}},
            "resourceGroups": [
                {
                    "coveredResources": [GPU_RESOURCE],
                    "flavors": [
                        {"name": flavor, "resources": [{"name": GPU_RESOURCE, "nominalQuota": gpus}]}
                        for flavor, gpus in sorted(quota.items())
                    ],
                }
            ],
        },
    }


def render_yaml(windows: Sequence[DesiredWindow], *, at: datetime, api_version: str = "v1beta2") -> str:
    """`render()` as multi-document YAML for `kubectl apply -f -`, with a header comment.

    With no windows the result is the header alone: valid YAML holding no objects.
    """
    objects = render(windows, at=at, api_version=api_version)
    changes = next_change(windows, at=at)
    header = [
        "# Kueue quotas rendered by Docket from the published windows.",
        f"# Quotas as of {_iso(at)}; "
        + (f"next window boundary {_iso(changes)}: render again then." if changes else "no later window boundary."),
        "# Apply with: kubectl apply -f -   (every object is labelled app.kubernetes.io/managed-by=docket)",
    ]
    body = yaml.safe_dump_all(objects, sort_keys=False, explicit_start=True) if objects else ""
    return "\n".join(header) + "\n" + body


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
