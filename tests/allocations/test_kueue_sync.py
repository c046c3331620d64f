"""kueue_sync: the real Docket serves the windows and stores the statuses; a stand-in API server
(tests/allocations/kube_apiserver.py, real HTTPS) records what the sync sends and answers as
kube-apiserver does for server-side apply, list and delete, and with 403 and 422 when told to.

Docket is pytest-django's `live_server` over a transactional database, the plan is published
through the services, and the sync runs in-process (`main()`, `run_loop()`), so it reads the
suite's clock: Wednesday 2 December 2026 10:00 UTC, 58 hours into week 2026-W49.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml

from allocations.models import AllocationWindow, Department, Team, WindowSyncStatus
from docket_scheduler import kueue
from docket_scheduler.client import DocketClient
from docket_scheduler.kube_api import KubeClient, KubeError, in_cluster_config, load_kubeconfig, status_message
from docket_scheduler.kueue_sync import KueueSync, main, run_loop
from tests.allocations.fault_proxy import FaultProxy
from tests.allocations.kube_apiserver import CLIENT_CN, TOKEN, KubeApiServer, serve, status_body
from tests.allocations.plans import W, publish, this_week, token_for, week_start
from tests.clock import child_env
from tests.processes import free_port
from tests.scheduler_programs import program, program_env

pytestmark = pytest.mark.django_db(transaction=True)

CQ_PATH = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/"
WEEK_START = week_start(this_week())


@pytest.fixture(scope="session")
def kube_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeApiServer]:
    """One API server (and its certificates: three RSA keys) per session; each test resets it."""
    yield from serve(tmp_path_factory.mktemp("kube-apiserver"))


@pytest.fixture
def kube(kube_server: KubeApiServer) -> KubeApiServer:
    """The session's API server with nothing stored, recorded or refused."""
    kube_server.reset()
    return kube_server


def kubeconfig(tmp_path: Path, api: KubeApiServer, *, user: dict[str, Any] | None = None, name: str = "kc") -> Path:
    """A kubeconfig as `kubectl config view --raw` writes it: the CA inline, a token user by default."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "orion",
        "clusters": [{"name": "orion", "cluster": {"server": api.url,
                                                    "certificate-authority-data": api.pki.b64(api.pki.ca)}}],
        "users": [{"name": "docket", "user": user if user is not None else {"token": TOKEN}}],
        "contexts": [{"name": "orion", "context": {"cluster": "orion", "user": "docket"}}],
    }
    path = tmp_path / name
    import yaml

    path.write_text(yaml.safe_dump(config))
    return path


@pytest.fixture
def orion(world: SimpleNamespace) -> SimpleNamespace:
    """Orion's week: team A a priority and a standard window on H100 now, team B a preemptible one
    now and a standard one from Thursday 00:00 (hour 72), the next boundary after 10:00 Wednesday."""
    world.plan = publish([
        W(world.h100, world.team_a, 4, 48, 96, ref=1, tier="priority"),
        W(world.h100, world.team_a, 8, 0, 120, ref=2),
        W(world.h100, world.team_b, 4, 56, 80, ref=3, tier="preemptible"),
        W(world.h100, world.team_b, 8, 72, 120, ref=4),
    ])
    world.windows = {w.request_ref: w for w in AllocationWindow.objects.filter(cluster=world.orion)}
    world.token = token_for(world.orion, "kueue-sync")
    return world


def run(live_server: Any, world: SimpleNamespace, config: Path, *args: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(["--url", live_server.url, "--token", world.token, "--cluster", "orion", "--kubeconfig", str(config),
                 "--once", *args], out=out)
    return code, out.getvalue()


def statuses() -> dict[int, tuple[str, int, int, str]]:
    """What Docket stored, by the window's request ref (every test window has one)."""
    return {int(s.window.request_ref or 0): (s.state, s.nodes_requested, s.nodes_reserved, s.message)
            for s in WindowSyncStatus.objects.select_related("window")}


def limits(queue: dict[str, Any]) -> dict[str, Any]:
    [group] = queue["spec"]["resourceGroups"]
    [flavor] = group["flavors"]
    return {k: v for k, v in flavor["resources"][0].items() if k != "name"}


