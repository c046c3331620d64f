"""Sentry: with SENTRY_DSN set, a view's error arrives at the DSN's server as an envelope; without it, no sentry_sdk.

The "Sentry" is a small HTTP server this test starts on a free port; the Docket process is a child
(tests.settings, SENTRY_DSN pointing at that server) that serves one failing request through Django's
test client and flushes. sentry-sdk sends over real HTTP, so this is a round trip.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.processes import ROOT, app_env

CHILD = """
import django
django.setup()
from django.test import Client, override_settings
import sentry_sdk
with override_settings(ROOT_URLCONF="tests.sentry_site.urls"):
    response = Client(raise_request_exception=False).get("/sentry-test-failure/", HTTP_X_REQUEST_ID="req-sentry-1")
print(response.status_code, response["X-Request-ID"])
sentry_sdk.flush(timeout=10)
"""


class Collector(ThreadingHTTPServer):
    envelopes: list[tuple[str, list[dict[str, Any]]]]


class Handler(BaseHTTPRequestHandler):
    server: Collector

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        encoding = self.headers.get("Content-Encoding")
        if encoding == "gzip":
            body = gzip.decompress(body)
        elif encoding == "br":  # sentry-sdk compresses with brotli when the brotli package is installed
            import brotli  # type: ignore[import-not-found,unused-ignore]

            body = brotli.decompress(body)
        items = [json.loads(line) for line in body.splitlines() if line.strip().startswith(b"{")]
        self.server.envelopes.append((self.path, items))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def sentry_server() -> Iterator[Collector]:
    server = Collector(("127.0.0.1", 0), Handler)
    server.envelopes = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def run_child(code: str, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = app_env(f"sqlite:///{tmp_path / 'db.sqlite3'}")
    environment.pop("SENTRY_DSN", None)  # only what the test says
    environment.update(env)
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environment, capture_output=True, text=True,
                          timeout=120, check=False)


def test_a_views_error_arrives_at_sentry_with_the_release_and_no_personal_data(sentry_server, tmp_path):
    port = sentry_server.server_address[1]
    result = run_child(CHILD, tmp_path, SENTRY_DSN=f"http://publickey@127.0.0.1:{port}/42",
                       DOCKET_RELEASE="docket-2026.12.1", SENTRY_ENVIRONMENT="staging")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["500", "req-sentry-1"]
    events = [item for path, items in sentry_server.envelopes if path == "/api/42/envelope/"
              for item in items if "exception" in item]
    assert len(events) == 1, sentry_server.envelopes
    (event,) = events
    (exception,) = event["exception"]["values"]
    assert (exception["type"], exception["value"]) == ("RuntimeError", "the view failed on purpose for the Sentry test")
    assert (event["release"], event["environment"]) == ("docket-2026.12.1", "staging")
    assert event["tags"]["request_id"] == "req-sentry-1"
    assert "user" not in event or not event["user"].get("ip_address")
    assert "cookies" not in event.get("request", {})


def test_without_a_dsn_sentry_is_not_even_imported(tmp_path):
    result = run_child("import django, sys; django.setup(); print('sentry_sdk' in sys.modules)", tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
