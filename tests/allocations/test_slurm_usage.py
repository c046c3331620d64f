"""The Slurm usage collector's arithmetic (scheduler/src/docket_scheduler/slurm_usage.py), without a cluster.

What real accounting and a live Docket make of it is tested in test_slurm_usage_e2e.py; here the
edges a short lab run does not reach: hour boundaries, running jobs, ties between windows, the
idle grant, the utilization cap, and the names that do not map.
"""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from docket_scheduler.base import DesiredWindow
from docket_scheduler.slurm_usage import (
    JobRun,
    MeasuredUsage,
    UsageError,
    default_period,
    hour_buckets,
    idempotency_key,
    main,
    measured_usage,
    name_map,
    parse_sacct_json,
)

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def run(job_id: int, account: str, *, submit: float, start: float | None, end: float | None,
        gpus: dict[str, int] | None = None) -> JobRun:
    return JobRun(job_id=job_id, account=account, submit=at(submit), start=None if start is None else at(start),
                  end=None if end is None else at(end), gpus=gpus or {"a100": 4})


def window(window_id: int, team: str, account: str | None, gpus: int, start: float, end: float,
           pool: str = "a100") -> DesiredWindow:
    return DesiredWindow(id=window_id, plan_version=1, cluster="atlas", pool=pool, gpu_model=pool.upper(),
                         scheduler_label=pool, gpu_count=gpus, gpus_per_node=8, start=at(start), end=at(end),
                         team=team, account=account, tier="standard", request_id=None)


WINDOWS = [window(1, "team-a", "acct-a", 8, 0, 120), window(2, "team-b", "acct-b", 4, 0, 60)]


def reports(runs: list[JobRun], windows: list[DesiredWindow] = WINDOWS, *, since: float = 0, until: float = 120,
            now: float = 180, account_map: dict[str, str] | None = None, pool_map: dict[str, str] | None = None,
            ignored: tuple[str, ...] = ()) -> dict[tuple[str, str, datetime], MeasuredUsage]:
    names = name_map(windows, account_map=account_map or {}, pool_map=pool_map or {}, ignored=ignored)
    found = measured_usage(runs, windows, cluster="atlas", since=at(since), until=at(until), now=at(now),
                          mapping=names)
    return {(r.team, r.pool, r.period_start): r for r in found}


def test_a_job_across_the_hour_is_split_on_the_hour_grid() -> None:
    # 4 GPUs from 9:30 to 10:30: two GPU-hours in each hour; it waited 10 minutes.
    found = reports([run(1, "acct-a", submit=20, start=30, end=90)])

    first, second = found[("team-a", "a100", at(0))], found[("team-a", "a100", at(60))]
    assert (first.gpu_hours_used, second.gpu_hours_used) == (Decimal("2.00"), Decimal("2.00"))
    # Window 1 grants 8 GPUs × 1 h in each hour: a quarter used.
    assert first.mean_utilization_pct == second.mean_utilization_pct == Decimal("25.0")
    # The wait counts in the hour the job started in.
    assert (first.mean_queue_wait_minutes, second.mean_queue_wait_minutes) == (Decimal("10.0"), Decimal("0.0"))
    assert first.window == second.window == 1


def test_a_granted_window_without_jobs_is_reported_idle_and_usage_without_a_grant_is_full() -> None:
    found = reports([run(1, "acct-a", submit=0, start=0, end=60, gpus={"h100": 2})],
                    [*WINDOWS, window(3, "team-z", "acct-z", 2, 60, 120, pool="h100")])

    idle = found[("team-b", "a100", at(0))]
    assert (idle.gpu_hours_used, idle.mean_utilization_pct, idle.window) == (Decimal("0.00"), Decimal("0.0"), 2)
    ungranted = found[("team-a", "h100", at(0))]
    assert (ungranted.gpu_hours_used, ungranted.mean_utilization_pct, ungranted.window) == (Decimal("2.00"), 100, None)
    assert ("team-b", "a100", at(60)) not in found  # window 2 ends at 10:00: nothing granted, nothing used


def test_utilization_is_capped_at_100_and_a_running_job_counts_up_to_now() -> None:
    # 16 GPUs on an 8-GPU grant, still running at 9:45.
    found = reports([run(1, "acct-a", submit=0, start=0, end=None, gpus={"a100": 16})], since=0, until=60, now=45)

    record = found[("team-a", "a100", at(0))]
    assert record.gpu_hours_used == Decimal("12.00")
    assert record.mean_utilization_pct == 100