def test_applies_every_object_with_server_side_apply_and_reports_in_sync(
    live_server: Any, orion: SimpleNamespace, kube: KubeApiServer, tmp_path: Path
) -> None:
    code, out = run(live_server, orion, kubeconfig(tmp_path, kube))

    assert code == 0, out
    applies = kube.applies()
    assert [r.path for r in applies] == [
        "/apis/kueue.x-k8s.io/v1beta2/workloadpriorityclasses/docket-preemptible",
        "/apis/kueue.x-k8s.io/v1beta2/workloadpriorityclasses/docket-priority",
        "/apis/kueue.x-k8s.io/v1beta2/workloadpriorityclasses/docket-standard",
        "/apis/kueue.x-k8s.io/v1beta2/cohorts/docket-orion",
        "/apis/kueue.x-k8s.io/v1beta2/resourceflavors/h100",
        CQ_PATH + "docket-team-a",
        CQ_PATH + "docket-team-b",
    ]
    for request in applies:
        assert request.content_type == "application/apply-patch+yaml"
        assert request.query == {"fieldManager": "docket", "force": "true"}
        assert request.authorization == f"Bearer {TOKEN}"
        assert request.body["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "docket",
                                                      "docket.io/cluster": "orion"}
    # The bodies are exactly what the export renders for now (the same objects the CRD tests validate).
    windows = [kueue_window(w) for w in orion.windows.values()]
    now = datetime.now(UTC)
    assert [r.body for r in applies] == kueue.render(windows, at=now, cluster="orion")

    team_a = kube.stored("clusterqueues", "docket-team-a")
    assert team_a["spec"]["cohortName"] == "docket-orion"
    assert limits(team_a) == {"nominalQuota": 12, "lendingLimit": 8, "borrowingLimit": 0}
    # Team B's preemptible window: it may borrow (the cohort's 4 GPUs, and idle lent ones).
    assert limits(kube.stored("clusterqueues", "docket-team-b")) == {"nominalQuota": 0, "lendingLimit": 0}
    assert kube.stored("cohorts", "docket-orion")["spec"]["resourceGroups"][0]["flavors"][0]["resources"] == [
        {"name": "nvidia.com/gpu", "nominalQuota": 4}]
    assert kube.stored("workloadpriorityclasses", "docket-priority")["value"] == 10000

    got = statuses()
    assert set(got) == {1, 2, 3, 4} and {s[0] for s in got.values()} == {"in_sync"}
    assert got[2][3] == ("8 GPUs on h100 in ClusterQueue docket-team-a (nominalQuota 12, lendingLimit 8, "
                         "cohort docket-orion)")
    assert got[3][3].startswith("4 GPUs on h100 to borrow in cohort docket-orion")
    assert got[4][3].startswith("starts 2026-12-03T00:00:00Z: ClusterQueue docket-team-b gets its 8 GPUs")
    assert got[4][2] == 0 and got[2][1:3] == (1, 1)
    assert "next window boundary 2026-12-03T00:00:00Z" in out


def kueue_window(window: AllocationWindow) -> Any:
    from docket_scheduler.base import DesiredWindow

    return DesiredWindow(
        id=window.id, plan_version=1, cluster="orion", pool="h100", gpu_model="H100", scheduler_label="h100",
        gpu_count=window.gpu_count, gpus_per_node=8, start=window.start, end=window.end, team=window.team.slug,
        account=None, tier=window.tier, request_id=window.request_ref,
    )


def test_a_second_pass_changes_nothing(
    live_server: Any, orion: SimpleNamespace, kube: KubeApiServer, tmp_path: Path
) -> None:
    config = kubeconfig(tmp_path, kube)
    assert run(live_server, orion, config)[0] == 0
    versions = {path: obj["metadata"]["resourceVersion"] for path, obj in kube.objects.items()}

    assert run(live_server, orion, config)[0] == 0

    assert {path: obj["metadata"]["resourceVersion"] for path, obj in kube.objects.items()} == versions
    assert len(kube.applies()) == 14


