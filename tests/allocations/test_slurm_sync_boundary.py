"""Issue 28, point 6: the Slurm sync carries a run across the week boundary on a real controller.

A run over several weeks is one reservation from its first hour to the end of the last week it is committed to, so
a job in it runs on across Sunday 24:00 in the committee's zone (Europe/Berlin here) on the same nodes, also when
the run's GPUs grow at that hour and its next week is not published yet (the reservation's node count follows the
committed week around the running job): tested live
at the end of the week summer time starts (2027-W12, 167 hours) on a lab whose clock starts seconds before that
boundary (tests/allocations/slurm_clock_lab.py), and, without waiting, across a week of 169 hours (2027-W43). The
sync runs as its own process (`docket-slurm-sync --once`) against the real Docket (`live_server`), which keeps the
lab's clock; the run's windows are published with `plan_publish` and its later weeks recorded with
`commitments_record`, as the committee's publish does.
"""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import time_machine

from allocations import selectors, services
from allocations.commitments import RunWeek
from allocations.engine import EngineWindow
from allocations.models import AllocationPlan, AllocationWindow, ClusterAccount, WindowSyncStatus
from committee import weeks
from tests.allocations.plans import placed
from tests.allocations.slurm_clock_lab import ClockLab, clock_lab
from tests.scheduler_programs import program, program_env

pytestmark = [pytest.mark.slurm, pytest.mark.django_db(transaction=True)]

REPO = Path(__file__).resolve().parents[2]
ZONE = "Europe/Berlin"
SPRING, FALL = "2027-W12", "2027-W43"  # summer time starts / ends on their Sunday: 167 / 169 hours
RUN_A, RUN_B = 9001, 9002  # the runs' request ids
LEAD = timedelta(seconds=10)  # the lab's clock starts this long before the spring week's end


def bounds(week: str) -> tuple[datetime, datetime]:
    start, end = weeks.week_bounds(week)
    return start.astimezone(UTC), end.astimezone(UTC)


def later(week: str, n: int) -> str:
    return weeks.current_week_label(bounds(week)[0] + timedelta(days=7 * n, hours=12))


def publish_week(world: SimpleNamespace, week: str, windows: list[tuple[Any, int, datetime, datetime, int]]
                 ) -> AllocationPlan:
    """The week's next plan version with these priority windows (team, GPUs, start, end, request), in UTC."""
    start, end = bounds(week)
    engine = [EngineWindow(ref=ref, pool=world.a100.key, gpu_count=gpus, start=s, end=e, tier="priority")
              for _team, gpus, s, e, ref in windows]
    return services.plan_publish(
        week=week, week_starts_at=start, week_ends_at=end, source_ref="test", windows=engine,
        explanations=[placed(w) for w in {w.ref: w for w in reversed(engine)}.values()],
        pools={world.a100.key: world.a100},
        teams={ref: team for team, _gpus, _s, _e, ref in windows}, published_by_name="Chris Chair",
    )


def commit(window: AllocationWindow, run_weeks: int, gpu_counts: tuple[int, ...] = ()) -> None:
    """The run's later weeks, as its first week's publish records them (`gpu_counts`: each later week's GPUs)."""
    later_weeks = [RunWeek(later(window.week, n), n + 1, *bounds(later(window.week, n))) for n in range(1, run_weeks)]
    services.commitments_record(refs=[window.request_ref or 0], runs=[
        services.PlacedRun(window=window, run_weeks=run_weeks, later_weeks=later_weeks, position=0,
                           gpu_counts=gpu_counts)])


def run_window(plan: AllocationPlan, ref: int) -> AllocationWindow:
    return next(w for w in selectors.plan_window_list(plan=plan) if w.request_ref == ref)


