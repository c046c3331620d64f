"""PostgreSQL goes away during a save: the person gets a clear 503 page, and nothing is half-written.

Each test here runs Docket (gunicorn) against a PostgreSQL cluster of its own: initdb in a
temporary folder, served on 127.0.0.1 and a free port, stopped and started by the pid in its
postmaster.pid; never the machine's own server. The HTTP client is a plain urllib opener with a
cookie jar: a signed-in person posting the real forms. gunicorn keeps its database connections
(DATABASE_CONN_MAX_AGE=60), so the saves after the restart also show that each worker checks a
kept connection before using it (DATABASE_CONN_HEALTH_CHECKS) instead of failing one request.
"""

from __future__ import annotations

import http.cookiejar
import json
import re
import subprocess
import sys
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any

import psycopg
import pytest
from django.utils import timezone

from tests.clock import child_env
from tests.processes import ROOT, PrivatePostgres, app_env, gunicorn, log_tail, stop, wait_until

pytestmark = [pytest.mark.postgres]

MESSAGE = "The database is not reachable right now"
EVIDENCE_TABLES = ("committee_gpurequest", "committee_usagereport", "committee_impactforecast",
                   "committee_alternative", "committee_requestevent")


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class Person:
    """A signed-in person's browser, without the browser: cookies, CSRF token, form posts."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.cookies = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.cookies), NoRedirect)

    def request(self, path: str, data: dict[str, Any] | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
        body = None
        if data is not None:
            csrf = next(cookie.value for cookie in self.cookies if cookie.name == "csrftoken")
            body = urllib.parse.urlencode({**data, "csrfmiddlewaretoken": csrf}).encode()
        request = urllib.request.Request(self.base_url + path, data=body, headers=headers or {})  # noqa: S310
        try:
            with self.opener.open(request, timeout=60) as response:
                return response.status, dict(response.headers), response.read().decode()
        except urllib.error.HTTPError as error:
            return error.code, dict(error.headers), error.read().decode()

    def sign_in(self, username: str) -> Person:
        self.request("/accounts/login/")
        status, _headers, _body = self.request("/accounts/login/", {"username": username, "password": "pw"})
        assert status == 302, f"signing in as {username} answered {status}"
        return self


def count_rows(url: str, tables: tuple[str, ...]) -> dict[str, int]:
    with psycopg.connect(url, connect_timeout=5) as connection:
        counts = {table: connection.execute(f"SELECT count(*) FROM {table}").fetchone()  # noqa: S608 (fixed names)
                  for table in tables}
    return {table: row[0] for table, row in counts.items() if row is not None}


@pytest.fixture(scope="module")
def docket(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimpleNamespace]:
    """Docket served by gunicorn on a private PostgreSQL cluster, seeded with the tests' world.

    The cluster is a copy of one migrated once per machine (PrivatePostgres.init_migrated). The seeding (the tests'
    world; `migrate` finds nothing left to do) and gunicorn's start (its workers load Docket) run at the same time;
    gunicorn counts as up once /healthz answers, which reads no database, so nothing asks for a table before it is
    made, and the tests start once both are done.
    """
    cluster = PrivatePostgres()
    seeding: subprocess.Popen[str] | None = None
    try:
        cluster.init_migrated("docket")
        cluster.start()
        env = app_env(cluster.url("docket"), DATABASE_CONN_MAX_AGE="60")
        seeding = subprocess.Popen([sys.executable, "-m", "tests.seed_private_db"], cwd=ROOT, env=child_env(env),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        with gunicorn(env, log_dir=tmp_path_factory.mktemp("gunicorn"), workers=2, ready_path="/healthz") as server:
            out, err = seeding.communicate(timeout=180)
            assert seeding.returncode == 0, err[-3000:]
            facts = json.loads(out.strip().splitlines()[-1])
            yield SimpleNamespace(cluster=cluster, server=server, url=cluster.url("docket"), **facts)
    finally:
        stop(seeding)
        cluster.cleanup()


def request_form(docket: SimpleNamespace, title: str) -> dict[str, str]:
    start = datetime.fromisoformat(docket.cycle_starts_at) + timedelta(hours=8)

    def local(value: datetime) -> str:
        return timezone.localtime(value).strftime("%Y-%m-%dT%H:%M")

    return {
        "team": str(docket.team_a), "title": title, "pool": str(docket.a100), "gpu_count": "16",
        "min_gpu_count": "8", "duration_hours": "48", "earliest_start": local(start),
        "latest_end": local(start + timedelta(hours=96)), "baseline_gpu_hours": "", "deadline": "",
        "slip_consequence": "", "usage-gpu_hours_granted": "800", "usage-gpu_hours_used": "400",
        "usage-mean_utilization_pct": "50", "usage-notes": "", "forecast-kind": "revenue",
        "forecast-estimated_value": "120000", "forecast-value_unit": "USD/week", "forecast-confidence": "high",
        "forecast-narrative": "Lift in conversion.", "alt-TOTAL_FORMS": "2", "alt-INITIAL_FORMS": "0",
        "alt-MIN_NUM_FORMS": "0", "alt-MAX_NUM_FORMS": "20",
        "alt-0-description": "Distilled ranker", "alt-0-gpu_hours": "300", "alt-0-feasible": "on",
        "alt-1-description": "bf16", "alt-1-gpu_hours": "600",
    }


def waiting_on(url: str, table: str) -> bool:
    with psycopg.connect(url, connect_timeout=5, autocommit=True) as connection:
        row = connection.execute(
            "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
            "WHERE NOT l.granted AND c.relname = %s", (table,)).fetchone()
        return bool(row and row[0])


def test_postgres_restarted_in_the_middle_of_a_request_save_writes_nothing_and_says_so(docket):
    lead = Person(docket.server.url).sign_in("lead_a")
    assert lead.request("/requests/new/")[0] == 200
    before = count_rows(docket.url, EVIDENCE_TABLES)

    # Hold the table the save writes last, so the save stops half-way: the request row, its usage,
    # forecast and alternatives are written (uncommitted) and it waits to write its event row.
    holder = psycopg.connect(docket.url, connect_timeout=5)
    holder.execute("LOCK TABLE committee_requestevent IN ACCESS EXCLUSIVE MODE")
    answer: dict[str, Any] = {}
    saving = threading.Thread(target=lambda: answer.update(
        zip(("status", "headers", "body"), lead.request("/requests/new/", request_form(docket, "Mid-save restart")),
            strict=True)))
    saving.start()
    try:
        wait_until(lambda: waiting_on(docket.url, "committee_requestevent"), timeout=30,
                   what="the save waiting half-way on the held table")
        # Stopped as if it crashed: a fast shutdown lets the holder leave first and release the table, and the save
        # could then finish and commit before its own session is cut (a whole save, not the half-way one this is).
        docket.cluster.stop(immediate=True)
        docket.cluster.start()
    finally:
        saving.join(timeout=90)
        holder.close()
    assert not saving.is_alive()

    assert answer["status"] == 503, (answer["status"], answer["body"][:2000], log_tail(docket.server.log))
    assert MESSAGE in answer["body"] and "Nothing is ever half-saved" in answer["body"]
    assert answer["headers"]["Retry-After"] == "30"
    assert count_rows(docket.url, EVIDENCE_TABLES) == before  # no request row, no evidence rows

    # PostgreSQL is back: the same post saves all of it.
    status, headers, _body = lead.request("/requests/new/", request_form(docket, "Mid-save restart"))
    assert status == 302, log_tail(docket.server.log)
    assert "/accounts/login/" not in headers.get("Location", ""), "still signed in after the restart"
    after = count_rows(docket.url, EVIDENCE_TABLES)
    assert after == {**{table: before[table] + 1 for table in EVIDENCE_TABLES},
                     "committee_alternative": before["committee_alternative"] + 2}


def test_archive_save_and_api_while_postgres_is_down_answer_503_and_save_nothing(docket):
    reviewer = Person(docket.server.url).sign_in("reviewer")
    status, _headers, form = reviewer.request(f"/archive/{docket.page}/edit/")
    assert status == 200
    found = re.search(r'name="base_revision_id" value="(\d+)"', form)
    assert found is not None, "the edit form names its base revision"
    base = found[1]
    edit = {"title": "Charter", "body": "# Charter\n\nWe allocate by rubric, weekly.", "summary": "Weekly",
            "base_revision_id": base}
    before = count_rows(docket.url, ("reports_pagerevision",))

    docket.cluster.stop()
    try:
        status, headers, body = reviewer.request(f"/archive/{docket.page}/edit/", edit)
        assert status == 503 and MESSAGE in body and headers["Retry-After"] == "30", (status, body[:2000])
        assert 'id="database-unavailable"' in body and "Docket" in body  # Docket's own page, not a bare error
        status, headers, body = reviewer.request("/api/v1/windows/?cluster=atlas",
                                                 headers={"Authorization": f"Bearer {docket.token}"})
        assert status == 503 and headers["Content-Type"] == "application/json"
        assert MESSAGE in json.loads(body)["detail"]
    finally:
        docket.cluster.start()

    assert count_rows(docket.url, ("reports_pagerevision",)) == before
    status, _headers, _body = reviewer.request(f"/archive/{docket.page}/edit/", edit)
    assert status == 302  # the same edit, from the same base revision, saves once PostgreSQL is back
    assert count_rows(docket.url, ("reports_pagerevision",)) == {"reports_pagerevision":
                                                                 before["reports_pagerevision"] + 1}


def test_readyz_fails_while_postgres_is_stopped_and_healthz_does_not(docket):
    def get(path: str) -> tuple[int, dict[str, Any]]:
        status, _headers, body = Person(docket.server.url).request(path)
        return status, json.loads(body)

    assert get("/readyz")[0] == 200
    docket.cluster.stop()
    try:
        status, body = get("/readyz")
        assert status == 503 and not body["checks"]["database"]["ok"], body
        assert get("/healthz") == (200, {"status": "ok"})
    finally:
        docket.cluster.start()
    wait_until(lambda: get("/readyz")[0] == 200, timeout=30, what="/readyz ready again after PostgreSQL restarted")