def test_departments_become_cohorts_under_the_clusters_idempotently_and_go_when_the_department_does(
    live_server: Any, orion: SimpleNamespace, kube: KubeApiServer, tmp_path: Path
) -> None:
    """Issue 29: with --department-cohorts, team A's department is a Cohort under orion's, holding its queue."""
    research = Department.objects.create(name="Research", slug="research", fair_share_weight=3)
    Team.objects.filter(pk=orion.team_a.pk).update(department=research)
    config = kubeconfig(tmp_path, kube)

    code, out = run(live_server, orion, config, "--department-cohorts")

    assert code == 0, out
    cohort = kube.stored("cohorts", "docket-orion-research")
    assert cohort["spec"] == {"parentName": "docket-orion", "fairSharing": {"weight": 3}}
    assert kube.stored("clusterqueues", "docket-team-a")["spec"]["cohortName"] == "docket-orion-research"
    assert kube.stored("clusterqueues", "docket-team-b")["spec"]["cohortName"] == "docket-orion"
    assert statuses()[2][3] == ("8 GPUs on h100 in ClusterQueue docket-team-a (nominalQuota 12, lendingLimit 8, "
                                "cohort docket-orion-research)")
    # A second pass stores nothing new.
    versions = {path: obj["metadata"]["resourceVersion"] for path, obj in kube.objects.items()}
    assert run(live_server, orion, config, "--department-cohorts")[0] == 0
    assert {path: obj["metadata"]["resourceVersion"] for path, obj in kube.objects.items()} == versions
    # The team leaves the department: its queue goes back to the cluster's cohort, the department's is deleted.
    Team.objects.filter(pk=orion.team_a.pk).update(department=None)
    code, out = run(live_server, orion, config, "--department-cohorts")
    assert code == 0, out
    assert kube.stored("clusterqueues", "docket-team-a")["spec"]["cohortName"] == "docket-orion"
    assert "/apis/kueue.x-k8s.io/v1beta2/cohorts/docket-orion-research" not in kube.objects


def test_refusals_are_reported_failed_with_the_api_servers_message(
    live_server: Any, orion: SimpleNamespace, kube: KubeApiServer, tmp_path: Path
) -> None:
    kube.refuse(CQ_PATH + "docket-team-b", 422, "Invalid",
                'ClusterQueue.kueue.x-k8s.io "docket-team-b" is invalid: spec.resourceGroups[0].flavors[0]'
                '.resources[0].lendingLimit: Invalid value: 9: must be less than or equal to the nominalQuota',
                [{"reason": "FieldValueInvalid", "field": "spec.resourceGroups[0].flavors[0].resources[0].lendingLimit",
                  "message": "Invalid value: 9: must be less than or equal to the nominalQuota"}])

    code, out = run(live_server, orion, kubeconfig(tmp_path, kube))

    assert code == 1
    got = statuses()
    assert got[1][0] == got[2][0] == "in_sync"
    for ref in (3, 4):  # team B's windows: its queue was refused
        state, _requested, reserved, message = got[ref]
        assert state == "failed" and reserved == 0
        assert message == (
            'ClusterQueue docket-team-b: PATCH /apis/kueue.x-k8s.io/v1beta2/clusterqueues/docket-team-b: HTTP 422 '
            'Invalid: ClusterQueue.kueue.x-k8s.io "docket-team-b" is invalid: spec.resourceGroups[0].flavors[0]'
            '.resources[0].lendingLimit: Invalid value: 9: must be less than or equal to the nominalQuota'
        )
    assert "refused ClusterQueue docket-team-b" in out


def test_forbidden_priority_classes_fail_every_window_of_the_tier(
    live_server: Any, orion: SimpleNamespace, kube: KubeApiServer, tmp_path: Path
) -> None:
    forbidden = ('workloadpriorityclasses.kueue.x-k8s.io "docket-preemptible" is forbidden: User '
                 '"system:serviceaccount:kueue-system:docket" cannot patch resource "workloadpriorityclasses" in '
                 'API group "kueue.x-k8s.io" at the cluster scope')
    kube.refuse("/apis/kueue.x-k8s.io/v1beta2/workloadpriorityclasses/docket-preemptible", 403, "Forbidden", forbidden)

    code, _out = run(live_server, orion, kubeconfig(tmp_path, kube))

    assert code == 1
    got = statuses()
    assert got[3][0] == "failed" and got[3][3].endswith(f"HTTP 403 Forbidden: {forbidden}")
    assert {got[ref][0] for ref in (1, 2, 4)} == {"in_sync"}
    # Nothing is pruned after a refusal: what is stored may be half of the new state.
    assert [r for r in kube.requests if r.method in ("GET", "DELETE")] == []


def test_wrong_credentials_fail_every_window_after_one_request(
    live_server: Any, orion: SimpleNamespace, kube: KubeApiServer, tmp_path: Path
) -> None:
    code, _out = run(live_server, orion, kubeconfig(tmp_path, kube, user={"token": "stolen"}))

    assert code == 1
    assert len(kube.requests) == 1 and kube.objects == {}
    got = statuses()
    assert {s[0] for s in got.values()} == {"failed"} and all("HTTP 401 Unauthorized" in s[3] for s in got.values())