def sync(live_server: Any, token: str, lab: ClockLab) -> str:
    """One `--once` pass of the real program at the lab's clock; what it printed (it must exit 0)."""
    result = subprocess.run(
        [*program("docket-slurm-sync"), "--url", live_server.url, "--token", token, "--cluster", "atlas", "--once",
         "--scontrol", lab.scontrol, "--reservations-only"],
        cwd=REPO, env=program_env(lab.env), capture_output=True, text=True, timeout=60, check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def held(lab: ClockLab) -> dict[str, tuple[datetime, datetime, int, frozenset[str]]]:
    return {name: (r.start, r.end, r.node_count, r.accounts) for name, r in lab.reservations().items()}


def test_a_run_is_one_reservation_across_the_week_boundary_and_a_job_in_it_runs_on(
    live_server: Any, world: SimpleNamespace, clock: time_machine.Traveller, settings: Any
) -> None:
    settings.TIME_ZONE = ZONE
    ClusterAccount.objects.create(cluster=world.atlas, team=world.team_a, account="team-a-acct")
    ClusterAccount.objects.create(cluster=world.atlas, team=world.team_b, account="team-b-acct")
    token = services.scheduler_client_create(cluster=world.atlas, name="slurm-sync").token
    spring_start, spring_end = bounds(SPRING)
    fall_start, fall_end = bounds(FALL)
    assert (spring_end - spring_start, fall_end - fall_start) == (timedelta(hours=167), timedelta(hours=169))

    # Team A's three-week run grows at its second week: its first week's window is the spring week's last 4 hours
    # (8 GPUs, 1 node), then weeks 13 and 14 are committed with 16 GPUs (2 nodes). Team B's two-week run starts the
    # last day of the 169-hour week.
    spring = publish_week(world, SPRING, [(world.team_a, 8, spring_end - timedelta(hours=4), spring_end, RUN_A)])
    fall = publish_week(world, FALL, [(world.team_b, 8, fall_end - timedelta(hours=24), fall_end, RUN_B)])
    first_a, first_b = run_window(spring, RUN_A), run_window(fall, RUN_B)
    commit(first_a, 3, gpu_counts=(16, 16))
    commit(first_b, 2)
    end_a, end_b = bounds(later(SPRING, 2))[1], bounds(later(FALL, 1))[1]
    run_a, run_b = f"docket-w{first_a.pk}", f"docket-w{first_b.pk}"
    with clock_lab(starts_at=spring_end - LEAD) as lab:
        clock.move_to(lab.now())
        boundary(live_server, world, token, lab, clock, run_a=run_a, run_b=run_b, ends=(end_a, end_b))


def boundary(live_server: Any, world: SimpleNamespace, token: str, lab: ClockLab, clock: time_machine.Traveller, *,
             run_a: str, run_b: str, ends: tuple[datetime, datetime]) -> None:
    """The part of the test on the lab's clock, from seconds before the spring week's end."""
    spring_end, fall_end = bounds(SPRING)[1], bounds(FALL)[1]
    end_a, end_b = ends
    out = sync(live_server, token, lab)
    reservations = lab.reservations()
    assert set(reservations) == {run_a, run_b}, out  # one each, not one per week
    assert reservations[run_a].start <= lab.now() and reservations[run_a].end == end_a
    assert (reservations[run_a].node_count, reservations[run_a].accounts) == (1, {"team-a-acct"})  # this week's
    # 24 + 168 hours from the 169-hour week's last day: no hour lost or doubled at the change of time.
    assert (reservations[run_b].start, reservations[run_b].end) == (fall_end - timedelta(hours=24), end_b)
    before = held(lab)
    again = sync(live_server, token, lab)
    assert held(lab) == before and "create " not in again and "update " not in again and "delete " not in again

    job = lab.sbatch(f"--reservation={run_a}", "-A", "team-a-acct", "--gres=gpu:a100:8", "-N", "1", "-t", "60",
                     "--wrap", "sleep 600")
    deadline = lab.now() + timedelta(seconds=8)
    while lab.job(job)[0] != "RUNNING" and lab.now() < deadline:
        lab.wait_until(lab.now() + timedelta(seconds=0.2))
    state, nodes = lab.job(job)
    assert state == "RUNNING" and lab.now() < spring_end, (state, nodes, lab.now())

    # Sunday 24:00 in Berlin passes; week 13 is not published yet: its commitment holds the run's nodes, now two
    # (the loop wakes at that hour): the same reservation grows around the running job's node, which it keeps.
    lab.wait_until(spring_end + timedelta(seconds=1))
    clock.move_to(lab.now())
    assert lab.job(job) == ("RUNNING", nodes)
    out = sync(live_server, token, lab)  # first_a has ended: Docket lists it no more
    assert "update " in out and "create " not in out and "delete " not in out, out
    grown = lab.reservations()[run_a]
    assert (grown.start, grown.end, grown.node_count) == (before[run_a][0], end_a, 2), out  # the lab's two nodes
    assert lab.job(job) == ("RUNNING", nodes)
    before = held(lab)
    # Slurm ends a job when its reservation ends (ResvOverRun=0): this one's runs two more weeks.
    assert f"Reservation={run_a} " in lab.run("scontrol", "-o", "show", "job", str(job)).stdout

    # Week 13 is published (the run's second week, and team B's second week lands too): the same reservation.
    week13 = publish_week(world, later(SPRING, 1), [(world.team_a, 16, *bounds(later(SPRING, 1)), RUN_A)])
    second_a = run_window(week13, RUN_A)
    out = sync(live_server, token, lab)
    assert held(lab) == before, out
    status = WindowSyncStatus.objects.get(window_id=second_a.pk)
    assert (status.state, status.nodes_reserved) == ("in_sync", 2)
    assert run_a in status.message

    # Team A gives 8 GPUs back from 02:00 (a new plan version splits the week's window there): the reservation keeps
    # both nodes until that hour, never fewer before it.
    week13_start, week13_end = bounds(later(SPRING, 1))
    hour = week13_start + timedelta(hours=2)
    publish_week(world, later(SPRING, 1), [(world.team_a, 16, week13_start, hour, RUN_A),
                                           (world.team_a, 8, hour, week13_end, RUN_A)])
    out = sync(live_server, token, lab)
    assert held(lab) == before, out
    # Then all of them from that hour: the reservation now ends there (Slurm removes it then), and is not deleted.
    publish_week(world, later(SPRING, 1), [(world.team_a, 16, week13_start, hour, RUN_A)])
    out = sync(live_server, token, lab)
    assert held(lab)[run_a] == (before[run_a][0], hour, 2, frozenset({"team-a-acct"})), out
    assert lab.job(job) == ("RUNNING", nodes)
