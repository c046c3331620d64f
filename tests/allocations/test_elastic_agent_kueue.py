"""The elastic agent on Kueue (`docket-elastic-agent --kueue`): its minute loop lends an idle grant by raising the
team's ClusterQueue `lendingLimit` on the Kubernetes API server (the stand-in the Kueue sync's tests use,
tests/allocations/kube_apiserver.py: no real API server runs here), keeps it while Docket is gone (a real local
proxy that answers 500, then stops), takes it back when the owner's use rises, and reports each action once; every
queue it applies is valid against Kueue's CRD schemas (tests/data/kueue).

Time: as tests/allocations/test_elastic_agent_e2e.py, whose backfilled DCGM series this reads: Docket at FIXED_NOW,
the agent one tick at a time at a pinned minute. Team A's 8 A100s are idle (10 %) from 09:50 to 09:57, then busy.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import time_machine

from allocations.models import AgentAction, Cluster, SchedulerKind
from committee import services
from docket_scheduler import elastic_agent, kueue_sync
from docket_scheduler.elastic_kueue import LENT_ANNOTATION
from tests.allocations.fault_proxy import FaultProxy
from tests.allocations.kube_apiserver import KubeApiServer, serve
from tests.allocations.plans import W, publish, token_for
from tests.allocations.test_elastic_agent_e2e import dcgm  # noqa: F401  (the fixture)
from tests.allocations.test_kueue import validate
from tests.allocations.test_kueue_sync import kubeconfig
from tests.clock import FIXED_NOW
from tests.elastic_policy import elastic_version_one_as_migrated
from tests.prometheus import PrometheusServer

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KubeApiServer]:
    yield from serve(tmp_path_factory.mktemp("kube-apiserver"))


def team_a_queue(kube: KubeApiServer) -> dict[str, Any]:
    queue = kube.stored("clusterqueues", "docket-team-a")
    validate({k: v for k, v in queue.items() if k != "status"})
    return queue


def gpu_limits(queue: dict[str, Any]) -> dict[str, Any]:
    [group] = queue["spec"]["resourceGroups"]
    [flavor] = group["flavors"]
    return {k: v for k, v in flavor["resources"][0].items() if k != "name"}


def test_an_idle_grant_is_lent_on_its_cluster_queue_kept_while_docket_is_gone_taken_back_when_its_owner_is_busy(
        clock: time_machine.Traveller, world, live_server, dcgm: PrometheusServer,  # noqa: F811
        kube: KubeApiServer, tmp_path: Path) -> None:
    clock.move_to(FIXED_NOW)
    kube.reset()
    elastic_version_one_as_migrated()  # hours in minutes, whatever ran before in this worker
    version = services.elastic_policy_change(
        actor=world.chair, parameters={"idle_span_minutes": 5, "recent_span_minutes": 10},
        reason="The committee's policy is written in minutes.").number
    Cluster.objects.filter(pk=world.atlas.pk).update(scheduler_kind=SchedulerKind.KUEUE)
    plan = publish([W(world.a100, world.team_a, 8, 0, 24 * 7, ref=1),
                    W(world.a100, world.team_b, 8, 0, 24 * 7, ref=2, tier="preemptible")])
    window = plan.windows.get(team=world.team_a)
    token = token_for(world.atlas, "kueue")
    config = kubeconfig(tmp_path, kube)
    docket = ["--url", live_server.url, "--token", token, "--cluster", "atlas", "--kubeconfig", str(config), "--once"]
    # The operator's sync lends none of a standard window by itself: what is lent is the elastic policy's.
    synced = io.StringIO()
    assert kueue_sync.main([*docket, "--standard-lend-pct", "0"], out=synced, now=lambda: FIXED_NOW) == 0, (
        synced.getvalue())
    assert gpu_limits(team_a_queue(kube)) == {"nominalQuota": 8, "lendingLimit": 0, "borrowingLimit": 0}
    state = tmp_path / "elastic-atlas.json"
    applied = len(kube.applies())

    def tick(now: datetime, url: str = live_server.url) -> tuple[int, str]:
        printed = io.StringIO()
        argv = [*docket, "--url", url, "--kueue", "--prometheus", dcgm.url, "--team-map", "team-a=team-a",
                "--selector", 'a100=modelName="A100"', "--state-file", str(state), "--now", now.isoformat(),
                "--timeout", "5"]
        return elastic_agent.main(argv, out=printed), printed.getvalue()

    # 09:54: idle for four minutes only; nothing is patched.
    code, out = tick(FIXED_NOW - timedelta(minutes=5, seconds=30))
    assert code == 0 and f"policy v{version}: 0 actions" in out, out
    assert len(kube.applies()) == applied

    # 09:55: five idle minutes at 10 %: 7 of the 8 GPUs lent to the cohort, within the queue's quota.
    code, out = tick(FIXED_NOW - timedelta(minutes=4, seconds=30))
    assert code == 0 and "1 actions, 1 reported" in out, out
    queue = team_a_queue(kube)
    assert gpu_limits(queue) == {"nominalQuota": 8, "lendingLimit": 7, "borrowingLimit": 0}
    assert queue["metadata"]["annotations"][LENT_ANNOTATION] == '{"a100":7}'
    assert len(kube.applies()) == applied + 1
    # The same minute again: no action, no request to change anything.
    code, out = tick(FIXED_NOW - timedelta(minutes=4, seconds=30))
    assert code == 0 and "0 actions" in out and len(kube.applies()) == applied + 1, out

    # 09:56, Docket goes away (a proxy in front of it first answers 500, then is stopped): the agent keeps the policy
    # and the windows it read, keeps lending (the owner is still idle), and changes nothing for want of Docket.
    proxy = FaultProxy(live_server.url)
    try:
        code, out = tick(FIXED_NOW - timedelta(minutes=3, seconds=30), url=proxy.url)
        assert code == 0 and "0 actions" in out, out  # through the proxy while it passes
        proxy.mode = "error"
        code, out = tick(FIXED_NOW - timedelta(minutes=3, seconds=30), url=proxy.url)
        assert code == 1 and f"policy v{version} (kept: Docket not reached): 0 actions" in out, out
    finally:
        proxy.close()
    code, out = tick(FIXED_NOW - timedelta(minutes=3, seconds=30), url=proxy.url)
    assert code == 1 and "Docket not reached" in out and "(kept: Docket not reached): 0 actions" in out, out
    assert gpu_limits(team_a_queue(kube))["lendingLimit"] == 7 and len(kube.applies()) == applied + 1

    # Another hand lowered the limit under what the agent added: it refuses, changes nothing and reports nothing.
    kube.stored("clusterqueues", "docket-team-a")["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0][
        "lendingLimit"] = 3
    code, out = tick(FIXED_NOW - timedelta(minutes=1, seconds=30))
    assert code == 2 and "changed by another hand" in out, out
    assert gpu_limits(kube.stored("clusterqueues", "docket-team-a"))["lendingLimit"] == 3
    assert AgentAction.objects.count() == 1
    kube.stored("clusterqueues", "docket-team-a")["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0][
        "lendingLimit"] = 7

    # 09:58: the owner is busy again: the sync's limit is back, the annotation gone, the reclaim reported once.
    code, out = tick(FIXED_NOW - timedelta(minutes=1, seconds=30))
    assert code == 0 and "reclaim window" in out, out
    queue = team_a_queue(kube)
    assert gpu_limits(queue) == {"nominalQuota": 8, "lendingLimit": 0, "borrowingLimit": 0}
    assert LENT_ANNOTATION not in queue["metadata"]["annotations"]
    assert list(AgentAction.objects.order_by("acted_at").values_list("kind", "window", "gpus", "policy_version")) == [
        ("lend", window.pk, 7, version), ("reclaim", window.pk, 7, version)]
    lend = AgentAction.objects.get(kind="lend")
    assert str(lend.utilization_pct) == "10.0" and lend.span_minutes == 5
    assert "ClusterQueue docket-team-a lendingLimit a100=7" in lend.applied