def test_client_certificate_from_the_kubeconfig_authenticates(
    live_server: Any, orion: SimpleNamespace, kube: KubeApiServer, tmp_path: Path
) -> None:
    pki = kube.pki
    inline = kubeconfig(tmp_path, kube, name="inline", user={
        "client-certificate-data": pki.b64(pki.client_cert), "client-key-data": pki.b64(pki.client_key)})
    beside = Path(shutil.copy(pki.client_cert, tmp_path))  # beside the kubeconfig, for a path relative to it
    files = kubeconfig(tmp_path, kube, name="files", user={
        "client-certificate": beside.name, "client-key": str(pki.client_key)})  # relative and absolute

    assert run(live_server, orion, inline)[0] == 0
    assert run(live_server, orion, files)[0] == 0
    assert {r.client_cn for r in kube.requests} == {CLIENT_CN} and {r.authorization for r in kube.requests} == {""}


def test_a_server_certificate_from_another_ca_is_refused(
    live_server: Any, orion: SimpleNamespace, kube: KubeApiServer, tmp_path: Path
) -> None:
    config = kubeconfig(tmp_path, kube)
    config.write_text(config.read_text().replace(kube.pki.b64(kube.pki.ca), kube.pki.b64(kube.pki.client_cert)))

    code, out = run(live_server, orion, config)

    assert code == 1 and kube.requests == []
    assert all("CERTIFICATE_VERIFY_FAILED" in s[3] for s in statuses().values()), out


def test_dry_run_validates_on_the_server_and_stores_and_reports_nothing(
    live_server: Any, orion: SimpleNamespace, kube: KubeApiServer, tmp_path: Path
) -> None:
    code, out = run(live_server, orion, kubeconfig(tmp_path, kube), "--dry-run")

    assert code == 0, out
    assert len(kube.applies()) == 7 and {r.query["dryRun"] for r in kube.applies()} == {"All"}
    assert kube.objects == {} and not WindowSyncStatus.objects.exists()
    assert "would apply ClusterQueue docket-team-a (h100: nominalQuota 12, lendingLimit 8, borrowingLimit 0)" in out


def test_objects_no_longer_rendered_are_deleted_others_left_alone(
    live_server: Any, orion: SimpleNamespace, kube: KubeApiServer, tmp_path: Path
) -> None:
    def queue(name: str, cluster: str) -> dict[str, Any]:
        return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
                "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "docket",
                                                      "docket.io/cluster": cluster}}, "spec": {}}

    kube.objects[CQ_PATH + "docket-team-gone"] = queue("docket-team-gone", "orion")
    kube.objects[CQ_PATH + "docket-team-atlas"] = queue("docket-team-atlas", "atlas")  # another cluster's
    kube.objects[CQ_PATH + "research"] = {**queue("research", "orion"), "metadata": {"name": "research"}}  # by hand

    assert run(live_server, orion, kubeconfig(tmp_path, kube))[0] == 0

    assert CQ_PATH + "docket-team-gone" not in kube.objects
    assert {CQ_PATH + "docket-team-atlas", CQ_PATH + "research"} <= set(kube.objects)
    assert [r.path for r in kube.requests if r.method == "DELETE"] == [CQ_PATH + "docket-team-gone"]
    lists = [r for r in kube.requests if r.method == "GET"]
    assert {r.query["labelSelector"] for r in lists} == {"app.kubernetes.io/managed-by=docket,docket.io/cluster=orion"}


def test_the_loop_wakes_at_the_window_boundary_and_applies_the_new_quota(
    live_server: Any, orion: SimpleNamespace, kube: KubeApiServer, tmp_path: Path
) -> None:
    boundary = WEEK_START + timedelta(hours=72)  # team B's standard window starts
    moments = iter([WEEK_START + timedelta(hours=58)] * 2 + [boundary] * 2)
    slept: list[float] = []
    adapter = KueueSync(kube=KubeClient(load_kubeconfig(kubeconfig(tmp_path, kube))), cluster="orion",
                        out=io.StringIO())
    docket = DocketClient(live_server.url, orion.token, "orion")

    run_loop(docket, adapter, interval_s=86400, resync_s=86400, dry_run=False, passes=2,
             sleep=slept.append, now=lambda: next(moments), out=io.StringIO())

    # The interval is a day, so the first sleep is the 14 h to the boundary; the second pass (at the
    # boundary) does not send the ETag, reads the windows again and applies team B's new quota; then
    # it sleeps until the next boundary, 8 h later (hour 80: team B's preemptible window ends).
    assert slept == [14 * 3600, 8 * 3600]
    assert len([r for r in kube.applies() if r.path == CQ_PATH + "docket-team-b"]) == 2
    assert limits(kube.stored("clusterqueues", "docket-team-b")) == {
        "nominalQuota": 8, "lendingLimit": 8}
    assert statuses()[4][0] == "in_sync" and statuses()[4][3].startswith("8 GPUs on h100 in ClusterQueue")


