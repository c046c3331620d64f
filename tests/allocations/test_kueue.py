"""The Kueue rendering: every object is valid against Kueue v0.19.2's own CRD schemas, and the
tiers become quota, lending, borrowing and priority classes as docs/adapters.md says."""

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

from docket_scheduler import kueue
from docket_scheduler.base import DesiredWindow
from docket_scheduler.kueue import KueuePolicy, cluster_queue_name, next_change, render, render_yaml, team_key

CRD_DIR = Path(__file__).resolve().parent.parent / "data" / "kueue"
CRD_FILES = {
    "ClusterQueue": "kueue.x-k8s.io_clusterqueues.yaml",
    "Cohort": "kueue.x-k8s.io_cohorts.yaml",
    "LocalQueue": "kueue.x-k8s.io_localqueues.yaml",
    "ResourceFlavor": "kueue.x-k8s.io_resourceflavors.yaml",
    "WorkloadPriorityClass": "kueue.x-k8s.io_workloadpriorityclasses.yaml",
}
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
AT = datetime(2026, 12, 2, 12, tzinfo=UTC)
DAY = timedelta(days=1)


def window(
    window_id: int, team: str, gpus: int, *, label: str = "a100", start: datetime, end: datetime,
    tier: str = "standard",
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
            "tier": tier,
            "request_id": None,
        }
    )


def active(window_id: int, team: str, gpus: int, label: str = "a100", tier: str = "standard") -> DesiredWindow:
    return window(window_id, team, gpus, label=label, start=AT - DAY, end=AT + DAY, tier=tier)


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
    # The schema leaves metadata to the API server, so check it here: only LocalQueue is namespaced.
    assert ("namespace" in obj["metadata"]) == (definition["scope"] == "Namespaced")
    for name in (obj["metadata"]["name"], obj["metadata"].get("namespace", "x")):
        assert DNS_SUBDOMAIN.match(name) and len(name) <= 253
    for annotation in obj["metadata"].get("annotations", {}).values():
        assert isinstance(annotation, str)
    # The CEL rules that concern us (dropped with x-kubernetes-validations), and the webhook's
    # quota rules (KEP-1224 and the ClusterQueue webhook): limits are non-negative, lendingLimit
    # at most nominalQuota, no limits without a cohort.
    spec = obj.get("spec", {})
    in_cohort = bool(spec.get("cohortName") or spec.get("cohort"))
    for group_spec in spec.get("resourceGroups", []):
        for flavor in group_spec["flavors"]:
            assert [r["name"] for r in flavor["resources"]] == group_spec["coveredResources"]
            for resource in flavor["resources"]:
                assert resource["nominalQuota"] >= 0
                if kind == "ClusterQueue":
                    assert in_cohort or ("borrowingLimit" not in resource and "lendingLimit" not in resource)
                    assert 0 <= resource.get("lendingLimit", 0) <= resource["nominalQuota"]
                    assert resource.get("borrowingLimit", 0) >= 0
    preemption = spec.get("preemption", {})
    assert not (preemption.get("reclaimWithinCohort", "Never") == "Never"
                and preemption.get("borrowWithinCohort", {}).get("policy", "Never") != "Never")


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

    assert [o["kind"] for o in objects] == (
        ["WorkloadPriorityClass"] * 3 + ["Cohort"] + ["ResourceFlavor"] * 2 + ["ClusterQueue"] * 3
    )
    for obj in objects:
        validate(obj)


def test_broken_object_fails_the_same_validation() -> None:
    cluster_queue = by_kind(render([active(17, "search", 12)], at=AT), "ClusterQueue")["docket-search"]
    cluster_queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "twelve"
    with pytest.raises(jsonschema.ValidationError):
        validate(cluster_queue)
    misspelt = by_kind(render([active(17, "search", 12)], at=AT), "ClusterQueue")["docket-search"]
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

    # Until the next boundary (search's windows end); the same on every pass until then.
    assert annotations["docket.io/quota-until"] == "2026-12-03T12:00:00Z"
    assert render(PLAN, at=AT + timedelta(hours=1)) == render(PLAN, at=AT)
    assert [w["id"] for w in json.loads(annotations["docket.io/windows"])] == [17, 18, 19]


def test_empty_plan_renders_the_priority_classes_and_an_empty_cohort() -> None:
    text = render_yaml([], at=AT, cluster="atlas")

    objects = list(yaml.safe_load_all(text))
    assert [(o["kind"], o["metadata"]["name"]) for o in objects] == [
        ("WorkloadPriorityClass", "docket-preemptible"),
        ("WorkloadPriorityClass", "docket-priority"),
        ("WorkloadPriorityClass", "docket-standard"),
        ("Cohort", "docket-atlas"),
    ]
    assert objects[3]["spec"] == {}
    for obj in objects:
        validate(obj)
    assert text.startswith("# Kueue quotas rendered by Docket")
    with pytest.raises(ValueError, match="name the cluster"):
        render([], at=AT)


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


