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


@override_settings(DOCKET_TRUSTED_PROXY_COUNT=1, DOCKET_TRUSTED_PROXIES=["10.0.0.0/24"])
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


@override_settings(DOCKET_TRUSTED_PROXY_COUNT=1, DOCKET_TRUSTED_PROXIES=["10.0.0.0/24"])
def test_a_client_that_skips_the_proxy_cannot_choose_its_address(world):
    """gunicorn reached directly (the peer is no proxy): X-Forwarded-For is the client's word, not believed."""
    statuses = [sign_in("chair", "wrong", address="203.0.113.66", HTTP_X_FORWARDED_FOR=f"198.51.100.{n}").status_code
                for n in range(1, 11)]
    assert statuses == [200, 200] + [429] * 8
    assert sign_in("chair", "pw", address="203.0.113.66", HTTP_X_FORWARDED_FOR="198.51.100.99").status_code == 429
    assert list(AccessAttempt.objects.values_list("username", "ip_address")) == [("chair", "203.0.113.66")]


@override_settings(LOGIN_ADDRESS_FAILURE_LIMIT=7)
def test_one_address_guessing_at_many_accounts_is_paused_at_the_address_limit(world):
    """Password spraying: two guesses at each account (under the per-account 3) stop at 7 from the address."""
    names = ["chair", "lead_a", "member_a", "member_b"]
    statuses = [sign_in(name, "wrong", address="203.0.113.66").status_code for guess in (1, 2) for name in names]
    assert statuses == [200] * 6 + [429, 429]
    refused = sign_in("tech", "pw", address="203.0.113.66")
    assert refused.status_code == 429
    assert b"Sign-ins from your address failed 7 times, whatever the username" in refused.content
    assert sign_in("tech", "pw", address="198.51.100.7").status_code == 302  # elsewhere: not paused


@override_settings(LOGIN_ADDRESS_FAILURE_LIMIT=7)
def test_a_success_does_not_clear_the_address_count(world):
    """A valid account of the attacker's own must not buy more guesses at everyone else's."""
    for name in ["chair", "lead_a", "member_a"]:
        for _ in range(2):
            sign_in(name, "wrong", address="203.0.113.66")
    assert sign_in("member_b", "pw", address="203.0.113.66").status_code == 302
    assert sign_in("tech", "wrong", address="203.0.113.66").status_code == 429


@override_settings(LOGIN_ADDRESS_FAILURE_LIMIT=4)
def test_the_admin_lifts_an_address_lockout_by_deleting_its_rows(world):
    from django.contrib.auth.models import User

    for name in ["chair", "lead_a", "member_a", "member_b"]:
        sign_in(name, "wrong", address="203.0.113.66")
    assert sign_in("tech", "pw", address="203.0.113.66").status_code == 429
    admin = Client()
    admin.force_login(User.objects.create_superuser("root", "root@example.com", "rootpw-long-enough"))
    page = admin.get("/admin/axes/accessattempt/", {"q": "203.0.113.66"})
    assert page.status_code == 200 and page.content.count(b"203.0.113.66") >= 4
    rows = list(AccessAttempt.objects.filter(ip_address="203.0.113.66").values_list("pk", flat=True))
    response = admin.post("/admin/axes/accessattempt/", {"action": "delete_selected", "_selected_action": rows,
                                                          "post": "yes"})
    assert response.status_code == 302
    assert sign_in("tech", "pw", address="203.0.113.66").status_code == 302


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


PROXIES = ["10.0.0.0/24", "fd00::/64"]


@pytest.mark.parametrize(
    ("count", "proxies", "peer", "forwarded", "expected"),
    [(0, PROXIES, "10.0.0.2", "203.0.113.66", "10.0.0.2"),  # no proxy counted: the header is ignored
     (1, [], "10.0.0.2", "203.0.113.66", "10.0.0.2"),  # a count without networks: no peer is a proxy
     (1, PROXIES, "203.0.113.9", "203.0.113.66", "203.0.113.9"),  # the peer is no proxy: its own word
     (1, PROXIES, "10.0.0.2", "203.0.113.66", "203.0.113.66"),
     (1, PROXIES, "::ffff:10.0.0.2", "203.0.113.66", "203.0.113.66"),  # an IPv4-mapped peer
     (1, PROXIES, "fd00::5", "2001:db8::1", "2001:db8::1"),
     (1, PROXIES, "10.0.0.2", "1.2.3.4, 203.0.113.66", "203.0.113.66"),
     (2, PROXIES, "10.0.0.2", "1.2.3.4, 203.0.113.66, 10.0.0.1", "203.0.113.66"),
     # The hop before the inner proxy is not a proxy: it is the client, whatever it wrote to its left.
     (2, PROXIES, "10.0.0.2", "1.2.3.4, 203.0.113.66", "203.0.113.66"),
     (2, PROXIES, "10.0.0.2", "10.0.0.1", "10.0.0.1"),  # fewer entries than proxies: the last trusted hop
     (1, PROXIES, "10.0.0.2", "not-an-address", "10.0.0.2"),
     (2, PROXIES, "10.0.0.2", "not-an-address, 10.0.0.1", "10.0.0.1"),
     (1, PROXIES, "10.0.0.2", "", "10.0.0.2"),
     (1, [], "", "203.0.113.66", "203.0.113.66"),  # gunicorn on a Unix socket: the peer has no address
     (0, [], "", "203.0.113.66", ""),
     (1, PROXIES, "10.0.0.2", " 2001:db8::1 ", "2001:db8::1")],
)
def test_client_address(settings, count, proxies, peer, forwarded, expected):
    settings.DOCKET_TRUSTED_PROXY_COUNT = count
    settings.DOCKET_TRUSTED_PROXIES = proxies
    request = RequestFactory().get("/", REMOTE_ADDR=peer, HTTP_X_FORWARDED_FOR=forwarded)
    assert client_address(request) == expected