def test_local_queues_for_mapped_namespaces(
    live_server: Any, orion: SimpleNamespace, kube: KubeApiServer, tmp_path: Path
) -> None:
    config = kubeconfig(tmp_path, kube)
    assert run(live_server, orion, config, "--namespace", "team-a=ml-a", "--namespace", "team-a=ml-a-dev")[0] == 0

    assert kube.stored("localqueues", "docket", namespace="ml-a")["spec"] == {"clusterQueue": "docket-team-a"}
    assert "/apis/kueue.x-k8s.io/v1beta2/namespaces/ml-a-dev/localqueues/docket" in kube.objects

    # Unmapped later: the LocalQueue is pruned (found by the cluster-wide list).
    assert run(live_server, orion, config, "--namespace", "team-a=ml-a")[0] == 0
    assert "/apis/kueue.x-k8s.io/v1beta2/namespaces/ml-a-dev/localqueues/docket" not in kube.objects
    assert "/apis/kueue.x-k8s.io/v1beta2/namespaces/ml-a/localqueues/docket" in kube.objects


def test_kubeconfigs_it_cannot_use_are_refused_with_the_reason(tmp_path: Path) -> None:
    exec_user = tmp_path / "exec.json"
    exec_user.write_text(json.dumps({
        "current-context": "c", "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
        "clusters": [{"name": "k", "cluster": {"server": "https://k8s.example:6443"}}],
        "users": [{"name": "u", "user": {"exec": {"command": "aws"}}}],
    }))
    with pytest.raises(KubeError, match="exec or auth-provider plugin"):
        load_kubeconfig(exec_user)
    with pytest.raises(KubeError, match="no context named 'other'"):
        load_kubeconfig(exec_user, context="other")
    missing = tmp_path / "missing"
    with pytest.raises(KubeError, match="cannot read kubeconfig"):
        load_kubeconfig(missing)

    err = io.StringIO()
    with pytest.raises(SystemExit) as exit_info, contextlib.redirect_stderr(err):
        main(["--url", "http://docket.invalid", "--token", "t", "--cluster", "orion", "--kubeconfig",
              str(exec_user), "--once"])
    assert exit_info.value.code == 2 and "exec or auth-provider plugin" in err.getvalue()


def test_status_message_reads_the_status_body() -> None:
    body = json.dumps(status_body(422, "Invalid", 'x "y" is invalid', [{"field": "spec.a", "message": "bad a"}]))
    assert status_message(422, body.encode()) == 'HTTP 422 Invalid: x "y" is invalid; spec.a: bad a'
    assert status_message(502, b"<html>Bad gateway</html>") == "HTTP 502 <html>Bad gateway</html>"


def test_unusable_certificates_and_plain_servers_are_told_apart(kube: KubeApiServer, tmp_path: Path) -> None:
    pki = kube.pki
    mismatched = kubeconfig(tmp_path, kube, name="mismatch", user={
        "client-certificate-data": pki.b64(pki.client_cert), "client-key-data": pki.b64(pki.server_key)})
    with pytest.raises(KubeError, match="cannot use its certificates"):
        load_kubeconfig(mismatched)
    half = kubeconfig(tmp_path, kube, name="half", user={"client-certificate-data": pki.b64(pki.client_cert)})
    with pytest.raises(KubeError, match="client-certificate-data and client-key-data go together"):
        load_kubeconfig(half)
    not_base64 = kubeconfig(tmp_path, kube, name="b64")
    not_base64.write_text(not_base64.read_text().replace(pki.b64(pki.ca), "not*base64"))
    with pytest.raises(KubeError, match="certificate-authority-data is not base64"):
        load_kubeconfig(not_base64)
    file_server = kubeconfig(tmp_path, kube, name="file")
    file_server.write_text(file_server.read_text().replace(kube.url, "file:///etc/passwd"))
    with pytest.raises(KubeError, match="server 'file:///etc/passwd' is not an http\\(s\\) URL"):
        load_kubeconfig(file_server)