def test_the_window_overlapping_the_hour_most_is_named_and_both_grant() -> None:
    windows = [window(7, "team-a", "acct-a", 4, 0, 20), window(5, "team-a", "acct-a", 4, 20, 60)]

    found = reports([run(1, "acct-a", submit=0, start=0, end=60, gpus={"a100": 2})], windows, until=60)

    record = found[("team-a", "a100", at(0))]
    assert record.window == 5
    assert record.granted_gpu_hours == Decimal("4.00") and record.mean_utilization_pct == Decimal("50.0")


def test_an_unknown_account_or_gpu_type_stops_everything_and_names_the_jobs() -> None:
    runs = [run(1, "acct-a", submit=0, start=0, end=10), run(2, "ops", submit=0, start=0, end=10),
            run(3, "acct-a", submit=0, start=0, end=10, gpus={"l40s": 1})]

    with pytest.raises(UsageError) as error:
        reports(runs)

    assert "Slurm account 'ops' (jobs 2)" in str(error.value) and "--account-map ops=TEAM" in str(error.value)
    assert "GPU type 'l40s' (jobs 3)" in str(error.value) and "--pool-map l40s=POOL" in str(error.value)

    found = reports(runs, ignored=("ops",), pool_map={"L40S": "a100"})
    # 4 GPUs × 10 min, and the L40S mapped onto the A100 pool: 1 GPU × 10 min.
    assert found[("team-a", "a100", at(0))].gpu_hours_used == Decimal("0.83")
    assert not any(key[0] == "ops" for key in found)


def test_a_job_outside_the_period_does_not_count_and_names_do_not_matter_then() -> None:
    found = reports([run(1, "ops", submit=0, start=130, end=150)], since=0, until=120)

    assert all(r.gpu_hours_used == 0 for r in found.values())


def test_keys_are_deterministic_and_fit_the_api() -> None:
    key = idempotency_key(cluster="atlas", account="acct-a", pool="a100", start=at(0), end=at(60))
    assert key == "slurm:atlas:acct-a:a100:20261201T090000Z:20261201T100000Z"
    long = idempotency_key(cluster="atlas", account="a" * 64, pool="a100", start=at(0), end=at(60))
    assert len(long) <= 100 and long.startswith("slurm:")
    assert long == idempotency_key(cluster="atlas", account="a" * 64, pool="a100", start=at(0), end=at(60))
    assert long != idempotency_key(cluster="atlas", account="a" * 64, pool="a100", start=at(60), end=at(120))


def test_periods() -> None:
    assert hour_buckets(at(30), at(150)) == [(at(30), at(60)), (at(60), at(120)), (at(120), at(150))]
    # At 10:03 the hour 9–10 is not settled yet (5 minutes): the last complete one is 8–9.
    assert default_period(at(63), hours=1, settle=timedelta(minutes=5)) == (at(-60), at(0))
    assert default_period(at(66), hours=3, settle=timedelta(minutes=5)) == (at(-120), at(60))


def test_untyped_gpus_in_sacct_json_are_kept_apart_from_typed_ones() -> None:
    job = {"job_id": 9, "account": "acct-a",
           "time": {"submission": 1796138146, "start": 1796138147, "end": 0},
           "tres": {"allocated": [{"type": "cpu", "name": None, "count": 1},
                                  {"type": "gres", "name": "gpu", "count": 6},
                                  {"type": "gres", "name": "gpu:a100", "count": 4}]}}
    cpu_only = {"job_id": 10, "account": "acct-a", "time": {"submission": 1796138146, "start": 0, "end": 0},
                "tres": {"allocated": [{"type": "cpu", "name": None, "count": 1}]}}

    (parsed,) = parse_sacct_json(json.dumps({"jobs": [job, cpu_only]}))

    assert parsed.gpus == {"a100": 4, "": 2} and parsed.end is None
    with pytest.raises(UsageError, match="no 'jobs' list"):
        parse_sacct_json("{}")


@pytest.mark.parametrize(("argv", "message"), [
    (["--since", "2026-12-01T09:00:00Z"], "give both --since and --until"),
    (["--account-map", "acct-a"], "is not NAME=VALUE"),
    (["--since", "2026-12-01T09:00:00", "--until", "2026-12-01T10:00:00Z"], "has no UTC offset"),
])
def test_bad_arguments_are_refused_before_anything_runs(argv: list[str], message: str,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--url", "http://127.0.0.1:9", "--token", "dks_x", "--cluster", "atlas", *argv], out=io.StringIO())
    assert exited.value.code == 2
    assert message in capsys.readouterr().err
