"""Post each team's measured GPU use on a pool to Docket, from DCGM metrics in Prometheus.

Runs next to Prometheus and talks to Docket only over HTTP (standard library only, no
Django), as

    docket-prometheus-usage --url URL --token TOKEN --cluster SLUG \
        --prometheus PROM_URL --pool POOL [--label namespace] [--team-map VALUE=TEAM ...] \
        [--team-accounts] [--selector 'modelName=~".*A100.*"'] [--since ISO] [--until ISO] \
        [--period SECONDS] [--step SECONDS] [--delay SECONDS] [--no-windows] [--dry-run]

For every period of `--period` seconds (aligned to multiples of it since the epoch) between
`--since` and `--until` (default: the last period complete `--delay` seconds ago, so that late
scrapes are in), and every team, one usage
report (docs/adapters.md, "Prometheus / DCGM usage collector", has the long form):

- which GPUs a team holds comes from the label `--label` (default `namespace`, as
  dcgm-exporter's Kubernetes mapping sets it) of `DCGM_FI_DEV_GPU_UTIL`; the label's value
  is turned into a Docket team by `--team-map VALUE=TEAM`, or, with `--team-accounts`, read
  as the team's account on the cluster (from the windows Docket serves that end after the
  first period's start); a value that maps
  to no team is skipped and named in the output; values mapped to one team are added up;
- the period is cut into steps of `--step` seconds, [t, t + step); a GPU counts for a step
  when its series has a sample in it (`last_over_time` over the step), so
  GPU-hours = Σ over steps of the team's GPUs present × step / 3600. The step must not be
  shorter than the exporter's scrape interval, or GPUs are missed between samples;
- mean utilization = the mean of the GPU's mean utilization in each step (`avg_over_time`),
  over all of the team's GPU-steps: a mean weighted by GPU-time;
- the idempotency key is `prom-<cluster>-<pool>-<team>-<start>-<end>` (compact UTC times),
  so running the collector twice over the same time posts nothing new, and a rerun after
  Prometheus learned more (a late scrape) gets 409 and changes nothing;
- a team with no GPU in a period gets no report: no data is not zero use;
- a report names the team's window on the pool that holds most GPU-hours of its period (from
  the windows API, `ends_after` the first period's start), so that utilization can be read per
  window; none without such a window, or with `--no-windows`.

Exit codes: 0 every report stored or already stored; 1 Docket refused a report (400 or 409,
printed with its reason); 2 Prometheus or Docket could not be used.
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import math
import re
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, TextIO

from docket_scheduler import __version__
from docket_scheduler.base import DesiredWindow
from docket_scheduler.cli import add_docket_options, docket_client, instant, output, pair, positive_int
from docket_scheduler.client import DocketClient, DocketError, open_url

METRIC = "DCGM_FI_DEV_GPU_UTIL"
USER_AGENT = f"docket-prometheus-usage/{__version__}"
MAX_POINTS = 11000  # Prometheus refuses a query_range of more points per series
KEY_MAX_CHARS = 100  # the usage API's idempotency_key
_LABEL = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")


class PrometheusError(Exception):
    """Prometheus could not be reached or answered something unreadable; nothing is posted."""


@dataclass(frozen=True)
class TeamUsage:
    """What one label value used over one period, before it is mapped to a team."""

    label_value: str
    period_start: datetime
    period_end: datetime
    gpu_seconds: float
    utilization_pct_seconds: float  # Σ over GPU-steps of the step's mean utilization × step

    def plus(self, other: TeamUsage) -> TeamUsage:
        """Two label values of one team in one period, as one report."""
        return TeamUsage(label_value=f"{self.label_value},{other.label_value}", period_start=self.period_start,
                         period_end=self.period_end, gpu_seconds=self.gpu_seconds + other.gpu_seconds,
                         utilization_pct_seconds=self.utilization_pct_seconds + other.utilization_pct_seconds)

    @property
    def gpu_hours(self) -> Decimal:
        return Decimal(repr(self.gpu_seconds / 3600)).quantize(Decimal("0.01"), ROUND_HALF_UP)

    @property
    def mean_utilization_pct(self) -> Decimal:
        mean = self.utilization_pct_seconds / self.gpu_seconds if self.gpu_seconds else 0.0
        return min(Decimal(100), Decimal(repr(mean)).quantize(Decimal("0.1"), ROUND_HALF_UP))


# --- periods and keys ---------------------------------------------------------------------------


def periods(since: datetime, until: datetime, period: timedelta) -> list[tuple[datetime, datetime]]:
    """The whole periods [t, t + period) inside [since, until), t a multiple of `period` since the epoch."""
    size = int(period.total_seconds())
    first = math.ceil(since.timestamp() / size) * size
    last = math.floor(until.timestamp() / size) * size
    return [(datetime.fromtimestamp(t, UTC), datetime.fromtimestamp(t + size, UTC)) for t in range(first, last, size)]


def idempotency_key(*, cluster: str, pool: str, team: str, start: datetime, end: datetime) -> str:
    """The same report always gets the same key; a key longer than the API takes is shortened by a hash."""
    key = f"prom-{cluster}-{pool}-{team}-{start:%Y%m%dT%H%M%SZ}-{end:%Y%m%dT%H%M%SZ}"
    if len(key) <= KEY_MAX_CHARS:
        return key
    return f"prom-{hashlib.sha256(key.encode()).hexdigest()}"


# --- Prometheus -------------------------------------------------------------------------------


class Prometheus:
    """The query_range API of one Prometheus server."""

    def __init__(self, url: str, *, timeout_s: float = 30.0) -> None:
        self.base_url = url.rstrip("/")
        self.timeout_s = timeout_s
        if urllib.parse.urlsplit(self.base_url).scheme not in ("http", "https"):
            raise PrometheusError(f"{url!r} is not an http(s) URL")

    def query_range(self, query: str, *, start: float, end: float, step_s: int) -> list[dict[str, Any]]:
        params = urllib.parse.urlencode({"query": query, "start": f"{start:.3f}", "end": f"{end:.3f}",
                                         "step": f"{step_s}s"})
        url = f"{self.base_url}/api/v1/query_range"
        request = urllib.request.Request(url, data=params.encode(), method="POST")  # noqa: S310 (http(s), checked)
        request.add_header("Content-Type", "application/x-www-form-urlencoded")
        request.add_header("User-Agent", USER_AGENT)
        try:
            with open_url(request, timeout_s=self.timeout_s) as response:
                body = json.load(response)
        except urllib.error.HTTPError as exc:
            raise PrometheusError(f"{url}: HTTP {exc.code} {exc.read()[:300].decode(errors='replace')}") from None
        except (urllib.error.URLError, OSError, ValueError, http.client.HTTPException) as exc:
            raise PrometheusError(f"{url}: {exc}") from None
        if not isinstance(body, dict) or body.get("status") != "success":
            raise PrometheusError(f"{url}: {str(body)[:300]}")
        data = body.get("data") or {}
        if data.get("resultType") != "matrix" or not isinstance(data.get("result"), list):
            raise PrometheusError(f"{url}: not a matrix: {str(data)[:300]}")
        return list(data["result"])


def measure(
    prometheus: Prometheus,
    *,
    label: str,
    selector: str,
    start: datetime,
    end: datetime,
    step_s: int,
    metric: str = METRIC,
) -> list[TeamUsage]:
    """Each label value's GPU-time and utilization over [start, end), in steps of `step_s` seconds.

    The query is evaluated at t + step − 1 ms for each step [t, t + step), over a range of
    step − 1 ms: Prometheus 2's ranges include both ends, so each sample falls in exactly one step.
    """
    seconds = int((end - start).total_seconds())
    if seconds % step_s:
        raise ValueError(f"the period ({seconds} s) is not a whole number of steps of {step_s} s")
    window = f"{step_s * 1000 - 1}ms"
    series = f"{metric}{{{selector}}}" if selector else metric
    first = start.timestamp() + step_s - 0.001
    last = end.timestamp() - 0.001
    counts: dict[str, float] = {}
    utilization: dict[str, float] = {}
    chunk = MAX_POINTS - 1
    steps = seconds // step_s
    for offset in range(0, steps, chunk):
        chunk_first = first + offset * step_s
        chunk_last = min(last, first + (offset + chunk - 1) * step_s)
        for query, into in (
            (f"count by ({label}) (last_over_time({series}[{window}]))", counts),
            (f"sum by ({label}) (avg_over_time({series}[{window}]))", utilization),
        ):
            for result in prometheus.query_range(query, start=chunk_first, end=chunk_last, step_s=step_s):
                value = str((result.get("metric") or {}).get(label, ""))
                if not value:
                    continue  # GPUs no team holds (the label is absent)
                total = sum(float(point[1]) for point in result.get("values", []))
                into[value] = into.get(value, 0.0) + total * step_s
    return [
        TeamUsage(label_value=value, period_start=start, period_end=end, gpu_seconds=counts[value],
                  utilization_pct_seconds=utilization.get(value, 0.0))
        for value in sorted(counts)
        if counts[value] > 0
    ]


# --- the run ----------------------------------------------------------------------------------


@dataclass
class RunResult:
    stored: int = 0
    replayed: int = 0
    refused: int = 0
    skipped: int = 0


def usage_body(usage: TeamUsage, *, team: str, pool: str, cluster: str, window: int | None = None) -> dict[str, Any]:
    """The body of `POST /api/v1/usage/` for one team's period."""
    return {
        "team": team,
        "pool": pool,
        "window": window,
        "period_start": usage.period_start.isoformat().replace("+00:00", "Z"),
        "period_end": usage.period_end.isoformat().replace("+00:00", "Z"),
        "gpu_hours_used": str(usage.gpu_hours),
        "mean_utilization_pct": str(usage.mean_utilization_pct),
        "mean_queue_wait_minutes": "0",
        "idempotency_key": idempotency_key(cluster=cluster, pool=pool, team=team, start=usage.period_start,
                                           end=usage.period_end),
    }


