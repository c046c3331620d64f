"""Issue 7 end to end: the real Docket serves a published plan, the Slurm sync runs as its own
process, and a real slurmctld ends up holding exactly the plan's windows.

Docket is pytest-django's `live_server` (the real windows and sync-status API, scheduler
tokens, the windows page) over a transactional database; plans are published through the
services (the committee's path in the first test, `plan_publish` where the test needs exact
control over which windows change). The sync is `docket-slurm-sync` in a subprocess (installed,
or from scheduler/src: tests/scheduler_programs.py), the only process that sees SLURM_CONF; the controller is the pytest
process's private slurmctld (tests/allocations/slurm_testbed.py), emptied of reservations per test.
"""

from __future__ import annotations

import io
import math
import re
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from rest_framework import serializers

from allocations import selectors, services
from allocations.api.serializers import SyncStatusItemSerializer
from allocations.models import AllocationPlan, ClusterAccount, GpuPool, WindowSyncStatus, WindowWithdrawal
from committee import services as committee_services
from docket_scheduler.base import MESSAGE_MAX_CHARS, SyncState, SyncStatus
from docket_scheduler.client import DocketClient, poll
from docket_scheduler.slurm_sync import SlurmSync
from tests.allocations.plans import W, publish
from tests.allocations.slurm_testbed import SlurmTestbed, clean_slurmctld, slurmctld  # noqa: F401  (fixtures)
from tests.committee.reviewing import close, decide, score
from tests.factories import file_request
from tests.scheduler_programs import program, program_env

pytestmark = [pytest.mark.slurm, pytest.mark.django_db(transaction=True)]

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def atlas(world: SimpleNamespace) -> SimpleNamespace:
    """Atlas as its operator sets it up: an H100 pool next to the A100 one, each team mapped
    to a Slurm account (the admin's cluster accounts), and a scheduler token for the sync."""
    world.atlas_h100 = GpuPool.objects.create(
        cluster=world.atlas, slug="h100", gpu_model="H100", gpu_count=32, gpus_per_node=8, scheduler_label="h100"
    )
    ClusterAccount.objects.create(cluster=world.atlas, team=world.team_a, account="team-a-acct")
    ClusterAccount.objects.create(cluster=world.atlas, team=world.team_b, account="team-b-acct")
    world.token = services.scheduler_client_create(cluster=world.atlas, name="slurm-sync").token
    return world


def run_sync(live_server: Any, world: SimpleNamespace, slurm: SlurmTestbed, *args: str,
             tiers: bool = False) -> tuple[int, str]:
    """One `--once` pass of the real client in its own process; (exit code, what it printed).

    With --reservations-only unless `tiers`: this controller has no accounting, so every
    window, whatever its tier, is a reservation (the QOS tiers: test_slurm_tiers.py)."""
    result = subprocess.run(
        [
            *program("docket-slurm-sync"),
            "--url", live_server.url, "--token", world.token, "--cluster", "atlas",
            "--once", "--scontrol", slurm.scontrol, *([] if tiers else ["--reservations-only"]), *args,
        ],
        cwd=REPO, env=program_env(slurm.env), capture_output=True, text=True, timeout=60, check=False,
    )
    return result.returncode, result.stdout + result.stderr


def held(slurm: SlurmTestbed) -> dict[str, tuple[Any, ...]]:
    """What the controller reserves, in the terms a window is published in."""
    return {
        name: (r.start, r.end, r.node_count, r.features, r.accounts)
        for name, r in slurm.reservations().items()
    }


def published(plan: AllocationPlan) -> dict[str, tuple[Any, ...]]:
    """The reservations that `plan`'s atlas windows call for (whole nodes, the pool's feature, the account)."""
    accounts = dict(ClusterAccount.objects.filter(cluster__slug="atlas").values_list("team_id", "account"))
    return {
        f"docket-w{w.pk}": (
            w.start, w.end, math.ceil(w.gpu_count / w.pool.gpus_per_node), w.pool.scheduler_label,
            {accounts[w.team_id]},
        )
        for w in selectors.plan_window_list(plan=plan)
        if w.cluster.slug == "atlas" and w.team_id in accounts
    }


