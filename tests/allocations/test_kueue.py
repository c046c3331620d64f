"""The Kueue export: every rendered object is valid against Kueue v0.19.2's own CRD schemas."""

from __future__ import annotations

import functools
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from allocations.adapters.base import DesiredWindow
from allocations.adapters.kueue import next_change, render, render_yaml

CRD_DIR = Path(__file__).resolve().parent.parent / "data" / "kueue"
CRD_FILES = {
    "ClusterQueue": "kueue.x-k8s.io_clusterqueues.yaml",
    "ResourceFlavor": "kueue.x-k8s.io_resourceflavors.yaml",
}
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
AT = datetime(2026, 12, 2, 12, tzinfo=UTC)
DAY = timedelta(days=1)


def window(
    window_id: int, team: str, gpus: int, *, label: str = "a100", start: datetime, end: datetime
) -> DesiredWindow:
    return DesiredWindow.from_api(
        {
            "id": window_id,
            "plan_version": 3,
            "cluster": "atlas",
            "pool": label,
            "gpu_model": label.upper(),
            "scheduler_label": label,
            "gpu_count": gpus,
            "gpus_per_node": 8,
            "start": start.isoformat(),
            "end": end.isoformat(),
            "team": team,
            "account": None,
            "tier": "standard",
            "request_id": None,
        }
    )


def active(window_id: int, team: str, gpus: int, label: str = "a100") -> DesiredWindow:
    return window(window_id, team, gpus, label=label, start=AT - DAY, end=AT + DAY)


def later(window_id: int, team: str, gpus: int, label: str = "a100") -> DesiredWindow:
    return window(window_id, team, gpus, label=label, start=AT + 2 * DAY, end=AT + 3 * DAY)