def window_for(windows: Sequence[DesiredWindow], *, team: str, pool: str, start: datetime,
               end: datetime) -> int | None:
    """The team's window on the pool that holds most GPU-hours of [start, end) (the lowest id on a tie), if any."""
    best: tuple[float, int] | None = None
    for window in windows:
        if window.team != team or window.pool != pool:
            continue
        overlap = (min(end, window.end) - max(start, window.start)).total_seconds()
        if overlap <= 0:
            continue
        rank = (-overlap * window.gpu_count, window.id)
        best = rank if best is None or rank < best else best
    return best[1] if best else None


def run(
    *,
    docket: DocketClient,
    prometheus: Prometheus,
    pool: str,
    label: str,
    team_map: Mapping[str, str],
    windows: Sequence[DesiredWindow] = (),
    selector: str,
    since: datetime,
    until: datetime,
    period: timedelta,
    step_s: int,
    dry_run: bool,
    out: TextIO,
) -> RunResult:
    """Measure every period in [since, until) and post one report per team and period (print them in a dry run)."""
    result = RunResult()
    unmapped: set[str] = set()
    for start, end in periods(since, until, period):
        by_team: dict[str, TeamUsage] = {}
        for usage in measure(prometheus, label=label, selector=selector, start=start, end=end, step_s=step_s):
            team = team_map.get(usage.label_value)
            if team is None:
                unmapped.add(usage.label_value)
                result.skipped += 1
                continue
            by_team[team] = usage if team not in by_team else by_team[team].plus(usage)
        for team, usage in sorted(by_team.items()):
            body = usage_body(usage, team=team, pool=pool, cluster=docket.cluster,
                              window=window_for(windows, team=team, pool=pool, start=start, end=end))
            in_window = f" in window {body['window']}" if body["window"] else ""
            line = (f"{start:%Y-%m-%d %H:%M}–{end:%Y-%m-%d %H:%M} {team}{in_window} ({label}={usage.label_value}): "
                    f"{body['gpu_hours_used']} GPU-h ({usage.gpu_seconds:.0f} GPU-seconds) at "
                    f"{body['mean_utilization_pct']}%")
            if dry_run:
                print(f"would post {line}: {json.dumps(body)}", file=out)
                continue
            try:
                posted = docket.post_usage(body)
            except DocketError as exc:
                if exc.status in (400, 409):
                    print(f"refused {line}: {exc}", file=out)
                    result.refused += 1
                    continue
                raise
            if posted.replayed:
                result.replayed += 1
                print(f"already stored {line} (record {posted.record.get('id')})", file=out)
            else:
                result.stored += 1
                print(f"stored {line} (record {posted.record.get('id')})", file=out)
    for value in sorted(unmapped):
        print(f"skipped {label}={value}: it maps to no Docket team (--team-map or --team-accounts)", file=out)
    print(f"{result.stored} stored, {result.replayed} already stored, {result.refused} refused, "
          f"{result.skipped} skipped", file=out)
    return result