def window_row(client: Any, user: Any, week: str, window_id: int) -> str:
    """The windows page's row of one window, as a committee member sees it."""
    client.force_login(user)
    html = client.get("/windows/", {"week": week}).content.decode()
    match = re.search(rf'<tr id="window-{window_id}">(.*?)</tr>', html, re.S)
    assert match, f"window {window_id} is not on the page"
    return match.group(1)


def statuses() -> dict[int, tuple[Any, ...]]:
    return {
        s.window_id: (s.state, s.nodes_requested, s.nodes_reserved, s.client_name)
        for s in WindowSyncStatus.objects.all()
    }


# --- the committee's path --------------------------------------------------------------------


@pytest.fixture
def published_week(atlas: SimpleNamespace) -> AllocationPlan:
    """Next week, decided by the committee and published: team A 16 A100 and 8 H100 on atlas,
    team B 12 A100 on atlas (two nodes for 12 GPUs) and 8 H100 on orion (not atlas's)."""
    world = atlas
    requests = [
        file_request(world, title="Ranker retrain", gpu_count=16, min_gpu_count=8),
        file_request(world, title="Embeddings", pool=world.atlas_h100, gpu_count=8, min_gpu_count=8,
                     duration_hours=24),
        file_request(world, team=world.team_b, title="Vision model", gpu_count=12, min_gpu_count=4),
        file_request(world, team=world.team_b, title="Speech", pool=world.h100, gpu_count=8, min_gpu_count=4),
    ]
    close(world)
    for member in (world.chair, world.reviewer, world.finance):
        for rank, gpu_request in enumerate(requests):
            score(member, gpu_request, 9 - rank, 8 - rank, 9 - rank)
    for gpu_request in requests:
        decide(world, gpu_request)
    world.cycle = committee_services.cycle_finalize(cycle=world.cycle, actor=world.chair)
    return committee_services.cycle_publish(actor=world.chair, cycle=world.cycle)


def test_committee_plan_becomes_the_reservations_and_its_correction_replaces_them(
    live_server: Any, atlas: SimpleNamespace, published_week: AllocationPlan, slurm: SlurmTestbed, client: Any
) -> None:
    world, week = atlas, published_week.week
    want = published(published_week)
    assert len(want) == 3  # orion's window is not atlas's business

    # A dry run prints the plan and neither reserves nor reports anything.
    code, out = run_sync(live_server, world, slurm, "--dry-run")
    assert code == 0, out
    assert held(slurm) == {} and not WindowSyncStatus.objects.exists()
    assert sorted(re.findall(r"would create (docket-w\d+)", out)) == sorted(want)

    code, out = run_sync(live_server, world, slurm)
    assert code == 0, out
    assert held(slurm) == want
    b_window = next(w for w in published_week.windows.all() if w.gpu_count == 12)
    assert f"window {b_window.pk}: 12 GPUs → 2 nodes (16 GPUs)" in out
    assert statuses() == {int(name.removeprefix("docket-w")): ("in_sync", r[2], r[2], "slurm-sync")
                          for name, r in want.items()}
    row = window_row(client, world.reviewer, week, b_window.pk)
    assert "In sync" in row and "2/2 nodes" in row

    # A second pass reads, changes nothing, and reports the same.
    before = slurm.reservations()
    code, out = run_sync(live_server, world, slurm)
    assert code == 0, out
    assert slurm.reservations() == before
    assert not re.search(r"^(create|update|delete) ", out, re.M)
    assert out.count(": in sync") == 3

    # Half the A100s go down; the chair publishes a correction and the next pass follows it.
    world.a100.gpu_count = 32
    world.a100.save()
    correction = committee_services.cycle_publish(actor=world.chair, cycle=world.cycle,
                                                  reason="Half of atlas/a100 is down.")
    withdrawn = {f"docket-w{pk}" for pk in WindowWithdrawal.objects.filter(plan=correction)
                 .values_list("window_id", flat=True)}
    assert correction.version == 2 and withdrawn and withdrawn <= set(want)

    code, out = run_sync(live_server, world, slurm)
    assert code == 0, out
    assert held(slurm) == published(correction)
    for name in withdrawn:
        assert f"delete {name} (window {name.removeprefix('docket-w')} is no longer published)" in out
    assert not set(published(correction)) & withdrawn