# search: a priority and a standard window on A100, a preemptible one on H100; ads: preemptible on A100.
TIERED = [
    active(31, "search", 8, tier="priority"),
    active(32, "search", 16),
    active(33, "search", 4, label="h100", tier="preemptible"),
    active(34, "ads", 8, tier="preemptible"),
    later(35, "ads", 16),
]


def limits(cluster_queue: dict[str, Any]) -> dict[str, dict[str, int]]:
    [group] = cluster_queue["spec"]["resourceGroups"]
    return {f["name"]: {k: v for k, v in f["resources"][0].items() if k != "name"} for f in group["flavors"]}


@pytest.mark.parametrize("api_version", ["v1beta2", "v1beta1"])
def test_tiered_plan_validates_with_cohort_lending_borrowing_and_priority_classes(api_version: str) -> None:
    objects = render(TIERED, at=AT, api_version=api_version, namespaces={"search": ["search-prod", "search-dev"]})

    for obj in objects:
        validate(obj)
    queue = by_kind(objects, "ClusterQueue")["docket-search"]
    # v1beta2 renamed the field; the schemas of each version refuse the other's name.
    assert queue["spec"]["cohortName" if api_version == "v1beta2" else "cohort"] == "docket-atlas"
    wrong = "cohort" if api_version == "v1beta2" else "cohortName"
    renamed = {**queue, "spec": {**{k: v for k, v in queue["spec"].items() if k not in ("cohort", "cohortName")},
                                 wrong: "docket-atlas"}}
    with pytest.raises(jsonschema.ValidationError, match=wrong):
        validate(renamed)


