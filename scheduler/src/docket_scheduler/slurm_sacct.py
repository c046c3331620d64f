"""Read what a Slurm cluster's accounting says: the job runs in `sacct --json`, with their GPUs and times.

The first half of the Slurm usage collector (`slurm_usage`, which turns these runs into measured usage per team,
pool and hour and posts it): running `sacct` and parsing its JSON, standard library only.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

SLURM_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"


class UsageError(Exception):
    """sacct could not be read, or what it says cannot be reported as asked; nothing was posted."""


# --- what accounting says ----------------------------------------------------------------------


@dataclass(frozen=True)
class JobRun:
    """One run of one job, from accounting (a requeued job has one per run). Times are UTC."""

    job_id: int
    account: str
    submit: datetime
    start: datetime | None  # None: never started
    end: datetime | None  # None: still running
    gpus: Mapping[str, int]  # GPU type ("" when untyped) → allocated count

    def held(self, since: datetime, until: datetime, *, now: datetime) -> float:
        """Seconds of [since, until) during which this run held its GPUs."""
        if self.start is None:
            return 0.0
        end = self.end or now
        return max(0.0, (min(end, until) - max(self.start, since)).total_seconds())


def _epoch(value: Any) -> datetime | None:
    if isinstance(value, dict):  # later openapi versions wrap numbers: {"set": true, "number": N}
        value = value.get("number") if value.get("set", True) else None
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        return None
    return datetime.fromtimestamp(value, tz=UTC)


def parse_sacct_json(text: str) -> list[JobRun]:
    """The job runs in `sacct --json` output (Slurm 22.05, openapi v0.0.38 and later shapes).

    GPU counts come from the allocated TRES `gres/gpu:<type>`; a job with only an untyped
    `gres/gpu` gets type "". Jobs without GPUs are left out. Raises UsageError on output
    that is not sacct's JSON.
    """
    try:
        data = json.loads(text)
    except ValueError:
        raise UsageError("sacct --json did not print JSON") from None
    jobs = data.get("jobs") if isinstance(data, dict) else None
    if not isinstance(jobs, list):
        raise UsageError("sacct --json printed no 'jobs' list")
    runs = []
    for job in jobs:
        try:
            allocated = job.get("tres", {}).get("allocated") or []
            typed: dict[str, int] = {}
            untyped = 0
            for tres in allocated:
                if tres.get("type") != "gres" or not str(tres.get("name") or "").startswith("gpu"):
                    continue
                count = int(tres.get("count") or 0)
                name = str(tres["name"])
                if name == "gpu":
                    untyped = count
                elif name.startswith("gpu:"):
                    typed[name.removeprefix("gpu:")] = typed.get(name.removeprefix("gpu:"), 0) + count
            if untyped > sum(typed.values()):
                typed[""] = untyped - sum(typed.values())
            if not any(typed.values()):
                continue
            times = job["time"]
            submit = _epoch(times.get("submission"))
            if submit is None:
                raise KeyError("time.submission")
            runs.append(JobRun(
                job_id=int(job["job_id"]),
                account=str(job["account"]),
                submit=submit,
                start=_epoch(times.get("start")),
                end=_epoch(times.get("end")),
                gpus={gpu_type: count for gpu_type, count in typed.items() if count},
            ))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise UsageError(f"cannot read job {job.get('job_id', '?') if isinstance(job, dict) else '?'} "
                             f"in sacct's JSON: {exc}") from None
    return runs


def read_sacct(*, sacct: str, since: datetime, until: datetime, env: Mapping[str, str] | None,
               clusters: str | None = None, timeout_s: float = 300.0) -> list[JobRun]:
    """Every run (-D) of every job (-X, all users) that was eligible in [since, until), from `sacct --json`."""
    argv = [sacct, "--json", "-X", "-a", "-D", "-S", _slurm_time(since), "-E", _slurm_time(until)]
    if clusters:
        argv += ["-M", clusters]
    run_env = dict(os.environ if env is None else env)
    run_env["TZ"] = "UTC"  # -S and -E are given without an offset
    try:
        # The argv is ours; sacct's path comes from the operator's command line.
        result = subprocess.run(argv, env=run_env, capture_output=True, text=True,  # noqa: S603
                                timeout=timeout_s, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"cannot run {sacct}: {exc}") from None
    if result.returncode != 0:
        raise UsageError(f"{' '.join(argv)} exited {result.returncode}: {result.stderr.strip() or result.stdout[:300]}")
    return parse_sacct_json(result.stdout)


def _slurm_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime(SLURM_TIME_FORMAT)