def test_in_cluster_reads_the_service_account(kube: KubeApiServer, tmp_path: Path) -> None:
    account = tmp_path / "serviceaccount"
    account.mkdir()
    (account / "token").write_text(TOKEN + "\n")
    (account / "ca.crt").write_bytes(kube.pki.ca.read_bytes())
    port = kube.url.rsplit(":", 1)[1]

    config = in_cluster_config(account, env={"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": port})
    KubeClient(config).apply(kueue.render([], at=datetime.now(UTC), cluster="orion")[0])

    assert config.server == kube.url and kube.requests[0].authorization == f"Bearer {TOKEN}"
    with pytest.raises(KubeError, match="KUBERNETES_SERVICE_HOST is not set"):
        in_cluster_config(account, env={})


def test_the_operator_chooses_lending_and_borrowing(
    live_server: Any, orion: SimpleNamespace, kube: KubeApiServer, tmp_path: Path
) -> None:
    config = kubeconfig(tmp_path, kube)
    assert run(live_server, orion, config, "--borrowing", "granted", "--standard-lend-pct", "50",
               "--priority-lend-pct", "50", "--cohort", "gpu-orion")[0] == 0

    team_a, team_b = kube.stored("clusterqueues", "docket-team-a"), kube.stored("clusterqueues", "docket-team-b")
    assert limits(team_a) == {"nominalQuota": 12, "lendingLimit": 6, "borrowingLimit": 0}  # 8 × 50% + 4 × 50%
    assert limits(team_b) == {"nominalQuota": 0, "lendingLimit": 0, "borrowingLimit": 4}
    assert team_a["spec"]["cohortName"] == "gpu-orion"
    assert "/apis/kueue.x-k8s.io/v1beta2/cohorts/gpu-orion" in kube.objects

    err = io.StringIO()
    with pytest.raises(SystemExit), contextlib.redirect_stderr(err):
        run(live_server, orion, config, "--standard-lend-pct", "150")
    assert "standard_lend_pct must be an integer from 0 to 100, got 150" in err.getvalue()
    assert len(kube.applies()) == 7  # the refused options applied nothing


def test_after_a_failed_pass_the_loop_waits_an_interval_even_past_a_boundary(
    kube: KubeApiServer, tmp_path: Path
) -> None:
    # Docket is down (nothing listens on the port); the last boundary the sync knew has passed.
    docket = DocketClient(f"http://127.0.0.1:{free_port()}", "token", "orion")
    adapter = KueueSync(kube=KubeClient(load_kubeconfig(kubeconfig(tmp_path, kube))), cluster="orion",
                        out=io.StringIO(), next_boundary=WEEK_START)
    slept: list[float] = []
    out = io.StringIO()

    run_loop(docket, adapter, interval_s=60, resync_s=3600, dry_run=False, passes=2, sleep=slept.append,
             now=lambda: WEEK_START + timedelta(hours=58), out=out)

    # Not at once for the boundary: an interval doubled per failed pass in a row, with jitter (half to all of it).
    assert 60 <= slept[0] <= 120 and 120 <= slept[1] <= 240 and out.getvalue().count("sync pass failed") == 2
    assert kube.requests == []


