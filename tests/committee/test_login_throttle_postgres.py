"""Sign-in lockouts against a real server: concurrent guesses, and a real reverse proxy in front.

The first test: concurrent wrong passwords, no more than the limit are ever checked.

gunicorn (4 sync workers) on the test's PostgreSQL database; 24 sign-ins with a wrong password for
the chair's username, all sent at once from one client. django-axes checks the lockout before the
password and records the failure after it: without the per-pair lock in ThrottledLoginView, workers
pass the check together and check more passwords than the limit. Failures are only recorded for
passwords that were checked (a refused attempt records nothing), so the count is the number checked.
"""

from __future__ import annotations

import contextlib
import http.client
import http.cookiejar
import re
import subprocess
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from axes.models import AccessAttempt
from django.contrib.auth.models import User
from django.db import connection

from tests.conftest import require
from tests.processes import (
    app_env,
    database_url,
    free_port,
    gunicorn,
    http_status,
    log_tail,
    require_tool,
    stop,
    wait_until,
)

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

LIMIT = 5
ATTEMPTS = 24


def attempt(base_url: str, username: str, password: str) -> int:
    """One person's sign-in: fetch the form (CSRF cookie and token), post it; the status of the post."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    with opener.open(base_url + "/accounts/login/", timeout=60) as response:
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', response.read().decode())
    assert token is not None
    body = urllib.parse.urlencode({"username": username, "password": password,
                                   "csrfmiddlewaretoken": token.group(1)}).encode()

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener.add_handler(NoRedirect())
    try:
        with opener.open(urllib.request.Request(base_url + "/accounts/login/", data=body),  # noqa: S310
                         timeout=60) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def test_concurrent_wrong_passwords_check_no_more_than_the_limit(tmp_path):
    require(connection.vendor == "postgresql", "PostgreSQL (run with DATABASE_URL=postgres://…)")
    User.objects.create_user("chair", password="the-right-one")
    env = app_env(database_url(connection.settings_dict), LOGIN_FAILURE_LIMIT=str(LIMIT))
    with gunicorn(env, log_dir=tmp_path, workers=4, timeout=60) as server:
        statuses: list[int] = []
        start = threading.Barrier(ATTEMPTS)

        def guess() -> None:
            start.wait()
            statuses.append(attempt(server.url, "chair", "wrong"))

        threads = [threading.Thread(target=guess) for _ in range(ATTEMPTS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        after = attempt(server.url, "chair", "the-right-one")
    assert len(statuses) == ATTEMPTS, log_tail(server.log)
    checked = AccessAttempt.objects.get(username="chair").failures_since_start
    assert checked == LIMIT, (checked, sorted(statuses))
    assert sorted(statuses).count(200) == LIMIT - 1  # the last checked failure already answers the lockout page
    assert sorted(statuses).count(429) == ATTEMPTS - LIMIT + 1
    assert after == 429  # the right password is not checked either, from this client


# --- through a real reverse proxy --------------------------------------------------------------


NGINX_CONF = """
daemon off;
worker_processes 1;
pid {root}/nginx.pid;
error_log {root}/nginx-error.log warn;
events {{ worker_connections 64; }}
http {{
  access_log off;
  client_body_temp_path {root}/body; proxy_temp_path {root}/proxy; fastcgi_temp_path {root}/fastcgi;
  uwsgi_temp_path {root}/uwsgi; scgi_temp_path {root}/scgi;
  server {{
    listen 127.0.0.1:{port};
    location / {{
      proxy_pass {upstream};
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
    }}
  }}
}}
"""


@contextlib.contextmanager
def nginx(upstream: str, root: Path) -> Iterator[int]:
    """nginx in front of `upstream`, appending each client's address to X-Forwarded-For; yields its port."""
    require_tool("nginx", "nginx (apt-get install nginx-light)")
    port = free_port()
    root.mkdir(parents=True, exist_ok=True)
    conf = root / "nginx.conf"
    conf.write_text(NGINX_CONF.format(root=root, port=port, upstream=upstream))
    process = subprocess.Popen(["nginx", "-c", str(conf), "-p", str(root), "-e", str(root / "nginx-error.log")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: http_status(f"http://127.0.0.1:{port}/accounts/login/") == 200, timeout=30,
                   what=lambda: f"nginx on {port}:\n{log_tail(root / 'nginx-error.log')}")
        yield port
    finally:
        stop(process)


def sign_in_from(address: str, port: int, username: str, password: str, **headers: str) -> int:
    """A person at `address` (a loopback address of its own) signs in at `port` (the proxy's or gunicorn's)."""
    return sign_in_page(address, port, username, password, **headers)[0]


def sign_in_page(address: str, port: int, username: str, password: str, **headers: str) -> tuple[int, str]:
    """The post's status and page."""

    def request(method: str, body: str | None = None, cookie: str = "") -> http.client.HTTPResponse:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60, source_address=(address, 0))
        sent = {"Cookie": cookie, **headers}
        if body is not None:
            sent["Content-Type"] = "application/x-www-form-urlencoded"
        connection.request(method, "/accounts/login/", body=body, headers=sent)
        return connection.getresponse()

    form = request("GET")
    page = form.read().decode()
    cookie = "; ".join(value.split(";", 1)[0] for key, value in form.getheaders() if key.lower() == "set-cookie")
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert token is not None
    posted = request("POST", urllib.parse.urlencode(
        {"username": username, "password": password, "csrfmiddlewaretoken": token.group(1)}), cookie)
    return posted.status, posted.read().decode()


