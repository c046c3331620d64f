"""Report what a Slurm cluster's accounting measured to Docket: GPU-hours, utilization, queue wait.

Runs on a host where `sacct` works and talks to Docket only over HTTP (standard library only,
no Django), from cron or a systemd timer, as

    docket-slurm-usage --url URL --cluster SLUG [--token-file PATH] \\
        [--hours N | --since T --until T] [--dry-run] [--account-map ACCOUNT=TEAM ...]

What it reads: `sacct --json -X -a -D -S since -E until` (every run of every job that was
eligible in the period, requeued runs included), the cluster's pools and team accounts
(`GET /api/v1/clusters/<slug>/`) and its windows (`GET /api/v1/windows/?ends_after=since`).
What it posts: one `POST /api/v1/usage/` per (team, pool, hour) on the UTC hour grid, cut to
the period. Definitions (docs/adapters.md has the long form):

- team: the Slurm account of the job, mapped to the Docket team that has it as its account
  on the cluster (ClusterAccount), or by `--account-map ACCOUNT=TEAM`;
- pool: the GPU type of the job's `gres/gpu:<type>` TRES, mapped to the pool whose scheduler
  label (else GPU model, else slug) is that type, or by `--pool-map TYPE=POOL`;
- gpu_hours_used: Σ allocated GPUs × the part of the run [start, end) inside the hour
  (a running job counts up to now);
- mean_utilization_pct: a proxy, since Slurm sees allocations, not GPU load:
  100 × GPU-hours used / GPU-hours the team's windows on that pool grant in the hour, at
  most 100; 100 when no window grants any (the team used all it was granted and more);
  a granted window with no job gives a record of 0 GPU-hours and 0 % (a granted, idle window);
- mean_queue_wait_minutes: mean (start − submit) of the runs that started in the hour; 0 when none did;
- window: the team's window on the pool that overlaps the hour most (lowest id on a tie);
- idempotency_key: `slurm:<cluster>:<account>:<pool>:<start>:<end>` (a SHA-256 of it when
  longer than 100 characters): a re-run of the same period posts the same keys, and Docket
  changes nothing. Numbers that changed since (accounting that arrived late) get 409 and
  are reported, not overwritten.

All or nothing before posting: an account that maps to no team, or a GPU type that maps to
no pool, stops the run with exit 2 before anything is posted (`--ignore-account` for
accounts that are not Docket's, such as an admin account).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, TextIO

from docket_scheduler.base import DesiredWindow
from docket_scheduler.cli import add_docket_options, docket_client, instant, output, pair, positive_int
from docket_scheduler.client import DocketClient, DocketError
from docket_scheduler.slurm_sacct import JobRun, UsageError, parse_sacct_json, read_sacct

# Reading sacct is `slurm_sacct`; its names stay importable from here, as before the split.
__all__ = [
    "JobRun", "MeasuredUsage", "UsageError", "collect", "main", "measured_usage", "parse_sacct_json", "read_sacct",
]

HOUR = timedelta(hours=1)
KEY_MAX_CHARS = 100  # the usage API's idempotency_key max_length


# --- what Docket is told -----------------------------------------------------------------------


@dataclass(frozen=True)
class MeasuredUsage:
    """One POST /api/v1/usage/ body, and the account it came from (for the log)."""

    account: str
    team: str
    pool: str
    window: int | None
    period_start: datetime
    period_end: datetime
    gpu_hours_used: Decimal
    mean_utilization_pct: Decimal
    mean_queue_wait_minutes: Decimal
    idempotency_key: str
    jobs: int = 0
    granted_gpu_hours: Decimal = Decimal(0)

    def to_api(self) -> dict[str, Any]:
        return {
            "team": self.team,
            "pool": self.pool,
            "window": self.window,
            "period_start": _iso(self.period_start),
            "period_end": _iso(self.period_end),
            "gpu_hours_used": str(self.gpu_hours_used),
            "mean_utilization_pct": str(self.mean_utilization_pct),
            "mean_queue_wait_minutes": str(self.mean_queue_wait_minutes),
            "idempotency_key": self.idempotency_key,
        }

    def describe(self) -> str:
        window = f"window {self.window}" if self.window is not None else "no window"
        return (f"{self.team} ({self.account}) on {self.pool} {_iso(self.period_start)}–{_iso(self.period_end)}: "
                f"{self.gpu_hours_used} GPU-h of {self.granted_gpu_hours} granted ({window}), "
                f"utilization {self.mean_utilization_pct} %, mean wait {self.mean_queue_wait_minutes} min, "
                f"{self.jobs} job run(s)")


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def idempotency_key(*, cluster: str, account: str, pool: str, start: datetime, end: datetime) -> str:
    """Deterministic per (cluster, account, pool, period): the same period always posts the same key."""
    stamp = "%Y%m%dT%H%M%SZ"
    key = f"slurm:{cluster}:{account}:{pool}:{start.astimezone(UTC):{stamp}}:{end.astimezone(UTC):{stamp}}"
    if len(key) <= KEY_MAX_CHARS:
        return key
    return "slurm:" + hashlib.sha256(key.encode()).hexdigest()


def hour_buckets(since: datetime, until: datetime) -> list[tuple[datetime, datetime]]:
    """[since, until) cut on the UTC hour grid: full hours, and a partial one at either end."""
    buckets = []
    start = since
    while start < until:
        next_hour = start.replace(minute=0, second=0, microsecond=0) + HOUR
        end = min(next_hour, until)
        buckets.append((start, end))
        start = end
    return buckets


@dataclass
class NameMap:
    """How Slurm's names become Docket's: accounts → teams, GPU types → pools."""

    teams: dict[str, str] = field(default_factory=dict)  # account → team slug
    pools: dict[str, str] = field(default_factory=dict)  # GPU type → pool slug
    ignored: frozenset[str] = frozenset()


def name_map(
    windows: Iterable[DesiredWindow],
    *,
    reference: Mapping[str, Any] | None = None,
    account_map: Mapping[str, str] = {},
    pool_map: Mapping[str, str] = {},
    ignored: Iterable[str] = (),
) -> NameMap:
    """Accounts and GPU types as Docket names them, overridden by the operator's maps.

    `reference` is the answer of `GET /api/v1/clusters/<slug>/` (every team's account and
    every pool of the cluster); the windows add what they name (an account, a pool's label).
    A pool answers to its scheduler label, its GPU model and its slug (case-insensitive).
    """
    teams: dict[str, str] = {}
    pools: dict[str, str] = {}
    for item in (reference or {}).get("accounts", []):
        teams.setdefault(str(item["account"]), str(item["team"]))
    for item in (reference or {}).get("pools", []):
        for name in (item.get("scheduler_label"), item.get("gpu_model"), item.get("slug")):
            if name:
                pools.setdefault(str(name).lower(), str(item["slug"]))
    for window in windows:
        if window.account:
            teams.setdefault(window.account, window.team)
        for name in (window.scheduler_label, window.gpu_model, window.pool):
            if name:
                pools.setdefault(name.lower(), window.pool)
    teams.update(account_map)
    pools.update({gpu_type.lower(): pool for gpu_type, pool in pool_map.items()})
    return NameMap(teams=teams, pools=pools, ignored=frozenset(ignored))


def _hours(seconds: float) -> Decimal:
    return (Decimal(repr(seconds)) / 3600).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)


def _tenth(value: Decimal) -> Decimal:
    return value.quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)


def measured_usage(
    runs: Sequence[JobRun],
    windows: Sequence[DesiredWindow],
    *,
    cluster: str,
    since: datetime,
    until: datetime,
    now: datetime,
    mapping: NameMap,
) -> list[MeasuredUsage]:
    """The reports for [since, until): one per (team, pool, hour) with usage or a granted window.

    Pure. Raises UsageError, before anything could be posted, when a run with GPU time in the
    period has an account that maps to no team (and is not ignored) or a GPU type that maps
    to no pool; the message names the jobs and the option that maps them.
    """
    unknown_accounts: dict[str, list[int]] = defaultdict(list)
    unknown_types: dict[str, list[int]] = defaultdict(list)
    relevant = [run for run in runs if run.held(since, until, now=now) > 0 or
                (run.start is not None and since <= run.start < until)]
    for run in relevant:
        if run.account in mapping.ignored:
            continue
        if run.account not in mapping.teams:
            unknown_accounts[run.account].append(run.job_id)
        for gpu_type in run.gpus:
            if gpu_type.lower() not in mapping.pools:
                unknown_types[gpu_type].append(run.job_id)
    problems = [
        f"Slurm account {account!r} (jobs {', '.join(map(str, sorted(set(jobs))))}) is no Docket team's account on "
        f"cluster {cluster} (no team has it as its cluster account): map it with --account-map {account}=TEAM, "
        f"or leave it out with --ignore-account {account}"
        for account, jobs in sorted(unknown_accounts.items())
    ] + [
        (f"GPU type {gpu_type!r} (jobs {', '.join(map(str, sorted(set(jobs))))}) is no pool's scheduler label on "
         f"cluster {cluster}: map it with --pool-map {gpu_type or 'untyped'}=POOL")
        for gpu_type, jobs in sorted(unknown_types.items())
    ]
    if problems:
        raise UsageError("; ".join(problems))

    account_of_team: dict[str, str] = {}
    for mapped_account, team in sorted(mapping.teams.items()):
        account_of_team.setdefault(team, mapped_account)
    reports: list[MeasuredUsage] = []
    for start, end in hour_buckets(since, until):
        seconds: dict[tuple[str, str], float] = defaultdict(float)
        waits: dict[tuple[str, str], list[float]] = defaultdict(list)
        job_ids: dict[tuple[str, str], set[int]] = defaultdict(set)
        for run in relevant:
            if run.account in mapping.ignored:
                continue
            held = run.held(start, end, now=now)
            started_here = run.start is not None and start <= run.start < end
            for gpu_type, count in run.gpus.items():
                key = (run.account, mapping.pools[gpu_type.lower()])
                if held > 0:
                    seconds[key] += count * held
                    job_ids[key].add(run.job_id)
                if started_here:
                    assert run.start is not None
                    waits[key].append((run.start - run.submit).total_seconds())
        granted: dict[tuple[str, str], float] = defaultdict(float)
        best: dict[tuple[str, str], tuple[float, int]] = {}
        for window in windows:
            overlap = (min(window.end, end) - max(window.start, start)).total_seconds()
            window_account = window.account or account_of_team.get(window.team)
            if overlap <= 0 or window_account is None or window_account in mapping.ignored:
                continue
            key = (window_account, window.pool)
            granted[key] += window.gpu_count * overlap
            if key not in best or (overlap, -window.id) > (best[key][0], -best[key][1]):
                best[key] = (overlap, window.id)
        for key in sorted(set(seconds) | set(granted) | set(waits)):
            account, pool = key
            used = _hours(seconds.get(key, 0.0))
            grant = _hours(granted.get(key, 0.0))
            if granted.get(key, 0.0) > 0:
                utilization = min(Decimal(100), _tenth(Decimal(100) * Decimal(repr(seconds.get(key, 0.0)))
                                                       / Decimal(repr(granted[key]))))
            else:
                utilization = Decimal(100) if seconds.get(key, 0.0) > 0 else Decimal(0)
            key_waits = waits.get(key, [])
            wait = _tenth(Decimal(repr(sum(key_waits) / len(key_waits))) / 60) if key_waits else Decimal("0.0")
            reports.append(MeasuredUsage(
                account=account,
                team=mapping.teams[account],
                pool=pool,
                window=best[key][1] if key in best else None,
                period_start=start,
                period_end=end,
                gpu_hours_used=used,
                mean_utilization_pct=utilization,
                mean_queue_wait_minutes=wait,
                idempotency_key=idempotency_key(cluster=cluster, account=account, pool=pool, start=start, end=end),
                jobs=len(job_ids.get(key, ())),
                granted_gpu_hours=grant,
            ))
    return reports


# --- one run -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CollectResult:
    reports: list[MeasuredUsage]
    created: int
    replayed: int
    refused: list[str]


def collect(
    client: DocketClient,
    *,
    since: datetime,
    until: datetime,
    now: datetime,
    sacct: str = "sacct",
    env: Mapping[str, str] | None = None,
    account_map: Mapping[str, str] = {},
    pool_map: Mapping[str, str] = {},
    ignored: Iterable[str] = (),
    dry_run: bool = False,
    out: TextIO = sys.stdout,
) -> CollectResult:
    """Read the windows and accounting of [since, until), compute the reports, post them (unless dry_run).

    Raises DocketError when the windows cannot be read (a bad token: 401) and UsageError when
    sacct fails or a name does not map; nothing is posted then. A report Docket refuses
    (400, 409) is listed in `refused` and the others are still posted; any other failure
    while posting stops the run (DocketError saying how many were posted).
    """
    if until <= since:
        raise UsageError(f"the period must end after it starts: {_iso(since)} – {_iso(until)}")
    reference = client.fetch_cluster()
    snapshot = client.fetch_windows(ends_after=since)
    windows = [w for w in (snapshot.windows if snapshot else []) if w.start < until and since < w.end]
    mapping = name_map(snapshot.windows if snapshot else [], reference=reference, account_map=account_map,
                       pool_map=pool_map, ignored=ignored)
    runs = read_sacct(sacct=sacct, since=since, until=until, env=env)
    reports = measured_usage(runs, windows, cluster=client.cluster, since=since, until=until, now=now,
                            mapping=mapping)
    print(f"cluster {client.cluster}: {_iso(since)} – {_iso(until)}: {len(runs)} GPU job run(s), "
          f"{len(windows)} window(s), {len(reports)} report(s)", file=out)
    created = replayed = 0
    refused: list[str] = []
    for report in reports:
        if dry_run:
            print(f"  would report {report.describe()}", file=out)
            continue
        try:
            was_replayed = client.post_usage(report.to_api()).replayed
        except DocketError as exc:
            if exc.status in (400, 409):
                refused.append(f"{report.idempotency_key}: {exc}")
                print(f"  refused {report.describe()}: {exc}", file=out)
                continue
            raise DocketError(f"{exc} (after {created + replayed} of {len(reports)} report(s) posted; "
                              "a re-run posts the rest)", status=exc.status) from None
        if was_replayed:
            replayed += 1
            print(f"  already reported {report.describe()}", file=out)
        else:
            created += 1
            print(f"  reported {report.describe()}", file=out)
    return CollectResult(reports=reports, created=created, replayed=replayed, refused=refused)


# --- command line ------------------------------------------------------------------------------


def default_period(now: datetime, *, hours: int, settle: timedelta) -> tuple[datetime, datetime]:
    """The last `hours` complete UTC hours that ended at least `settle` ago (accounting lags a little)."""
    until = (now - settle).replace(minute=0, second=0, microsecond=0)
    return until - hours * HOUR, until





def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="docket-slurm-usage",
        description="Post the GPU-hours, utilization and queue wait that Slurm accounting measured to Docket.",
    )
    add_docket_options(parser)
    parser.add_argument("--since", type=instant, help="period start, ISO 8601 with offset (default: see --hours)")
    parser.add_argument("--until", type=instant, help="period end, ISO 8601 with offset (default: see --hours)")
    parser.add_argument("--hours", type=positive_int, default=1,
                        help="without --since/--until: the last N complete hours (1); re-posting is harmless")
    parser.add_argument("--settle-minutes", type=positive_int, default=5,
                        help="an hour counts as complete this long after it ended (5): accounting lags the jobs")
    parser.add_argument("--account-map", type=pair("NAME=VALUE"), action="append", default=[], metavar="ACCOUNT=TEAM",
                        help="the Docket team of a Slurm account the windows do not name (repeatable)")
    parser.add_argument("--pool-map", type=pair("NAME=VALUE"), action="append", default=[], metavar="TYPE=POOL",
                        help="the Docket pool of a gres/gpu type (`untyped` for plain gres/gpu; repeatable)")
    parser.add_argument("--ignore-account", action="append", default=[], metavar="ACCOUNT",
                        help="a Slurm account whose jobs are not reported (repeatable)")
    parser.add_argument("--sacct", default="sacct", help="path to sacct (default: sacct on PATH)")
    parser.add_argument("--dry-run", action="store_true", help="print the reports; post nothing")
    return parser


def main(argv: Sequence[str] | None = None, *, env: Mapping[str, str] | None = None, out: TextIO | None = None,
         now: datetime | None = None) -> int:
    """Exit codes: 0 every report stored (or already stored); 1 Docket refused a report (400/409);
    2 nothing posted: Docket, its token or sacct could not be used, or a name does not map."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if (args.since is None) != (args.until is None):
        parser.error("give both --since and --until, or neither")
    client = docket_client(parser, args, env)
    stream = output(out)
    moment = now or datetime.now(UTC)
    if args.since is not None:
        since, until = args.since, args.until
    else:
        since, until = default_period(moment, hours=args.hours, settle=timedelta(minutes=args.settle_minutes))
    pool_map = {("" if gpu_type == "untyped" else gpu_type): pool for gpu_type, pool in args.pool_map}
    try:
        result = collect(
            client, since=since, until=until, now=moment, sacct=args.sacct, env=env,
            account_map=dict(args.account_map), pool_map=pool_map, ignored=args.ignore_account,
            dry_run=args.dry_run, out=stream,
        )
    except (DocketError, UsageError) as exc:
        print(f"usage collection failed: {exc}", file=stream)
        return 2
    print(f"{result.created} reported, {result.replayed} already reported, {len(result.refused)} refused",
          file=stream)
    return 1 if result.refused else 0


if __name__ == "__main__":
    sys.exit(main())