def test_the_command_line_runs_as_its_own_process_with_a_json_kubeconfig(
    live_server: Any, orion: SimpleNamespace, kube: KubeApiServer, tmp_path: Path
) -> None:
    # As on a scheduler host: `python -m`, the token in the environment, `kubectl config view --raw -o json`.
    config = tmp_path / "kubeconfig.json"
    import yaml

    config.write_text(json.dumps(yaml.safe_load(kubeconfig(tmp_path, kube).read_text())))
    env = program_env(child_env({"PATH": os.environ.get("PATH", ""), "DOCKET_TOKEN": orion.token,
                                 "KUBECONFIG": str(config)}), installed=False)
    result = subprocess.run(
        [*program("docket-kueue-sync", installed=False), "--url", live_server.url, "--cluster", "orion", "--once"],
        cwd=Path(__file__).resolve().parents[2], env=env, capture_output=True, text=True, timeout=60, check=False,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert f"Kubernetes API server {kube.url} from {config} (orion)" in result.stdout
    assert "created ClusterQueue docket-team-a (h100: nominalQuota 12, lendingLimit 8, borrowingLimit 0)" in (
        result.stdout)
    assert len(kube.applies()) == 7 and {s[0] for s in statuses().values()} == {"in_sync"}


def test_a_refused_local_queue_is_a_problem_not_a_failed_window(
    live_server: Any, orion: SimpleNamespace, kube: KubeApiServer, tmp_path: Path
) -> None:
    kube.refuse("/apis/kueue.x-k8s.io/v1beta2/namespaces/ml-a/localqueues/docket", 404, "NotFound",
                'namespaces "ml-a" not found')

    code, out = run(live_server, orion, kubeconfig(tmp_path, kube), "--namespace", "team-a=ml-a")

    assert code == 1
    assert 'problem: refused LocalQueue ml-a/docket: PATCH /apis/kueue.x-k8s.io/v1beta2/namespaces/ml-a/localqueues/' \
           'docket: HTTP 404 NotFound: namespaces "ml-a" not found' in out
    assert {s[0] for s in statuses().values()} == {"in_sync"}


def test_an_empty_list_from_docket_deletes_no_queue_and_is_reported(
    live_server: Any, orion: SimpleNamespace, kube: KubeApiServer, tmp_path: Path
) -> None:
    config = kubeconfig(tmp_path, kube)
    assert run(live_server, orion, config)[0] == 0
    queues = {CQ_PATH + "docket-team-a", CQ_PATH + "docket-team-b"}
    assert queues <= set(kube.objects)
    proxy = FaultProxy(live_server.url)
    proxy.mode = "empty"  # a Docket restored from an old backup, or pointed at another database
    try:
        code, out = run(SimpleNamespace(url=proxy.url), orion, config)
    finally:
        proxy.close()

    # Team A's queue holds quota now, and removing both queues is all the sync manages: each needs Docket to
    # say its windows were withdrawn, and Docket still holds them. Nothing is deleted; the windows say why.
    assert code == 1, out
    assert queues <= set(kube.objects) and not [r for r in kube.requests if r.method == "DELETE"]
    assert "kept docket-team-a: it is live" in out and "nothing pruned" in out
    for ref in (1, 2, 3):
        state, _requested, _reserved, message = statuses()[ref]
        assert state == "failed" and "Docket still holds window" in message, (ref, message)


# --- --export: the one way to see the objects without applying them ------------------------------


def test_export_prints_what_a_pass_would_apply_with_the_syncs_options(
    live_server: Any, orion: SimpleNamespace, kube: KubeApiServer, tmp_path: Path
) -> None:
    at = (WEEK_START + timedelta(hours=58)).isoformat()
    out = io.StringIO()
    code = main(["--url", live_server.url, "--token", orion.token, "--cluster", "orion", "--export", "--at", at,
                 "--cohort", "gpu-orion", "--borrowing", "granted", "--standard-lend-pct", "50"], out=out)

    assert code == 0
    documents = [d for d in yaml.safe_load_all(out.getvalue()) if d]
    queues = {d["metadata"]["name"]: d for d in documents if d["kind"] == "ClusterQueue"}
    assert set(queues) == {"docket-team-a", "docket-team-b"}
    # Team A at hour 58: 4 priority GPUs (not lent) and 8 standard ones, half of them lent.
    assert limits(queues["docket-team-a"]) == {"nominalQuota": 12, "lendingLimit": 4, "borrowingLimit": 0}
    assert queues["docket-team-b"]["spec"]["cohortName"] == "gpu-orion"
    assert kube.requests == [] and not WindowSyncStatus.objects.exists()  # nothing applied, nothing reported
    # A pass at the same instant applies the same objects.
    adapter = KueueSync(kube=KubeClient(load_kubeconfig(kubeconfig(tmp_path, kube))), cluster="orion",
                        cohort="gpu-orion", policy=kueue.KueuePolicy(standard_lend_pct=50, borrowing="granted"),
                        out=io.StringIO())
    adapter.sync(DocketClient(live_server.url, orion.token, "orion").fetch_windows().windows,  # type: ignore[union-attr]
                 now=datetime.fromisoformat(at), dry_run=False)
    assert kube.stored("clusterqueues", "docket-team-a")["spec"] == queues["docket-team-a"]["spec"]


def test_export_refuses_options_it_cannot_use(live_server: Any, orion: SimpleNamespace,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--url", live_server.url, "--token", orion.token, "--cluster", "orion", "--export"]
    for extra, message in ((["--standard-lend-pct", "101"], "standard_lend_pct must be an integer from 0 to 100"),
                           (["--at", "2026-12-02T10:00:00"], "has no UTC offset")):
        with pytest.raises(SystemExit) as exit_:
            main([*base, *extra], out=io.StringIO())
        assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_a_run_keeps_its_quota_across_the_week_boundary_and_loses_it_at_the_hour_it_is_given_back(
    live_server: Any, world: SimpleNamespace, kube: KubeApiServer, tmp_path: Path, settings: Any
) -> None:
    # Team A's two-week run on orion: the last 4 hours of 2027-W12 (Sunday 20:00 to 24:00 in Berlin, the week summer
    # time starts: 167 hours), then W13 committed and not published. The sync passes an hour before Monday 00:00 and
    # an hour after, then W13 is published, then the team gives it back from 10:00 on Monday.
    from allocations import services
    from allocations.commitments import RunWeek
    from allocations.engine import EngineWindow
    from committee import weeks
    from tests.allocations.plans import placed
    from tests.allocations.test_kueue import validate

    settings.TIME_ZONE = "Europe/Berlin"

    def bounds(week: str) -> tuple[datetime, datetime]:
        start, end = weeks.week_bounds(week)
        return start.astimezone(UTC), end.astimezone(UTC)

    def publish_week(week: str, *parts: tuple[datetime, datetime]) -> list[AllocationWindow]:
        start, end = bounds(week)
        engine = [EngineWindow(ref=21, pool=world.h100.key, gpu_count=8, start=s, end=e, tier="standard")
                  for s, e in parts]
        plan = services.plan_publish(week=week, week_starts_at=start, week_ends_at=end, source_ref="test",
                                     windows=engine, explanations=[placed(engine[0])],
                                     pools={world.h100.key: world.h100}, teams={21: world.team_a},
                                     published_by_name="Chris Chair")
        return list(AllocationWindow.objects.filter(plan=plan))

    start, end = bounds("2027-W12")
    assert end - start == timedelta(hours=167)
    [first] = publish_week("2027-W12", (end - timedelta(hours=4), end))
    week2 = RunWeek("2027-W13", 2, *bounds("2027-W13"))
    services.commitments_record(refs=[21], runs=[services.PlacedRun(window=first, run_weeks=2,
                                                                     later_weeks=[week2], position=0)])
    adapter = KueueSync(kube=KubeClient(load_kubeconfig(kubeconfig(tmp_path, kube))), cluster="orion",
                        out=io.StringIO())
    docket = DocketClient(live_server.url, token_for(world.orion, "kueue-sync"), "orion")
    slept: list[float] = []

    def passes(at: datetime, count: int = 1) -> dict[str, Any]:
        """`count` passes of the sync's loop at `at`; the team's ClusterQueue as stored."""
        moments = iter([at] * 2 * count)
        run_loop(docket, adapter, interval_s=3600, resync_s=0, dry_run=False, passes=count, sleep=slept.append,
                 now=lambda: next(moments), out=io.StringIO())
        return kube.stored("clusterqueues", "docket-team-a")

    version = passes(end - timedelta(hours=1))["metadata"]["resourceVersion"]
    queue = passes(end + timedelta(hours=1), 2)  # Monday 01:00: the first window has ended, W13 is not published

    assert limits(queue)["nominalQuota"] == 8  # held from the committed week
    validate({k: v for k, v in queue.items() if k != "status"})  # as Kueue's CRD accepts it
    # The same object on both sides of the boundary: applied three times, never changed.
    assert queue["metadata"]["resourceVersion"] == version
    assert len([r for r in kube.applies() if r.path == CQ_PATH + "docket-team-a"]) == 3
    # No wake-up at Monday 00:00 (nothing changes there); the next change is the end of the committed week.
    assert slept[0] == 3600 and adapter.next_boundary == week2.end

    # W13 is published: its window holds the week instead of the commitment, counted once; the same queue (its
    # annotation now names that window), its quota unchanged.
    [second] = publish_week("2027-W13", (week2.start, week2.end))
    before = queue
    queue = passes(end + timedelta(hours=2))
    assert queue["spec"] == before["spec"] and queue["metadata"]["uid"] == before["metadata"]["uid"]
    assert [w["id"] for w in json.loads(queue["metadata"]["annotations"]["docket.io/windows"])] == [second.pk]

    # The team gives its GPUs back from 10:00 (the week's next plan version ends the window there): the quota holds
    # until that hour, the loop wakes at it, and from it the team's queue holds nothing.
    hour = week2.start + timedelta(hours=10)
    publish_week("2027-W13", (week2.start, hour))
    queue = passes(hour - timedelta(hours=1))
    assert limits(queue)["nominalQuota"] == 8 and adapter.next_boundary == hour
    queue = passes(hour)
    assert limits(queue)["nominalQuota"] == 0
    validate({k: v for k, v in queue.items() if k != "status"})