# gunicorn's peer is nginx on 127.0.0.1; the people are other loopback addresses (127.0.0.2, ...).
PROXY_ENV = {"DOCKET_TRUSTED_PROXY_COUNT": "1", "DOCKET_TRUSTED_PROXIES": "127.0.0.1/32"}


def test_through_a_proxy_five_failures_lock_only_that_username_from_that_client(tmp_path):
    """The issue's case: behind the TLS proxy, five failures must not lock everyone out, nor the chair elsewhere."""
    require(connection.vendor == "postgresql", "PostgreSQL (run with DATABASE_URL=postgres://…)")
    User.objects.create_user("chair", password="the-chairs-password")
    User.objects.create_user("lead", password="the-leads-password")
    env = app_env(database_url(connection.settings_dict), LOGIN_FAILURE_LIMIT="5", **PROXY_ENV)
    attacker, office = "127.0.0.2", "127.0.0.3"
    with gunicorn(env, log_dir=tmp_path, workers=2, timeout=60) as server, \
            nginx(server.url, tmp_path / "nginx") as port:
        failures = [sign_in_from(attacker, port, "chair", "guess") for _ in range(5)]
        assert failures == [200, 200, 200, 200, 429]
        assert sign_in_from(attacker, port, "chair", "the-chairs-password") == 429
        # A made-up X-Forwarded-For does not help: nginx appends the real address, which is what counts.
        assert sign_in_from(attacker, port, "chair", "the-chairs-password", **{"X-Forwarded-For": office}) == 429
        assert sign_in_from(office, port, "chair", "the-chairs-password") == 302  # the chair, elsewhere
        assert sign_in_from(attacker, port, "lead", "the-leads-password") == 302  # someone else, same client
    assert list(AccessAttempt.objects.values_list("username", "ip_address", "failures_since_start")) == [
        ("chair", attacker, 5)]


def test_straight_to_gunicorn_a_made_up_forwarded_for_buys_no_guesses(tmp_path):
    """The issue's case: gunicorn reached without the proxy, each guess with another X-Forwarded-For.

    Only nginx's address is a trusted proxy, so the header of a client that skips it is not
    believed: 40 guesses with 40 made-up addresses count as one client, locked at the limit.
    """
    require(connection.vendor == "postgresql", "PostgreSQL (run with DATABASE_URL=postgres://…)")
    User.objects.create_user("chair", password="the-chairs-password")
    env = app_env(database_url(connection.settings_dict), LOGIN_FAILURE_LIMIT="5", **PROXY_ENV)
    attacker = "127.0.0.2"
    with gunicorn(env, log_dir=tmp_path, workers=2, timeout=60) as server:
        port = int(server.url.rsplit(":", 1)[1])
        statuses = [sign_in_from(attacker, port, "chair", "guess", **{"X-Forwarded-For": f"198.51.100.{n}"})
                    for n in range(1, 41)]
        assert statuses == [200] * 4 + [429] * 36
        assert sign_in_from(attacker, port, "chair", "the-chairs-password",
                            **{"X-Forwarded-For": "198.51.100.99"}) == 429
    assert list(AccessAttempt.objects.values_list("username", "ip_address", "failures_since_start")) == [
        ("chair", attacker, 5)]


def test_through_a_proxy_one_address_guessing_at_every_account_is_paused(tmp_path):
    """Password spraying: a few guesses at each of many accounts from one address stop at the address limit."""
    require(connection.vendor == "postgresql", "PostgreSQL (run with DATABASE_URL=postgres://…)")
    for name in ("chair", "lead", "member", "finance"):
        User.objects.create_user(name, password=f"the-{name}s-password")
    env = app_env(database_url(connection.settings_dict), LOGIN_FAILURE_LIMIT="5", LOGIN_ADDRESS_FAILURE_LIMIT="8",
                  **PROXY_ENV)
    attacker, office = "127.0.0.2", "127.0.0.3"
    with gunicorn(env, log_dir=tmp_path, workers=2, timeout=60) as server, \
            nginx(server.url, tmp_path / "nginx") as port:
        statuses = [sign_in_from(attacker, port, name, guess)
                    for guess in ("guess-1", "guess-2") for name in ("chair", "lead", "member", "finance")]
        assert statuses == [200] * 7 + [429]
        status, page = sign_in_page(attacker, port, "finance", "the-finances-password")
        assert status == 429 and "Sign-ins from your address failed 8 times" in page
        assert sign_in_from(office, port, "finance", "the-finances-password") == 302  # elsewhere: not paused
