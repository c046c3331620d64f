"""Issue 27, point 3: the Slurm sync never drops what is live, and a misbehaving Docket cannot hold it.

The real Docket (`live_server`) sits behind a fault proxy (tests/allocations/fault_proxy.py) that stalls,
trickles, answers 500, serves an empty list or an older plan on demand; the sync's own poll loop runs in this
process against the shared private slurmctld (tests/allocations/slurm_testbed.py). Slurm tests run on the
machine's clock, so "this week" and "live" are the machine's.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from allocations import services
from allocations.models import AllocationPlan, ClusterAccount, WindowSyncStatus
from committee import weeks
from docket_scheduler import slurm_sync
from docket_scheduler.client import DocketClient, poll
from docket_scheduler.slurm_sync import SlurmSync
from tests.allocations.fault_proxy import FaultProxy
from tests.allocations.plans import W, publish
from tests.allocations.slurm_testbed import SlurmTestbed, clean_slurmctld, slurmctld  # noqa: F401  (fixtures)

pytestmark = [pytest.mark.slurm, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def atlas(world: SimpleNamespace) -> SimpleNamespace:
    ClusterAccount.objects.create(cluster=world.atlas, team=world.team_a, account="team-a-acct")
    ClusterAccount.objects.create(cluster=world.atlas, team=world.team_b, account="team-b-acct")
    world.token = services.scheduler_client_create(cluster=world.atlas, name="slurm-sync").token
    return world


@pytest.fixture
def proxy(live_server: Any) -> Iterator[FaultProxy]:
    faulty = FaultProxy(live_server.url)
    yield faulty
    faulty.close()


def this_week_now() -> tuple[str, float]:
    """The week of the clock (the machine's, for Slurm tests) and the hours since it began."""
    now = datetime.now(UTC)
    week = weeks.current_week_label(now)
    return week, (now - weeks.week_bounds(week)[0]).total_seconds() / 3600


def live_and_later(world: SimpleNamespace) -> tuple[AllocationPlan, int, int]:
    """Team A's window running now (from the hour before) and team B's starting later in the same week: in two hours,
    or, in the week's last hours (`make test-at` on a Sunday night), halfway from now to the week's end."""
    week, hours = this_week_now()
    start = max(int(hours) - 1, 0)
    later = int(hours) + 2 if int(hours) + 3 <= 168 else round(hours * 3600 + (168 - hours) * 1800) / 3600
    plan = publish([W(world.a100, world.team_a, 8, start, min(start + 24, 168), ref=1, tier="priority"),
                    W(world.a100, world.team_b, 8, later, min(later + 24, 168), ref=2, tier="priority")],
                   week=week)
    return plan, plan.windows.get(request_ref=1).pk, plan.windows.get(request_ref=2).pk


def sync_loop(proxy: FaultProxy, world: SimpleNamespace, slurm: SlurmTestbed, modes: list[str], *,
              timeout_s: float = 30.0, between: Callable[[int], Any] = lambda _done: None) -> tuple[str, list[float]]:
    """The sync's poll loop, one pass per mode (the proxy takes the next mode as the loop sleeps, after
    `between(passes done)`); the longest wait each time (the jitter's upper end). Returns what it printed and
    the waits."""
    client = DocketClient(proxy.url, world.token, "atlas", timeout_s=timeout_s)
    out = io.StringIO()
    adapter = SlurmSync(scontrol=slurm.scontrol, env=slurm.env, out=out, reservations_only=True)
    pending = iter(modes[1:])
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        between(len(slept))
        proxy.mode = next(pending, "pass")

    proxy.mode = modes[0]
    poll(client, adapter, interval_s=10, resync_s=3600, dry_run=False, passes=len(modes), sleep=sleep, out=out,
         max_backoff_s=50, rng=lambda _low, high: high)
    return out.getvalue(), slept


def state_of(window_id: int) -> tuple[str, str]:
    status = WindowSyncStatus.objects.get(window_id=window_id)
    return status.state, status.message


def test_an_empty_list_keeps_every_reservation_and_says_so_until_the_plan_withdraws_one(
    atlas: SimpleNamespace, proxy: FaultProxy, slurm: SlurmTestbed
) -> None:
    plan, live, later = live_and_later(atlas)

    out, slept = sync_loop(proxy, atlas, slurm, ["pass", "empty"])

    # The first pass reserved both; the empty list deleted neither: the running one is live, and removing
    # both would be all the sync manages. Docket still holds both windows, so each is reported failed.
    assert sorted(slurm.reservations()) == sorted([f"docket-w{live}", f"docket-w{later}"]), out
    assert f"kept docket-w{live}: it is live" in out
    assert f"kept docket-w{later}: the pass would remove 2 of the 2 objects it manages" in out
    for window in (live, later):
        status, message = state_of(window)
        assert status == "failed" and f"Docket still holds window {window}" in message
    assert slept == [10, 10]  # kept objects are reported, not an error: no backoff

    # A correction withdraws the running window: that plan says so explicitly, so it goes.
    hours = _hours(plan, later)
    publish([W(atlas.a100, atlas.team_b, 8, hours.start_h, hours.end_h, ref=2, tier="priority")], week=plan.week)
    out, _slept = sync_loop(proxy, atlas, slurm, ["pass"])

    assert f"delete docket-w{live} (window {live} is no longer published)" in out
    assert sorted(slurm.reservations()) == [f"docket-w{later}"]  # the correction kept team B's window as it was


def _hours(plan: AllocationPlan, window_id: int) -> SimpleNamespace:
    window = plan.windows.get(pk=window_id)
    start = weeks.week_bounds(plan.week)[0]
    return SimpleNamespace(start_h=(window.start - start).total_seconds() / 3600,
                           end_h=(window.end - start).total_seconds() / 3600)


def test_an_older_plan_changes_nothing_is_reported_and_backs_off(
    atlas: SimpleNamespace, proxy: FaultProxy, slurm: SlurmTestbed
) -> None:
    plan, live, later = live_and_later(atlas)
    hours = _hours(plan, later)
    added: list[int] = []

    def correct(done: int) -> None:
        if done == 1:  # after the first pass: version 2 withdraws the running window and adds one
            v2 = publish([W(atlas.a100, atlas.team_b, 8, hours.start_h, hours.end_h, ref=2, tier="priority"),
                          W(atlas.a100, atlas.team_a, 8, hours.start_h, hours.end_h, ref=3, tier="priority")],
                         week=plan.week)
            added.append(v2.windows.get(request_ref=3).pk)

    out, slept = sync_loop(proxy, atlas, slurm, ["pass", "pass", "older", "older", "pass"], between=correct)

    # Version 2 was applied (its withdrawal of the live window, confirmed with Docket, let that one go); then
    # version 1 came back twice: not an instruction. Nothing changed, each of its windows was reported
    # failed, and the loop backed off; version 2 again is applied as usual.
    assert f"delete docket-w{live} (window {live} is no longer published)" in out
    assert sorted(slurm.reservations()) == sorted([f"docket-w{later}", f"docket-w{added[0]}"]), out
    assert out.count("sync pass failed: not applied: Docket served change") == 2
    status, message = state_of(live)
    assert status == "failed" and "older than change" in message and "nothing was changed" in message
    assert slept == [10, 10, 20, 40, 10]
    assert state_of(added[0])[0] == "in_sync"


def test_with_a_state_file_a_once_run_refuses_an_older_plan_than_the_last_run_applied(
    atlas: SimpleNamespace, proxy: FaultProxy, slurm: SlurmTestbed, tmp_path: Path
) -> None:
    plan, live, later = live_and_later(atlas)
    DocketClient(proxy.url, atlas.token, "atlas").fetch_windows()  # the proxy keeps this list: version 1
    hours = _hours(plan, later)
    publish([W(atlas.a100, atlas.team_b, 8, hours.start_h, hours.end_h, ref=2, tier="priority")], week=plan.week)
    state = tmp_path / "atlas.json"

    def once() -> tuple[int, str]:
        out = io.StringIO()
        code = slurm_sync.main(["--url", proxy.url, "--token", atlas.token, "--cluster", "atlas", "--once",
                                "--scontrol", slurm.scontrol, "--reservations-only", "--state-file", str(state)],
                               env=slurm.env, out=out)
        return code, out.getvalue()

    code, out = once()  # version 2: only team B's window
    assert code == 0, out
    kept = json.loads(state.read_text())
    assert sorted(slurm.reservations()) == [f"docket-w{later}"] and set(kept) == {"cursor"}

    proxy.mode = "older"
    code, out = once()  # a cron run later: version 1 again, which would bring back the withdrawn window

    assert code == 2 and "not applied: Docket served change" in out, out
    assert sorted(slurm.reservations()) == [f"docket-w{later}"] and json.loads(state.read_text()) == kept
    assert state_of(live)[0] == "failed"


def test_a_stalled_trickling_or_failing_docket_ends_each_pass_at_its_deadline_and_backs_off_to_the_cap(
    atlas: SimpleNamespace, proxy: FaultProxy, slurm: SlurmTestbed
) -> None:
    _plan, live, later = live_and_later(atlas)

    out, slept = sync_loop(proxy, atlas, slurm, ["stall", "trickle", "error", "error", "pass"], timeout_s=1.5)

    # A byte every 0.25 s would never trip a per-read timeout; the request's deadline ends it.
    assert out.count("no whole answer within 1.5 s") == 2, out
    assert out.count("HTTP 500") == 2
    assert [mode for mode, _method, _path in proxy.served[:4]] == ["stall", "trickle", "error", "error"]
    assert slept == [20, 40, 50, 50, 10]  # doubling per failed pass, at most the cap, then the interval again
    assert sorted(slurm.reservations()) == sorted([f"docket-w{live}", f"docket-w{later}"])
