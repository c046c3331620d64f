"""Where the elastic agent's minutes come from: DCGM through Prometheus, or Slurm's own accounting.

A source answers two questions for a pool over [start, end), minute by minute (None: a minute not measured):
each team's GPUs' utilization summed (per label value: a namespace, or a Slurm account), and the pool's GPUs' mean.
The agent (docket_scheduler.elastic_agent) chooses one with `--measure` and reports it as the action's
`measured_by`.

- `PrometheusMinutes`: DCGM_FI_DEV_GPU_UTIL, the GPUs' own load;
- `SlurmMinutes`: for a site without Prometheus, `sacct --json` (docket_scheduler.slurm_sacct): a GPU allocated to a
  job for the whole minute counts 100 %, for half of it 50 %; a minute nothing ran is 0 %, measured. It is a proxy
  (Slurm sees allocations, not load, as docket-slurm-usage says), so a team that holds GPUs without using them is not
  idle by it: the committee's rule reads less from it than from DCGM, never more.

Standard library only.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Protocol

from docket_scheduler.prometheus_usage import METRIC, Prometheus, PrometheusError
from docket_scheduler.slurm_sacct import JobRun, UsageError, read_sacct

MINUTE = timedelta(minutes=1)
SOURCES = ("prometheus", "slurm")


class MeasureError(Exception):
    """The source could not be read this minute: nothing it would have measured is idle."""


class MinuteSource(Protocol):
    name: str

    def team_minutes(self, *, pool: str, gpu_types: Collection[str], start: datetime, end: datetime
                     ) -> dict[str, list[Decimal | None]]: ...

    def pool_minutes(self, *, pool: str, gpu_types: Collection[str], gpu_count: int, start: datetime,
                     end: datetime) -> list[Decimal | None]: ...


# --- Prometheus (DCGM) ----------------------------------------------------------------------------------


def team_minutes(prometheus: Prometheus, *, label: str, selector: str, start: datetime, end: datetime,
                 metric: str = METRIC) -> dict[str, list[Decimal | None]]:
    """Each label value's GPUs' utilization summed, minute by minute over [start, end) (None: no sample then)."""
    return _minutes(prometheus, f"sum by ({label})", label=label, selector=selector, start=start, end=end,
                    metric=metric)


def pool_minutes(prometheus: Prometheus, *, selector: str, start: datetime, end: datetime, metric: str = METRIC
                 ) -> list[Decimal | None]:
    """The pool's GPUs' mean utilization, minute by minute over [start, end) (None: no sample then)."""
    found = _minutes(prometheus, "avg", label="", selector=selector, start=start, end=end, metric=metric)
    return found.get("", [None] * int((end - start) / MINUTE))


def _minutes(prometheus: Prometheus, aggregate: str, *, label: str, selector: str, start: datetime, end: datetime,
             metric: str) -> dict[str, list[Decimal | None]]:
    """`aggregate` of the series' per-minute means, per label value ("" when aggregated over all), minute by minute.

    The query is evaluated at the last millisecond of each minute over a range of 59.999 s, so each sample falls
    in exactly one minute (as `prometheus_usage.measure` does for its steps).
    """
    minutes = int((end - start) / MINUTE)
    series = f"{metric}{{{selector}}}" if selector else metric
    query = f"{aggregate} (avg_over_time({series}[59999ms]))"
    results = prometheus.query_range(query, start=start.timestamp() + 59.999, end=end.timestamp() - 0.001, step_s=60)
    found: dict[str, list[Decimal | None]] = {}
    for result in results:
        value = str((result.get("metric") or {}).get(label, "")) if label else ""
        if label and not value:
            continue
        row: list[Decimal | None] = [None] * minutes
        for at, sample in result.get("values", []):
            index = int((float(at) + 0.001 - start.timestamp()) // 60) - 1
            if 0 <= index < minutes:
                row[index] = Decimal(str(sample))
        found[value] = row
    return found


@dataclass
class PrometheusMinutes:
    prometheus: Prometheus
    label: str = "namespace"
    selectors: Mapping[str, str] = field(default_factory=dict)  # pool → PromQL label matchers of its GPUs
    name: str = "prometheus"

    def team_minutes(self, *, pool: str, gpu_types: Collection[str], start: datetime, end: datetime
                     ) -> dict[str, list[Decimal | None]]:
        try:
            return team_minutes(self.prometheus, label=self.label, selector=self.selectors.get(pool, ""),
                                start=start, end=end)
        except PrometheusError as exc:
            raise MeasureError(str(exc)) from None

    def pool_minutes(self, *, pool: str, gpu_types: Collection[str], gpu_count: int, start: datetime,
                     end: datetime) -> list[Decimal | None]:
        try:
            return pool_minutes(self.prometheus, selector=self.selectors.get(pool, ""), start=start, end=end)
        except PrometheusError as exc:
            raise MeasureError(str(exc)) from None


# --- Slurm accounting ---------------------------------------------------------------------------------


def allocated_minutes(runs: Sequence[JobRun], *, gpu_types: Collection[str], start: datetime, end: datetime
                      ) -> dict[str, list[Decimal]]:
    """Each account's GPUs of `gpu_types` allocated, as summed utilization (one GPU the whole minute: 100), minute by
    minute over [start, end); a running job counts up to `end`. Pure."""
    minutes = int((end - start) / MINUTE)
    found: dict[str, list[Decimal]] = {}
    for run in runs:
        gpus = sum(count for gpu_type, count in run.gpus.items() if gpu_type in gpu_types)
        if not gpus or run.start is None:
            continue
        row = found.setdefault(run.account.lower(), [Decimal(0)] * minutes)
        for index in range(minutes):
            since = start + index * MINUTE
            seconds = run.held(since, since + MINUTE, now=end)
            if seconds:
                row[index] += (Decimal(gpus) * Decimal(100) * Decimal(repr(seconds)) / 60).quantize(Decimal("0.1"))
    return found


@dataclass
class SlurmMinutes:
    """Slurm accounting as the measurement: one `sacct --json` a tick, kept for the pools of the same span."""

    sacct: str = "sacct"
    env: Mapping[str, str] | None = None
    timeout_s: float = 60.0
    name: str = "slurm"
    _read: tuple[datetime, datetime, list[JobRun]] | None = None

    def _runs(self, start: datetime, end: datetime) -> list[JobRun]:
        if self._read is not None and self._read[:2] == (start, end):
            return self._read[2]
        try:
            runs = read_sacct(sacct=self.sacct, since=start, until=end, env=self.env, timeout_s=self.timeout_s)
        except UsageError as exc:
            raise MeasureError(str(exc)) from None
        self._read = (start, end, runs)
        return runs

    def team_minutes(self, *, pool: str, gpu_types: Collection[str], start: datetime, end: datetime
                     ) -> dict[str, list[Decimal | None]]:
        found = allocated_minutes(self._runs(start, end), gpu_types=gpu_types, start=start, end=end)
        return {account: list[Decimal | None](row) for account, row in found.items()}

    def pool_minutes(self, *, pool: str, gpu_types: Collection[str], gpu_count: int, start: datetime,
                     end: datetime) -> list[Decimal | None]:
        found = allocated_minutes(self._runs(start, end), gpu_types=gpu_types, start=start, end=end)
        minutes = int((end - start) / MINUTE)
        if gpu_count <= 0:
            return [None] * minutes
        return [min(Decimal(100), (sum((row[i] for row in found.values()), Decimal(0)) / gpu_count)
                    .quantize(Decimal("0.1"))) for i in range(minutes)]
