from __future__ import annotations

import pytest
from django.core.cache import cache
from django.test import override_settings
from django.urls import reverse


@pytest.fixture(autouse=True)
def _clear_cache():
    cache.clear()
    yield
    cache.clear()


@override_settings(LOGIN_FAILURE_LIMIT=3)
def test_repeated_failures_lock_the_account_even_with_the_right_password(client, world):
    for _ in range(3):
        response = client.post(reverse("login"), {"username": "lead_a", "password": "wrong"})
        assert response.status_code == 200
        assert b"Please enter a correct username and password" in response.content
    response = client.post(reverse("login"), {"username": "lead_a", "password": "pw"})
    assert response.status_code == 429
    assert b"Too many failed sign-ins" in response.content
    assert "_auth_user_id" not in client.session


@override_settings(LOGIN_FAILURE_LIMIT=3)
def test_success_before_the_limit_clears_the_count(client, world):
    for _ in range(2):
        client.post(reverse("login"), {"username": "lead_a", "password": "wrong"})
    response = client.post(reverse("login"), {"username": "lead_a", "password": "pw"})
    assert response.status_code == 302
    client.logout()
    for _ in range(2):
        client.post(reverse("login"), {"username": "lead_a", "password": "wrong"})
    assert client.post(reverse("login"), {"username": "lead_a", "password": "pw"}).status_code == 302
