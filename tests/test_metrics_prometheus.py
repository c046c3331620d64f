"""A real Prometheus (Debian's `prometheus`) scrapes Docket's /metrics, and its query API answers Docket's gauges.

Prometheus runs with a private config, data folder and port (tests/prometheus.py), scraping pytest-django's
live server every second; it is stopped by its pid. The docs' alert rules are checked by promtool and loaded into the
same Prometheus, so a rule that does not parse, or names a gauge Docket does not have, fails here.
Locally a missing `prometheus` skips; in CI (CI=true) it fails.
"""

from __future__ import annotations

import re
import subprocess
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.metrics_world import build_metrics_world
from tests.processes import ROOT, log_tail, require_tool, wait_until
from tests.prometheus import PROMETHEUS, PROMTOOL, prometheus


def alert_rules_from_docs() -> str:
    """The YAML block under "Alerts" in docs/operations.md."""
    text = (ROOT / "docs" / "operations.md").read_text()
    match = re.search(r"<!-- alert-rules -->\s*```yaml\n(.*?)```", text, re.S)
    assert match, "docs/operations.md has no ```yaml block after <!-- alert-rules -->"
    return match.group(1)


def test_the_docs_alert_rules_pass_promtool(tmp_path: Path) -> None:
    require_tool(PROMTOOL, "promtool (apt-get install prometheus)")
    rules = tmp_path / "docket-alerts.yml"
    rules.write_text(alert_rules_from_docs())
    result = subprocess.run([PROMTOOL, "check", "rules", str(rules)], capture_output=True, text=True, timeout=60,
                            check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 4 rules found" in result.stdout


@pytest.mark.django_db(transaction=True)
def test_prometheus_scrapes_docket_and_answers_its_gauges(world: Any, live_server: Any, tmp_path: Path) -> None:
    require_tool(PROMETHEUS, "prometheus (apt-get install prometheus)")
    expected = build_metrics_world(world)
    target = live_server.url.removeprefix("http://")
    (tmp_path / "docket-alerts.yml").write_text(alert_rules_from_docs())
    config = (
        "global: {scrape_interval: 1s, scrape_timeout: 1s, evaluation_interval: 1s}\n"
        "rule_files: [docket-alerts.yml]\n"
        "scrape_configs:\n"
        "  - job_name: docket\n"
        "    metrics_path: /metrics\n"
        f"    static_configs: [{{targets: ['{target}']}}]\n"
    )
    with prometheus(tmp_path, config) as server:
        # Prometheus 2.42 takes its first sample about 5 s after it starts (target discovery is batched).
        wait_until(lambda: server.value('up{job="docket"}') == 1, timeout=40,
                   what=lambda: f"Prometheus scraping {target}:\n{log_tail(server.log)}", interval=0.5)
        wait_until(lambda: server.value("docket_outbox_backlog") is not None, timeout=20,
                   what="docket_outbox_backlog in Prometheus")
        for name, want in expected.items():
            got = server.value(name)
            assert got == pytest.approx(want, abs=60), f"{name}: Prometheus says {got}, the database {want}"
        # The rule built on the failing window fires: it starts in 2 h, and the rule looks 30 min ahead (not yet);
        # the backlog rule fires (the oldest message waits 15 min).
        wait_until(lambda: server.query('ALERTS{alertname="DocketOutboxBacklogOld"}'), timeout=20,
                   what="the DocketOutboxBacklogOld alert")
        assert not server.query('ALERTS{alertname="DocketWindowNotSyncedBeforeStart"}')


@pytest.mark.django_db(transaction=True)
def test_every_gunicorn_worker_answers_the_same_gauges(world: Any, tmp_path: Path) -> None:
    """Docket's gauges come from the database, so a scrape that reaches any of the workers reads the same."""
    from django.db import connection

    from tests.conftest import require
    from tests.processes import app_env, database_url, gunicorn

    require(connection.vendor == "postgresql", "PostgreSQL (run with DATABASE_URL=postgres://…)")
    expected = build_metrics_world(world)
    with gunicorn(app_env(database_url(connection.settings_dict)), log_dir=tmp_path, workers=2) as server:
        backlogs = set()
        for _ in range(12):
            with urllib.request.urlopen(server.url + "/metrics", timeout=10) as response:  # noqa: S310 (loopback)
                body = response.read().decode()
            match = re.search(r"^docket_outbox_backlog (\S+)$", body, re.M)
            assert match, body[-2000:]
            backlogs.add(float(match.group(1)))
    assert backlogs == {expected["docket_outbox_backlog"]}