def test_each_tier_becomes_nominal_quota_lending_and_borrowing() -> None:
    objects = render(TIERED, at=AT)
    queues = by_kind(objects, "ClusterQueue")

    # Guaranteed: priority + standard; lent when idle: the standard part. Borrowing (elastic, the
    # default): none on A100, where search has no preemptible window; no limit on H100, where it has.
    assert limits(queues["docket-search"]) == {
        "a100": {"nominalQuota": 24, "lendingLimit": 16, "borrowingLimit": 0},
        "h100": {"nominalQuota": 0, "lendingLimit": 0},
    }
    # ads's standard window starts in two days: nothing guaranteed yet; its preemptible work may borrow.
    assert limits(queues["docket-ads"]) == {"a100": {"nominalQuota": 0, "lendingLimit": 0}}
    for queue in queues.values():
        assert queue["spec"]["cohortName"] == "docket-atlas"
        assert queue["spec"]["preemption"] == {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
    # The preemptible windows' GPUs (the burst reserve the engine placed) are the cohort's own quota.
    cohort = by_kind(objects, "Cohort")["docket-atlas"]
    assert cohort["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    [group] = cohort["spec"]["resourceGroups"]
    assert {f["name"]: f["resources"][0]["nominalQuota"] for f in group["flavors"]} == {"a100": 8, "h100": 4}
    # Everything lendable plus the cohort's quota is what can be borrowed; nothing is counted twice.
    assert sum(q["nominalQuota"] for queue in queues.values() for q in limits(queue).values()) + 12 == 8 + 16 + 4 + 8


def test_priority_classes_order_the_tiers() -> None:
    classes = by_kind(render(TIERED, at=AT), "WorkloadPriorityClass")

    values = {name: wpc["value"] for name, wpc in classes.items()}
    assert values["docket-priority"] > values["docket-standard"] > values["docket-preemptible"] > 0
    assert set(values) == {"docket-priority", "docket-standard", "docket-preemptible"}
    for wpc in classes.values():
        validate(wpc)
        assert "spec" not in wpc  # value and description sit at the top level
    too_big = {**classes["docket-priority"], "value": "high"}
    with pytest.raises(jsonschema.ValidationError):
        validate(too_big)


def test_policy_sets_what_is_lent_and_who_may_borrow() -> None:
    policy = KueuePolicy(standard_lend_pct=50, priority_lend_pct=25, borrowing="any")
    queues = by_kind(render(TIERED, at=AT, policy=policy), "ClusterQueue")

    # 16 standard × 50% + 8 priority × 25%; no borrowingLimit at all: any idle GPU of the cohort.
    assert limits(queues["docket-search"])["a100"] == {"nominalQuota": 24, "lendingLimit": 10}
    for queue in queues.values():
        validate(queue)
    # "granted": a queue borrows exactly its preemptible windows' GPUs, no more.
    granted = by_kind(render(TIERED, at=AT, policy=KueuePolicy(borrowing="granted")), "ClusterQueue")
    assert limits(granted["docket-search"]) == {
        "a100": {"nominalQuota": 24, "lendingLimit": 16, "borrowingLimit": 0},
        "h100": {"nominalQuota": 0, "lendingLimit": 0, "borrowingLimit": 4},
    }
    assert limits(granted["docket-ads"])["a100"]["borrowingLimit"] == 8
    with pytest.raises(ValueError, match="borrowing must be one of elastic, granted, any"):
        KueuePolicy(borrowing="greedy")
    with pytest.raises(ValueError, match="standard_lend_pct must be an integer from 0 to 100"):
        KueuePolicy(standard_lend_pct=120)
    with pytest.raises(ValueError, match="priority_lend_pct"):
        KueuePolicy(priority_lend_pct=-1)


def test_limits_the_api_server_would_refuse_fail_validation() -> None:
    queue = by_kind(render(TIERED, at=AT), "ClusterQueue")["docket-search"]
    resource = queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]

    resource["lendingLimit"] = 25  # more than the nominal 24
    with pytest.raises(AssertionError):
        validate(queue)
    resource["lendingLimit"] = 16
    del queue["spec"]["cohortName"]  # limits without a cohort
    with pytest.raises(AssertionError):
        validate(queue)
    queue["spec"]["cohortName"] = "docket-atlas"
    resource["lendingLimits"] = 16
    with pytest.raises(jsonschema.ValidationError, match="lendingLimits"):
        validate(queue)


def test_local_queues_point_each_mapped_namespace_at_its_team() -> None:
    objects = render(TIERED, at=AT, namespaces={"search": ["search-prod", "search-dev", "search-prod"]})

    local = [(o["metadata"]["namespace"], o["metadata"]["name"], o["spec"]["clusterQueue"])
             for o in objects if o["kind"] == "LocalQueue"]
    assert local == [("search-dev", "docket", "docket-search"), ("search-prod", "docket", "docket-search")]
    with pytest.raises(ValueError, match="namespace of team 'search'"):
        render(TIERED, at=AT, namespaces={"search": ["--"]})


def test_unknown_tier_and_foreign_cohort_names_are_refused() -> None:
    with pytest.raises(ValueError, match="window 40: unknown tier 'gold'"):
        render([active(40, "search", 8, tier="gold")], at=AT)
    with pytest.raises(ValueError, match="several clusters: atlas, borealis"):
        render(TIERED, at=AT, cluster="borealis")
    assert by_kind(render(TIERED, at=AT, cohort="gpu-pool"), "ClusterQueue")["docket-ads"]["spec"]["cohortName"] == (
        "gpu-pool"
    )
    with pytest.raises(ValueError, match="cohort"):
        render(TIERED, at=AT, cohort="Not A Name!")


def test_the_elastic_offers_are_lent_within_the_nominal_quota_and_validate() -> None:
    """A priority window offering 6 of its 8 GPUs (granted but idle) lends them; lending never passes the quota."""
    from dataclasses import replace

    offered = [replace(TIERED[0], lendable_gpus=6), *TIERED[1:]]
    objects = render(offered, at=AT)
    for obj in objects:
        validate(obj)
    queue = by_kind(objects, "ClusterQueue")["docket-search"]
    assert limits(queue)["a100"] == {"nominalQuota": 24, "lendingLimit": 16 + 6, "borrowingLimit": 0}
    assert {"id": 31, "lendable_gpus": 6}.items() <= json.loads(
        queue["metadata"]["annotations"]["docket.io/windows"]
    )[0].items()
    # A standard window already lends all of its idle GPUs by default; with 50% lending its offer adds up to all.
    half = KueuePolicy(standard_lend_pct=50)
    standard_offer = [TIERED[0], replace(TIERED[1], lendable_gpus=12), *TIERED[2:]]
    assert limits(by_kind(render(standard_offer, at=AT, policy=half), "ClusterQueue")["docket-search"])["a100"][
        "lendingLimit"
    ] == 16


def test_a_window_offering_more_than_it_holds_is_refused() -> None:
    from docket_scheduler.base import WindowFormatError

    with pytest.raises(WindowFormatError, match="lendable_gpus must be from 0 to gpu_count"):
        DesiredWindow.from_api({**_api_window(), "lendable_gpus": 9})
    assert DesiredWindow.from_api({**_api_window(), "lendable_gpus": 8}).lendable_gpus == 8
    assert DesiredWindow.from_api(_api_window()).lendable_gpus == 0  # an older Docket that does not send it


def _api_window() -> dict[str, Any]:
    return {"id": 1, "plan_version": 1, "cluster": "atlas", "pool": "a100", "gpu_model": "A100",
            "scheduler_label": "a100", "gpu_count": 8, "gpus_per_node": 8, "start": "2026-12-01T00:00:00Z",
            "end": "2026-12-02T00:00:00Z", "team": "search", "account": None, "tier": "priority", "request_id": None}


LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def test_two_team_slugs_never_share_a_cluster_queue() -> None:
    # Both are valid team slugs; `search_` used to become docket-search too, and `kubectl apply` kept the last.
    teams = ["search", "search_", "Search", "search--x", "a" * 60, "a" * 61]
    objects = render([active(17 + i, team, 4) for i, team in enumerate(teams)], at=AT,
                     namespaces={"search_": ["ml-search-underscore"]})

    queues = by_kind(objects, "ClusterQueue")
    assert len(queues) == len(teams)
    owners = {name: queue["metadata"]["annotations"]["docket.io/team"] for name, queue in queues.items()}
    assert sorted(owners.values()) == sorted(teams)
    assert owners["docket-search"] == "search"  # a slug that is already a Kubernetes name keeps it
    for name, team in owners.items():
        assert name == cluster_queue_name(team) == f"docket-{team_key(team)}"
        selector = queues[name]["spec"]["namespaceSelector"]["matchLabels"]["docket.io/team"]
        assert selector == team_key(team) and LABEL_VALUE.match(selector) and len(selector) <= 63
        validate(queues[name])
    underscore = cluster_queue_name("search_")
    assert underscore.startswith("docket-search--") and underscore != cluster_queue_name("search")
    [local] = [o for o in objects if o["kind"] == "LocalQueue"]
    assert local["spec"]["clusterQueue"] == underscore
    assert team_key("search_") == team_key("search_")  # stable from pass to pass: the queue is not renamed


def test_two_teams_whose_queue_names_still_agree_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # A 40-bit hash collision cannot be made here on purpose; force one to see that the render refuses it.
    monkeypatch.setattr(kueue, "team_key", lambda team: "search")
    with pytest.raises(ValueError, match="teams 'search' and 'search_' would share ClusterQueue docket-search"):
        render([active(17, "search", 4), active(18, "search_", 4)], at=AT)


# --- departments: a Cohort per department under the cluster's (issue 29) ----------------------------------------

DEPARTMENTS = {"search": ("research", 3), "vision": ("research", 3), "payroll": ("finance", 1)}


@pytest.mark.parametrize("api_version", ["v1beta2", "v1beta1"])
def test_a_department_is_a_cohort_under_the_clusters_holding_its_teams_queues(api_version: str) -> None:
    objects = render(PLAN, at=AT, api_version=api_version, departments=DEPARTMENTS)

    for obj in objects:
        validate(obj)
    cohorts = by_kind(objects, "Cohort")
    # Finance has no ClusterQueue on this cluster: no Cohort for it.
    assert set(cohorts) == {"docket-atlas", "docket-atlas-research"}
    research = cohorts["docket-atlas-research"]
    assert research["spec"] == {"parentName": "docket-atlas", "fairSharing": {"weight": 3}}
    assert research["metadata"]["annotations"] == {"docket.io/department": "research"}
    field = "cohortName" if api_version == "v1beta2" else "cohort"
    queues = by_kind(objects, "ClusterQueue")
    assert {name: q["spec"][field] for name, q in queues.items()} == {
        "docket-search": "docket-atlas-research", "docket-vision": "docket-atlas-research",
        "docket-ads": "docket-atlas",  # in no department: the cluster's cohort
    }
    # The parent comes before its child in apply order; the quotas are the flat rendering's.
    names = [o["metadata"]["name"] for o in objects if o["kind"] == "Cohort"]
    assert names == ["docket-atlas", "docket-atlas-research"]
    flat = by_kind(render(PLAN, at=AT, api_version=api_version), "ClusterQueue")
    assert {n: q["spec"]["resourceGroups"] for n, q in queues.items()} == \
        {n: q["spec"]["resourceGroups"] for n, q in flat.items()}


def test_departments_whose_slugs_clean_to_one_name_get_two_cohorts() -> None:
    objects = render(PLAN, at=AT, departments={"search": ("research", 1), "vision": ("Research_", 2)})
    queues = by_kind(objects, "ClusterQueue")
    assert queues["docket-search"]["spec"]["cohortName"] == "docket-atlas-research"
    assert queues["docket-vision"]["spec"]["cohortName"].startswith("docket-atlas-research--")
    assert len(by_kind(objects, "Cohort")) == 3