def as_json_schema(node: Any) -> Any:
    """The CRD schema as plain JSON Schema, as strict as `kubectl apply` (field validation Strict).

    x-kubernetes-* keys (CEL rules, list and map types) are dropped; an object schema
    that lists its properties gets additionalProperties: false, because the API server
    refuses unknown fields under strict validation, where plain JSON Schema would let a
    misspelt field through.
    """
    if isinstance(node, list):
        return [as_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    schema = {k: as_json_schema(v) for k, v in node.items() if not k.startswith("x-kubernetes-")}
    strict = "properties" in schema and not node.get("x-kubernetes-preserve-unknown-fields")
    if strict and "additionalProperties" not in schema:
        schema["additionalProperties"] = False
    return schema


@functools.cache
def crd(kind: str) -> dict[str, Any]:
    return yaml.safe_load((CRD_DIR / CRD_FILES[kind]).read_text())


def validate(obj: dict[str, Any]) -> None:
    """Fail unless `obj` is what the Kubernetes API server would accept for Kueue v0.19.2."""
    kind = obj["kind"]
    assert kind in CRD_FILES, f"no CRD for kind {kind}"
    definition = crd(kind)["spec"]
    assert definition["names"]["kind"] == kind
    group, _, version = obj["apiVersion"].partition("/")
    assert group == definition["group"]
    served = {v["name"]: v for v in definition["versions"] if v["served"]}
    assert version in served, f"{obj['apiVersion']} is not served; served: {sorted(served)}"
    schema = as_json_schema(served[version]["schema"]["openAPIV3Schema"])
    jsonschema.validate(obj, schema)
    # Cluster-scoped kinds; the schema leaves metadata to the API server, so check it here.
    assert definition["scope"] == "Cluster" and "namespace" not in obj["metadata"]
    assert DNS_SUBDOMAIN.match(obj["metadata"]["name"]) and len(obj["metadata"]["name"]) <= 253
    for annotation in obj["metadata"].get("annotations", {}).values():
        assert isinstance(annotation, str)
    # The CEL rule on resource groups that concerns us (dropped with x-kubernetes-validations).
    for group_spec in obj.get("spec", {}).get("resourceGroups", []):
        for flavor in group_spec["flavors"]:
            assert [r["name"] for r in flavor["resources"]] == group_spec["coveredResources"]


def by_kind(objects: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def quotas(cluster_queue: dict[str, Any]) -> dict[str, int]:
    [group] = cluster_queue["spec"]["resourceGroups"]
    return {f["name"]: f["resources"][0]["nominalQuota"] for f in group["flavors"]}


PLAN = [
    active(17, "search", 12),
    active(18, "search", 4),
    active(19, "search", 16, label="h100"),
    active(20, "ads", 8),
    later(21, "ads", 32, label="h100"),
    later(22, "vision", 8),
]


@pytest.mark.parametrize("api_version", ["v1beta2", "v1beta1"])
def test_every_rendered_object_validates_against_the_crd(api_version: str) -> None:
    objects = list(yaml.safe_load_all(render_yaml(PLAN, at=AT, api_version=api_version)))

    assert [o["kind"] for o in objects] == ["ResourceFlavor"] * 2 + ["ClusterQueue"] * 3
    for obj in objects:
        validate(obj)


def test_broken_object_fails_the_same_validation() -> None:
    [_flavor, cluster_queue] = render([active(17, "search", 12)], at=AT)
    cluster_queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "twelve"
    with pytest.raises(jsonschema.ValidationError):
        validate(cluster_queue)
    misspelt = render([active(17, "search", 12)], at=AT)[1]
    misspelt["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuotas"] = 12
    with pytest.raises(jsonschema.ValidationError, match="nominalQuotas"):
        validate(misspelt)
    with pytest.raises(AssertionError, match="not served"):
        validate({**cluster_queue, "apiVersion": "kueue.x-k8s.io/v1alpha1"})


def test_quotas_are_summed_per_team_and_flavor() -> None:
    objects = render(PLAN, at=AT)
    queues = by_kind(objects, "ClusterQueue")

    assert quotas(queues["docket-search"]) == {"a100": 16, "h100": 16}
    assert quotas(queues["docket-ads"]) == {"a100": 8, "h100": 0}
    flavors = by_kind(objects, "ResourceFlavor")
    assert flavors["h100"]["spec"]["nodeLabels"] == {"docket.io/gpu-model": "h100"}
    assert queues["docket-search"]["spec"]["namespaceSelector"] == {"matchLabels": {"docket.io/team": "search"}}


def test_windows_not_active_at_the_time_add_no_quota() -> None:
    queues = by_kind(render(PLAN, at=AT), "ClusterQueue")

    # vision's only window starts in two days: its queue exists, with nothing in it yet.
    assert quotas(queues["docket-vision"]) == {"a100": 0}
    assert json.loads(queues["docket-vision"]["metadata"]["annotations"]["docket.io/windows"]) == []
    ads_windows = json.loads(queues["docket-ads"]["metadata"]["annotations"]["docket.io/windows"])
    assert [w["id"] for w in ads_windows] == [20]
    assert ads_windows[0]["start"] == "2026-12-01T12:00:00Z"
    assert ads_windows[0]["end"] == "2026-12-03T12:00:00Z"

    # At the end instant a window no longer counts (start <= at < end).
    at_end = by_kind(render(PLAN, at=AT + DAY), "ClusterQueue")
    assert quotas(at_end["docket-search"]) == {"a100": 0, "h100": 0}


def test_annotations_carry_window_ids_and_the_quota_time() -> None:
    queue = by_kind(render(PLAN, at=AT), "ClusterQueue")["docket-search"]
    annotations = queue["metadata"]["annotations"]

    assert annotations["docket.io/quota-at"] == "2026-12-02T12:00:00Z"
    assert [w["id"] for w in json.loads(annotations["docket.io/windows"])] == [17, 18, 19]


def test_empty_plan_renders_valid_yaml_without_objects() -> None:
    text = render_yaml([], at=AT)

    assert list(yaml.safe_load_all(text)) == []
    assert text.startswith("# Kueue quotas rendered by Docket")


def test_yaml_says_when_to_render_again() -> None:
    assert next_change(PLAN, at=AT) == AT + DAY
    assert "next window boundary 2026-12-03T12:00:00Z" in render_yaml(PLAN, at=AT)
    assert next_change(PLAN, at=AT + 10 * DAY) is None


def test_windows_of_two_clusters_are_refused() -> None:
    other = DesiredWindow(**{**active(30, "search", 8).__dict__, "cluster": "borealis"})
    with pytest.raises(ValueError, match="several clusters: atlas, borealis"):
        render([active(17, "search", 8), other], at=AT)


def test_naive_time_is_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        render(PLAN, at=AT.replace(tzinfo=None))