# --- a correction through plan_publish: update, delete and create in one pass -----------------


def test_new_plan_version_updates_deletes_and_creates(
    live_server: Any, atlas: SimpleNamespace, slurm: SlurmTestbed
) -> None:
    world, week = atlas, atlas.cycle.week
    v1 = publish([W(world.a100, world.team_a, 16, 8, 56, ref=1),
                  W(world.a100, world.team_b, 8, 0, 24, ref=2),
                  W(world.atlas_h100, world.team_a, 12, 24, 48, ref=3)], week=week)
    assert run_sync(live_server, world, slurm)[0] == 0
    assert held(slurm) == published(v1) and len(published(v1)) == 3
    kept = v1.windows.get(request_ref=1)
    nodes_before = slurm.reservations()[f"docket-w{kept.pk}"].nodes

    # Version 2 keeps request 1's window, drops 2's, grows 3's and adds 4's; and team A's
    # Slurm account is renamed in the admin.
    v2 = publish([W(world.a100, world.team_a, 16, 8, 56, ref=1),
                  W(world.atlas_h100, world.team_a, 20, 24, 48, ref=3),
                  W(world.a100, world.team_b, 4, 30, 40, ref=4)], week=week)
    ClusterAccount.objects.filter(team=world.team_a).update(account="team-a-gpu")
    old_2, old_3 = (v1.windows.get(request_ref=ref).pk for ref in (2, 3))
    new_3, new_4 = (v2.windows.get(request_ref=ref).pk for ref in (3, 4))

    before, reported = held(slurm), statuses()
    code, plan = run_sync(live_server, world, slurm, "--dry-run")
    assert code == 0, plan
    assert (held(slurm), statuses()) == (before, reported)
    assert f"would update docket-w{kept.pk}: scontrol update ReservationName=docket-w{kept.pk} " \
           "Accounts=team-a-gpu" in plan
    assert f"would delete docket-w{old_2}" in plan and f"would create docket-w{new_4}" in plan

    code, out = run_sync(live_server, world, slurm)
    assert code == 0, out
    assert held(slurm) == published(v2)
    assert slurm.reservations()[f"docket-w{kept.pk}"].nodes == nodes_before  # changed in place
    actions = re.findall(r"^(create|update|delete) docket-w(\d+)", out, re.M)
    assert sorted(actions) == sorted([("update", str(kept.pk)), ("delete", str(old_2)), ("delete", str(old_3)),
                                      ("create", str(new_3)), ("create", str(new_4))])
    assert statuses()[new_3] == ("in_sync", 3, 3, "slurm-sync")


def test_window_of_a_team_without_an_account_is_reported_failed_beside_it(
    live_server: Any, atlas: SimpleNamespace, slurm: SlurmTestbed, client: Any
) -> None:
    world = atlas
    ClusterAccount.objects.filter(team=world.team_b).delete()
    plan = publish([W(world.a100, world.team_a, 8, 8, 56, ref=1), W(world.a100, world.team_b, 8, 0, 24, ref=2)],
                   week=world.cycle.week)
    mapped, unmapped = plan.windows.get(request_ref=1), plan.windows.get(request_ref=2)

    code, out = run_sync(live_server, world, slurm)

    assert code == 1, out
    assert list(held(slurm)) == [f"docket-w{mapped.pk}"]
    stored = WindowSyncStatus.objects.get(window=unmapped)
    assert (stored.state, stored.nodes_reserved, stored.message) == ("failed", 0,
                                                                     "no Slurm account mapped for team team-b")
    row = window_row(client, world.chair, plan.week, unmapped.pk)
    assert "Failed" in row and "no Slurm account mapped for team team-b" in row
    assert "In sync" in window_row(client, world.chair, plan.week, mapped.pk)


