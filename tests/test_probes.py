"""/healthz and /readyz, as a load balancer or a kubelet asks them.

The broker and the cache are a private redis-server the test starts; "hung" is that server stopped
with SIGSTOP, so it still accepts connections (the kernel does) and never answers.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from tests.processes import Redis, redis_server


def probe(path: str, **extra: Any) -> tuple[int, dict[str, Any]]:
    response = Client().get(path, **extra)
    return response.status_code, json.loads(response.content)


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[Redis]:
    with redis_server(tmp_path / "redis") as server:
        yield server


def hung(server: Redis) -> Any:
    """While inside, the server is stopped (SIGSTOP): connections open, nothing answers."""

    class Hung:
        def __enter__(self) -> None:
            os.kill(server.process.pid, signal.SIGSTOP)

        def __exit__(self, *exc: object) -> None:
            os.kill(server.process.pid, signal.SIGCONT)

    return Hung()


def test_healthz_answers_without_the_database_whatever_the_host_and_scheme(settings):
    """No django_db mark: a query here would fail the test."""
    settings.SECURE_SSL_REDIRECT = True  # a probe over plain HTTP is not redirected
    status, body = probe("/healthz", HTTP_HOST="10.42.0.17:8000")  # a pod address, not in ALLOWED_HOSTS
    assert (status, body) == (200, {"status": "ok"})


@pytest.mark.django_db
def test_readyz_reports_each_dependency_ready(settings):
    settings.SECURE_SSL_REDIRECT = True
    status, body = probe("/readyz", HTTP_HOST="10.42.0.17:8000")
    assert status == 200 and body["status"] == "ready"
    assert set(body["checks"]) == {"database", "cache", "broker"}
    assert all(check["ok"] for check in body["checks"].values())
    assert body["checks"]["broker"]["detail"].startswith("eager")


def test_probes_only_answer_get_and_head():
    response = Client().post("/readyz")
    assert response.status_code == 405 and response["Allow"] == "GET, HEAD"


@pytest.mark.django_db
def test_readyz_fails_naming_the_broker_while_redis_hangs_and_recovers_after(settings, redis):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CELERY_BROKER_URL = redis.url
    settings.CELERY_BROKER_CONNECTION_TIMEOUT = 0.5

    assert probe("/readyz")[0] == 200
    with hung(redis):
        status, body = probe("/readyz")
    assert status == 503 and body["status"] == "not ready"
    assert not body["checks"]["broker"]["ok"] and "Timeout" in body["checks"]["broker"]["detail"]
    assert body["checks"]["database"]["ok"] and body["checks"]["cache"]["ok"]
    assert probe("/readyz")[0] == 200


@pytest.mark.django_db
def test_a_hung_cache_fails_readyz_within_its_socket_timeout(settings, redis):
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": redis.url,
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        }
    }
    assert probe("/readyz")[0] == 200
    with hung(redis):
        status, body = probe("/readyz")
    assert status == 503 and not body["checks"]["cache"]["ok"]
    assert body["checks"]["database"]["ok"]


@pytest.mark.django_db
def test_the_outbox_sees_a_hung_broker_as_absent(settings, redis):
    """It keeps the work for the relay instead of publishing to a server that will never answer."""
    from committee.outbox import broker_answers

    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CELERY_BROKER_URL = redis.url
    settings.CELERY_BROKER_CONNECTION_TIMEOUT = 0.5
    assert broker_answers()
    with hung(redis):
        assert not broker_answers()


@pytest.mark.django_db
def test_sign_in_works_while_the_cache_hangs_and_readyz_says_so(settings, redis, world):
    """The lockout counts in the database (django-axes), so a hung cache costs sign-in nothing."""
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": redis.url,
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        }
    }
    client = Client()
    with hung(redis):
        response = client.post("/accounts/login/", {"username": "lead_a", "password": "pw"})
        status, body = probe("/readyz")
    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/requests/").status_code == 200  # signed in
    assert status == 503 and not body["checks"]["cache"]["ok"]
