"""A private Prometheus (Debian's `prometheus`) for the tests that need one, and its query API.

Each server gets its own config, data folder and free port on 127.0.0.1; it is a child process
whose pid the test holds, stopped by that pid (TERM, then KILL) when the block ends, also when the
test fails. History can be loaded before it starts with `backfill` (promtool's OpenMetrics import).
Locally a missing `prometheus` skips; in CI (CI=true) it fails.

Facts these rely on (../shared/notes/integration-lab.md, Prometheus 2.42 here): `/-/ready` answers
about 0.1 s after start, but a scrape's first sample is queryable only 5 to 6 s later (poll for
it); backfilled blocks copied into the data folder before the start are queryable at once; the
retention is measured from the newest block, so it is set long for history far from the real day.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.processes import free_port, log_tail, require_tool, stop, wait_until

PROMETHEUS = "/usr/bin/prometheus"
PROMTOOL = "/usr/bin/promtool"


@dataclass
class PrometheusServer:
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def query(self, promql: str) -> list[dict[str, Any]]:
        """An instant query's result vector."""
        url = f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': promql})}"
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 (loopback)
            body = json.load(response)
        assert body["status"] == "success", body
        return list(body["data"]["result"])

    def value(self, promql: str) -> float | None:
        result = self.query(promql)
        return float(result[0]["value"][1]) if result else None

    def now(self) -> float:
        """Prometheus's own clock (`time()`), in seconds: it stamps the samples it scrapes. Under `make test-at` it
        differs from the test's machine clock: libfaketime does not reach a Go program's clock."""
        url = f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': 'time()'})}"
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 (loopback)
            body = json.load(response)
        assert body["status"] == "success", body
        return float(body["data"]["result"][1])

    def ready(self) -> bool:
        if self.process.poll() is not None:
            raise AssertionError(f"prometheus exited with {self.process.returncode}:\n{log_tail(self.log)}")
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as response:  # noqa: S310 (loopback)
                return int(response.status) == 200
        except OSError:
            return False


def backfill(openmetrics: str, data_dir: Path) -> None:
    """Write `openmetrics` (text ending in `# EOF`, timestamps in seconds) as TSDB blocks into `data_dir`."""
    require_tool(PROMTOOL, "promtool (apt-get install prometheus)")
    data_dir.mkdir(parents=True, exist_ok=True)
    source = data_dir.parent / "backfill.om"
    source.write_text(openmetrics)
    result = subprocess.run([PROMTOOL, "tsdb", "create-blocks-from", "openmetrics", str(source), str(data_dir)],
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]


@contextlib.contextmanager
def prometheus(folder: Path, config: str) -> Iterator[PrometheusServer]:
    """Run Prometheus with `config` (prometheus.yml text) and the data in `folder`/data until the block ends."""
    require_tool(PROMETHEUS, "prometheus (apt-get install prometheus)")
    (folder / "prometheus.yml").write_text(config)
    port = free_port()
    log = folder / "prometheus.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [PROMETHEUS, f"--config.file={folder / 'prometheus.yml'}", f"--storage.tsdb.path={folder / 'data'}",
             f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=100y"],
            cwd=folder, stdout=sink, stderr=subprocess.STDOUT,
        )
    server = PrometheusServer(url=f"http://127.0.0.1:{port}", process=process, log=log)
    try:
        wait_until(server.ready, timeout=30, what=lambda: f"Prometheus ready:\n{log_tail(log)}", interval=0.1)
        yield server
    finally:
        stop(process)