def accounts_map(windows: Sequence[DesiredWindow]) -> dict[str, str]:
    """Each team's account on the cluster → its slug, from the cluster's windows."""
    return {window.account: window.team for window in windows if window.account}


# --- command line ---------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="docket-prometheus-usage",
        description="Post each team's GPU-hours and mean utilization on a pool to Docket, from DCGM metrics.",
    )
    add_docket_options(parser)
    parser.add_argument("--pool", required=True, help="the pool's slug in Docket that these GPUs belong to")
    parser.add_argument("--prometheus", required=True, help="Prometheus's base URL, e.g. http://prometheus:9090")
    parser.add_argument("--label", default="namespace", type=_label,
                        help="the metric's label that names the team holding a GPU (namespace)")
    parser.add_argument("--team-map", action="append", default=[], metavar="VALUE=TEAM", type=pair("VALUE=TEAM"),
                        help="the label value VALUE is Docket team TEAM (repeat it; VALUE=VALUE for the same name)")
    parser.add_argument("--team-accounts", action="store_true",
                        help="label values are the teams' accounts on the cluster (read from Docket's windows)")
    parser.add_argument("--selector", default="",
                        help="PromQL label matchers picking the pool's GPUs, e.g. 'modelName=~\".*A100.*\"'")
    parser.add_argument("--metric", default=METRIC, help=f"the utilization metric ({METRIC})")
    parser.add_argument("--period", type=positive_int, default=3600, metavar="SECONDS",
                        help="the length of one report (3600); periods are aligned to multiples of it")
    parser.add_argument("--step", type=positive_int, default=60, metavar="SECONDS",
                        help="the resolution (60); at least the exporter's scrape interval, and dividing --period")
    parser.add_argument("--since", type=instant,
                        help="the first period starts at or after this (ISO 8601 with offset)")
    parser.add_argument("--until", type=instant,
                        help="the last period ends at or before this (default: now minus --delay)")
    parser.add_argument("--delay", type=positive_int, default=120, metavar="SECONDS",
                        help="without --until, leave the last this many seconds for late scrapes (120)")
    parser.add_argument("--no-windows", action="store_true",
                        help="post reports without a window (default: the team's window on the pool that overlaps "
                             "the period most, from Docket's windows API)")
    parser.add_argument("--dry-run", action="store_true", help="print the reports; post nothing")
    return parser


