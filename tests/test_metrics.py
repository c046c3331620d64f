"""/metrics: who may read it, what Docket's gauges say, and what a scrape costs the database."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from prometheus_client.parser import text_string_to_metric_families

from core.metrics import parse_networks
from tests.metrics_world import build_metrics_world

TOKEN = "metrics-token-for-tests-0123456789"


def samples(body: bytes) -> dict[str, float]:
    """'name{label="v",...}' -> value, labels sorted by name as Prometheus shows them."""
    out = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
            out[f"{sample.name}{{{labels}}}" if labels else sample.name] = sample.value
    return out


def scrape(**extra: Any) -> tuple[int, bytes]:
    response = Client().get("/metrics", **extra)
    return response.status_code, response.content


@pytest.mark.django_db
def test_metrics_answer_a_client_on_an_allowed_network_over_plain_http_whatever_the_host(settings):
    settings.SECURE_SSL_REDIRECT = True
    status, body = scrape(REMOTE_ADDR="127.0.0.1", HTTP_HOST="10.42.0.17:8000")
    assert status == 200
    found = samples(body)
    assert found["docket_metrics_database_up"] == 1
    assert "django_http_requests_before_middlewares_total" in body.decode()


@pytest.mark.django_db
@pytest.mark.parametrize("extra", [
    {"REMOTE_ADDR": "203.0.113.9"},  # the internet
    {"REMOTE_ADDR": "127.0.0.1", "HTTP_X_FORWARDED_FOR": "203.0.113.9"},  # the internet through a local proxy
    {"REMOTE_ADDR": "203.0.113.9", "HTTP_AUTHORIZATION": "Bearer wrong-token"},
    {"REMOTE_ADDR": "127.0.0.1", "HTTP_AUTHORIZATION": "Bearer wrong-token"},  # a wrong token is not let in by address
])
def test_metrics_are_not_found_by_anyone_else(settings, extra):
    settings.DOCKET_METRICS_TOKEN = TOKEN
    status, body = scrape(**extra)
    assert status == 404
    assert b"docket_" not in body


@pytest.mark.django_db
def test_a_bearer_token_opens_metrics_from_anywhere(settings):
    settings.DOCKET_METRICS_TOKEN = TOKEN
    status, body = scrape(REMOTE_ADDR="203.0.113.9", HTTP_X_FORWARDED_FOR="198.51.100.1",
                          HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
    assert status == 200 and b"docket_outbox_backlog" in body


@pytest.mark.django_db
def test_configured_networks_are_allowed_and_no_token_means_no_token_access(settings):
    settings.DOCKET_METRICS_ALLOWED_NETWORKS = ["10.0.0.0/8", "fd00::/8"]
    assert scrape(REMOTE_ADDR="10.1.2.3")[0] == 200
    assert scrape(REMOTE_ADDR="fd00::5")[0] == 200
    assert scrape(REMOTE_ADDR="127.0.0.1")[0] == 404
    assert scrape(REMOTE_ADDR="11.0.0.1", HTTP_AUTHORIZATION="Bearer ")[0] == 404


def test_a_malformed_network_is_refused_naming_the_variable():
    from django.core.exceptions import ImproperlyConfigured

    with pytest.raises(ImproperlyConfigured, match=re.escape("DOCKET_METRICS_ALLOWED_NETWORKS: '10.0.0.300/8'")):
        parse_networks("DOCKET_METRICS_ALLOWED_NETWORKS", ["10.0.0.300/8"])


def test_the_settings_refuse_a_malformed_network(monkeypatch):
    import subprocess
    import sys

    from tests.processes import ROOT

    result = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"], cwd=ROOT, capture_output=True, text=True,
        env={"PATH": "/usr/bin:/bin", "DJANGO_SETTINGS_MODULE": "tests.settings",
             "DOCKET_METRICS_ALLOWED_NETWORKS": "127.0.0.1/32,not-a-network"},
        timeout=60, check=False,
    )
    assert result.returncode != 0
    assert "DOCKET_METRICS_ALLOWED_NETWORKS: 'not-a-network' is not a network" in result.stderr


@pytest.mark.django_db
def test_docket_gauges_say_what_the_database_holds(world, settings):
    settings.DOCKET_RELEASE = "2026.12.1"
    expected = build_metrics_world(world)
    status, body = scrape(REMOTE_ADDR="127.0.0.1")
    assert status == 200
    found = samples(body)
    for name, value in expected.items():
        assert found.get(name) == pytest.approx(value, abs=60), name  # the pinned clock ticks
    assert 'docket_usage_report_age_seconds{cluster="orion"}' not in found  # never reported
    assert 'docket_windows_next_start_seconds{state="short"}' not in found
    assert found['docket_build_info{django="5.2.19",version="2026.12.1"}'] == 1


@pytest.mark.django_db
def test_a_scrape_costs_the_same_queries_with_one_row_or_many(world):
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert scrape(REMOTE_ADDR="127.0.0.1")[0] == 200
        return len(captured)

    few = queries()
    build_metrics_world(world)
    assert queries() == few <= 6