def test_standard_window_on_a_cluster_without_accounting_is_failed_with_the_reason(
    live_server: Any, atlas: SimpleNamespace, slurm: SlurmTestbed, client: Any
) -> None:
    world = atlas
    plan = publish([W(world.a100, world.team_a, 8, 8, 56, ref=1, tier="priority"),
                    W(world.a100, world.team_b, 4, 0, 24, ref=2)], week=world.cycle.week)
    reserved, quota = plan.windows.get(request_ref=1), plan.windows.get(request_ref=2)

    code, out = run_sync(live_server, world, slurm, tiers=True)

    assert code == 1, out
    assert list(held(slurm)) == [f"docket-w{reserved.pk}"]
    stored = WindowSyncStatus.objects.get(window=quota)
    assert (stored.state, stored.nodes_requested, stored.nodes_reserved) == ("failed", 0, 0)
    assert stored.message.startswith("accounting is needed for quotas")
    row = window_row(client, world.chair, plan.week, quota.pk)
    assert "Failed" in row and "accounting is needed for quotas" in row and "0/0 nodes" not in row
    assert "In sync" in window_row(client, world.chair, plan.week, reserved.pk)


# --- the poll loop against the real API --------------------------------------------------------


def test_poll_reads_every_page_and_an_unchanged_plan_costs_one_304(
    live_server: Any, atlas: SimpleNamespace, slurm: SlurmTestbed, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = atlas
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "PAGE_SIZE": 2}
    plan = publish([W(world.a100, world.team_a, 8, 0, 10, ref=1), W(world.a100, world.team_b, 8, 10, 20, ref=2),
                    W(world.atlas_h100, world.team_b, 8, 20, 30, ref=3)], week=world.cycle.week)
    client = DocketClient(live_server.url, world.token, "atlas")
    sent: list[tuple[str, str, str | None]] = []  # method, path, If-None-Match sent
    etags: list[str | None] = []  # ETag answered
    real_request = client._request

    def spy(method: str, url: str, *, headers: dict[str, str] | None = None, data: bytes | None = None) -> Any:
        answer = real_request(method, url, headers=headers, data=data)
        sent.append((method, url.removeprefix(live_server.url), (headers or {}).get("If-None-Match")))
        etags.append(answer[2].get("ETag"))
        return answer

    monkeypatch.setattr(client, "_request", spy)
    adapter = SlurmSync(scontrol=slurm.scontrol, env=slurm.env, out=io.StringIO(), reservations_only=True)
    slept: list[float] = []
    out = io.StringIO()

    poll(client, adapter, interval_s=30, resync_s=3600, dry_run=False, passes=2, sleep=slept.append, out=out)

    assert held(slurm) == published(plan)
    first_page, second_page, report, again = sent
    assert first_page[:2] == ("GET", "/api/v1/windows/?cluster=atlas") and first_page[2] is None
    assert second_page[0] == "GET" and "after=" in second_page[1] and "as_of=" in second_page[1]
    assert report == ("POST", "/api/v1/windows/sync-status/", None)
    assert again[:2] == first_page[:2] and again[2] == etags[0]  # the first page's ETag, answered 304
    assert "windows unchanged (304); nothing to do" in out.getvalue()
    assert slept == [30, 30]
    assert len(statuses()) == 3


def test_a_slurm_message_longer_than_the_api_takes_is_cut_not_refused(
    live_server: Any, atlas: SimpleNamespace
) -> None:
    plan = publish([W(atlas.a100, atlas.team_a, 8, 8, 56, ref=1)], week=atlas.cycle.week)
    window = plan.windows.get()
    message = SyncStatusItemSerializer().fields["message"]
    assert isinstance(message, serializers.CharField) and message.max_length == MESSAGE_MAX_CHARS

    DocketClient(live_server.url, atlas.token, "atlas").post_statuses(
        [SyncStatus(window.pk, SyncState.FAILED, 1, 0, "Error creating the reservation: " + "x" * 3000)]
    )

    stored = WindowSyncStatus.objects.get(window=window).message
    assert len(stored) == MESSAGE_MAX_CHARS and stored.startswith("Error creating") and stored.endswith("…")