def _label(text: str) -> str:
    if not _LABEL.match(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a Prometheus label name")
    return text





def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None, now: datetime | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.period % args.step:
        parser.error(f"--step {args.step} must divide --period {args.period}")
    if not args.team_map and not args.team_accounts:
        parser.error("say how label values become teams: --team-map VALUE=TEAM or --team-accounts")
    period = timedelta(seconds=args.period)
    until = args.until or (now or datetime.now(UTC)) - timedelta(seconds=args.delay)
    since = args.since or datetime.fromtimestamp(math.floor(until.timestamp() / args.period) * args.period, UTC) \
        - period
    if since >= until:
        parser.error("--since must be before --until")
    docket = docket_client(parser, args)
    try:
        prometheus = Prometheus(args.prometheus)
    except PrometheusError as exc:
        parser.error(str(exc))
    stream = output(out)
    try:
        windows: list[DesiredWindow] = []
        if args.team_accounts or not args.no_windows:
            snapshot = docket.fetch_windows(ends_after=since)  # every window that overlaps a period, and more
            windows = snapshot.windows if snapshot else []
        team_map = accounts_map(windows) if args.team_accounts else {}
        team_map.update(dict(args.team_map))
        result = run(docket=docket, prometheus=prometheus, pool=args.pool, label=args.label, team_map=team_map,
                     windows=[] if args.no_windows else windows, selector=args.selector, since=since, until=until,
                     period=period, step_s=args.step, dry_run=args.dry_run, out=stream)
    except (DocketError, PrometheusError) as exc:
        print(f"usage collection failed: {exc}", file=stream)
        return 2
    return 1 if result.refused else 0


if __name__ == "__main__":
    sys.exit(main())
