"""Pollers never see half a plan, under load, against a real server while versions are published.

The bounded CI version of bench/load_during_publish.py (docs/benchmarks.md, "Load during
publish"): gunicorn (3 sync workers) on the test's PostgreSQL database, a publisher process
publishing the next plan version through `plan_publish` every second, and 50 concurrent
pollers on the windows list for 10 s. Every 200 is compared with the database after the run.
No timing is asserted: only that nothing failed and no response mixed or missed windows.
"""

from __future__ import annotations

import pytest
from django.db import connection

from bench.load_during_publish import LoadResult, published_during, run_load, seed, start_publisher, verify
from tests.conftest import require
from tests.processes import app_env, database_url, gunicorn, log_tail, stop

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_fifty_pollers_see_only_whole_plan_versions_while_versions_are_published(tmp_path):
    require(connection.vendor == "postgresql", "PostgreSQL (run with DATABASE_URL=postgres://…)")
    token = seed()
    env = app_env(database_url(connection.settings_dict), DATABASE_CONN_MAX_AGE="60")
    with gunicorn(env, log_dir=tmp_path, workers=3, timeout=60) as server:
        publisher = start_publisher(env, log=tmp_path / "publisher.log", every=1.0, duration=40)
        try:
            result = run_load(server.url, token, pollers=50, duration=10, timeout=30)
        finally:
            stop(publisher)
    published = published_during(tmp_path / "publisher.log")
    verdict = verify(result)

    assert result.error_count == 0, (dict(result.errors), log_tail(server.log))
    assert verdict.incomplete == 0, verdict.problems
    assert result.ok_200 > 0 and verdict.bodies_checked > 0
    assert len(published) >= 3, published  # versions were published while the pollers polled
    assert len(verdict.versions_seen) >= 2, verdict.versions_seen  # and the pollers saw them change


    # The check is not vacuous: a body of version 2 holding version 1's windows would be caught.
    (first, cursor_1, ids_1), *_ = sorted(result.bodies)
    tampered = LoadResult(pollers=1, seconds=1)
    tampered.bodies[(first + 1, cursor_1 + 1, ids_1)] += 1
    assert verify(tampered).incomplete == 1
