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
        assert not broker_answers()  # waits out the timeout once
        assert not broker_answers(skip_while_open=True)  # a request's hand-over then does not ask at all
    assert broker_answers(skip_while_open=True) is False  # not for a while, even though Redis answers again
    assert broker_answers()  # the relay job asks, and closes the breaker
    assert broker_answers(skip_while_open=True)


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


@pytest.mark.django_db
def test_the_windows_api_and_healthz_answer_while_the_cache_hangs_after_one_timeout_the_breaker_skips_it(
        settings, redis, world):
    """The rate limit counts in the cache; a hung cache costs the first request its socket timeout, then none."""
    from core import breaker
    from tests.allocations.plans import W, bearer, publish, this_week, token_for

    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": redis.url,
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        }
    }
    week = this_week()
    publish([W(world.a100, world.team_a, 16, 8, 56, ref=1)], week=week)
    token = bearer(token_for(world.atlas))
    client = Client()
    url = f"/api/v1/windows/?cluster=atlas&week={week}"
    assert client.get(url, **token).status_code == 200 and not breaker.CACHE.is_open
    with hung(redis):
        first = client.get(url, **token)  # waits out the cache's timeout once
        assert breaker.CACHE.is_open
        second = client.get(url, **token)  # the cache is not asked
        healthz = probe("/healthz")
        ready = probe("/readyz")  # asks the cache itself, whatever the breaker says
    assert first.status_code == second.status_code == 200
    assert [w["request_id"] for w in second.json()["results"]] == [1] and second.content == first.content
    assert healthz == (200, {"status": "ok"})
    assert ready[0] == 503 and not ready[1]["checks"]["cache"]["ok"]
    assert probe("/readyz")[0] == 200 and not breaker.CACHE.is_open  # Redis answers again: the breaker closes


def test_an_open_breaker_lets_one_caller_try_again_after_its_time(monkeypatch):
    from core import breaker

    now = [1000.0]
    monkeypatch.setattr(breaker.time, "monotonic", lambda: now[0])
    cache = breaker.CircuitBreaker("test", open_seconds=30)
    assert cache.allows()
    cache.failed(TimeoutError("timed out"))
    assert not cache.allows()
    now[0] += 29.9
    assert not cache.allows()
    now[0] += 0.2
    assert cache.allows()  # one caller tries
    assert not cache.allows()  # the others keep skipping while it does
    cache.succeeded()
    assert cache.allows() and not cache.is_open
