"""Failed sign-ins lock only that username from that client (django-axes, docs/security.md).

The limit is 3 here; the window is LOGIN_FAILURE_WINDOW_SECONDS (15 minutes by default).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from axes.models import AccessAttempt
from django.test import Client, RequestFactory, override_settings
from django.urls import reverse

from core.client import client_address

pytestmark = pytest.mark.usefixtures("limit_three")

LOCKED = b"Sign-in paused"
WRONG = b"Please enter a correct username and password"


@pytest.fixture
def limit_three(settings: Any) -> None:
    settings.LOGIN_FAILURE_LIMIT = settings.AXES_FAILURE_LIMIT = 3


def sign_in(username: str, password: str, *, address: str = "198.51.100.7", client: Client | None = None,
            **headers: Any) -> Any:
    return (client or Client()).post(reverse("login"), {"username": username, "password": password},
                                     REMOTE_ADDR=address, **headers)


def test_repeated_failures_lock_the_username_even_with_the_right_password(world):
    for _ in range(2):
        response = sign_in("lead_a", "wrong")
        assert response.status_code == 200 and WRONG in response.content
    third = sign_in("lead_a", "wrong")
    assert third.status_code == 429 and LOCKED in third.content
    client = Client()
    response = sign_in("lead_a", "pw", client=client)
    assert response.status_code == 429
    assert LOCKED in response.content and b"Try again in 15 minutes." in response.content
    assert response["Retry-After"] == "900"
    assert b'<nav' in response.content  # the site's layout, not a bare message
    assert "_auth_user_id" not in client.session


def test_a_lockout_holds_only_that_username_from_that_address(world):
    for _ in range(3):
        sign_in("chair", "wrong", address="203.0.113.66")
    assert sign_in("chair", "pw", address="203.0.113.66").status_code == 429
    # The chair, from the office: not locked out by someone elsewhere trying the chair's username.
    assert sign_in("chair", "pw", address="198.51.100.7").status_code == 302
    # Someone else at the attacker's address is not locked out either.
    assert sign_in("lead_a", "pw", address="203.0.113.66").status_code == 302


def test_spellings_of_a_username_count_together(world):
    for spelling in ("Chair", "CHAIR ", "chair"):
        sign_in(spelling, "wrong")
    assert sign_in("chair", "pw").status_code == 429


def test_someone_elses_success_does_not_reset_the_count(world):
    """One valid account must not buy an attacker more guesses at the chair's password."""
    for _ in range(2):
        sign_in("chair", "wrong", address="203.0.113.66")
    assert sign_in("lead_a", "pw", address="203.0.113.66").status_code == 302
    assert sign_in("chair", "wrong", address="203.0.113.66").status_code == 429
    assert sign_in("chair", "pw", address="203.0.113.66").status_code == 429


def test_success_before_the_limit_clears_the_own_count(world):
    for _ in range(2):
        sign_in("lead_a", "wrong")
    assert sign_in("lead_a", "pw").status_code == 302
    for _ in range(2):
        sign_in("lead_a", "wrong")
    assert sign_in("lead_a", "pw").status_code == 302


def test_the_lockout_ends_after_the_window(world, clock):
    for _ in range(3):
        sign_in("lead_a", "wrong")
    clock.shift(timedelta(minutes=14))
    assert sign_in("lead_a", "pw").status_code == 429
    clock.shift(timedelta(minutes=2))
    assert sign_in("lead_a", "pw").status_code == 302


def test_the_admin_login_is_the_same_counted_page(world):
    response = Client().get("/admin/login/?next=/admin/")
    assert response.status_code == 302 and response["Location"] == "/accounts/login/?next=/admin/"


@override_settings(DOCKET_TRUSTED_PROXY_COUNT=1)
def test_behind_one_proxy_the_client_is_the_forwarded_address(world):
    """Every request comes from the proxy (10.0.0.2); the proxy appends the client's address."""
    proxy = "10.0.0.2"
    for _ in range(3):
        sign_in("chair", "wrong", address=proxy, HTTP_X_FORWARDED_FOR="203.0.113.66")
    assert sign_in("chair", "pw", address=proxy, HTTP_X_FORWARDED_FOR="203.0.113.66").status_code == 429
    # A made-up X-Forwarded-For from the attacker is left of what the proxy appended: it changes nothing.
    assert sign_in("chair", "pw", address=proxy, HTTP_X_FORWARDED_FOR="198.51.100.7, 203.0.113.66").status_code == 429
    # The chair, through the same proxy from another client, signs in.
    assert sign_in("chair", "pw", address=proxy, HTTP_X_FORWARDED_FOR="198.51.100.7").status_code == 302
    assert list(AccessAttempt.objects.values_list("username", "ip_address")) == [("chair", "203.0.113.66")]


def test_lockouts_show_in_the_admin_and_deleting_one_lifts_it(world):
    from django.contrib.auth.models import User

    for _ in range(3):
        sign_in("chair", "guess-1234", address="203.0.113.66")
    admin = Client()
    admin.force_login(User.objects.create_superuser("root", "root@example.com", "rootpw-long-enough"))
    page = admin.get("/admin/axes/accessattempt/")
    assert page.status_code == 200 and b"203.0.113.66" in page.content and b"chair" in page.content
    attempt = AccessAttempt.objects.get(username="chair")
    assert attempt.failures_since_start == 3
    assert "guess-1234" not in attempt.post_data  # axes keeps the form, never the password
    response = admin.post("/admin/axes/accessattempt/", {"action": "delete_selected", "_selected_action": [attempt.pk],
                                                          "post": "yes"})
    assert response.status_code == 302
    assert sign_in("chair", "pw", address="203.0.113.66").status_code == 302


@pytest.mark.parametrize(
    ("count", "forwarded", "expected"),
    [(0, "203.0.113.66", "10.0.0.2"),  # no proxy trusted: the header is the client's word, ignored
     (1, "203.0.113.66", "203.0.113.66"),
     (1, "1.2.3.4, 203.0.113.66", "203.0.113.66"),
     (2, "1.2.3.4, 203.0.113.66, 10.0.0.1", "203.0.113.66"),
     (2, "203.0.113.66", "203.0.113.66"),  # fewer entries than proxies: the leftmost
     (1, "not-an-address", "10.0.0.2"),
     (1, "", "10.0.0.2"),
     (1, " 2001:db8::1 ", "2001:db8::1")],
)
def test_client_address(settings, count, forwarded, expected):
    settings.DOCKET_TRUSTED_PROXY_COUNT = count
    request = RequestFactory().get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR=forwarded)
    assert client_address(request) == expected
