"""The API's rate limits: per scheduler token and per person, 429 with Retry-After and a JSON detail."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from committee.services import personal_token_create
from tests.allocations.plans import bearer, token_for

WINDOWS = "/api/v1/windows/"
CYCLES = "/api/v1/cycles/"


@pytest.fixture(autouse=True)
def low_rates(settings: Any) -> None:
    cache.clear()
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK,
                               "DEFAULT_THROTTLE_RATES": {"scheduler": "3/minute", "user": "2/minute"}}


def scheduler_get(token: str) -> Any:
    return APIClient().get(WINDOWS, {"cluster": "atlas"}, **bearer(token))


def test_a_scheduler_token_over_its_rate_gets_429_with_retry_after(world):
    token = token_for(world.atlas)
    assert [scheduler_get(token).status_code for _ in range(3)] == [200, 200, 200]
    refused = scheduler_get(token)
    assert refused.status_code == 429
    assert refused["Content-Type"] == "application/json"
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert refused.json()["detail"].startswith("Request was throttled.")


def test_each_scheduler_token_counts_alone(world):
    first, second = token_for(world.atlas, "sync"), token_for(world.atlas, "kueue")
    for _ in range(3):
        scheduler_get(first)
    assert scheduler_get(first).status_code == 429
    assert scheduler_get(second).status_code == 200


def test_the_rate_frees_up_after_its_period(world, clock):
    token = token_for(world.atlas)
    for _ in range(3):
        scheduler_get(token)
    assert scheduler_get(token).status_code == 429
    clock.shift(timedelta(seconds=61))
    assert scheduler_get(token).status_code == 200


def test_a_person_counts_once_across_tokens_and_session(world):
    _row, one = personal_token_create(user=world.member_a, name="one")
    _row, two = personal_token_create(user=world.member_a, name="two")
    assert APIClient().get(CYCLES, HTTP_AUTHORIZATION=f"Token {one}").status_code == 200
    assert APIClient().get(CYCLES, HTTP_AUTHORIZATION=f"Token {two}").status_code == 200
    refused = APIClient().get(CYCLES, HTTP_AUTHORIZATION=f"Token {one}")
    assert refused.status_code == 429 and "Retry-After" in refused
    session = APIClient()
    session.force_authenticate(world.member_a)
    assert session.get(CYCLES).status_code == 429
    # Someone else is not held up by member_a's scripts.
    _row, other = personal_token_create(user=world.member_b, name="one")
    assert APIClient().get(CYCLES, HTTP_AUTHORIZATION=f"Token {other}").status_code == 200


def test_people_and_schedulers_have_their_own_rates(world):
    token = token_for(world.atlas)
    _row, personal = personal_token_create(user=world.member_a, name="one")
    for _ in range(2):
        APIClient().get(CYCLES, HTTP_AUTHORIZATION=f"Token {personal}")
    assert APIClient().get(CYCLES, HTTP_AUTHORIZATION=f"Token {personal}").status_code == 429
    assert scheduler_get(token).status_code == 200  # 3 a minute for the scheduler, counted apart


def test_a_cache_that_does_not_answer_lets_requests_through_and_says_so(world, settings, caplog):
    """Redis gone (a port nothing listens on, a real Redis client): the scheduler still gets its windows."""
    from tests.processes import free_port

    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache",
                                   "LOCATION": f"redis://127.0.0.1:{free_port()}/0",
                                   "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5}}}
    token = token_for(world.atlas)
    with caplog.at_level("WARNING", logger="core.throttling"):
        assert [scheduler_get(token).status_code for _ in range(5)] == [200] * 5
    assert "API rate limit scheduler not applied: the cache did not answer" in caplog.text
