"""Concurrent wrong passwords against a real server: no more than the limit are ever checked.

gunicorn (4 sync workers) on the test's PostgreSQL database; 24 sign-ins with a wrong password for
the chair's username, all sent at once from one client. django-axes checks the lockout before the
password and records the failure after it: without the per-pair lock in ThrottledLoginView, workers
pass the check together and check more passwords than the limit. Failures are only recorded for
passwords that were checked (a refused attempt records nothing), so the count is the number checked.
"""

from __future__ import annotations

import http.cookiejar
import re
import threading
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

import pytest
from axes.models import AccessAttempt
from django.contrib.auth.models import User
from django.db import connection

from tests.conftest import require
from tests.processes import app_env, database_url, gunicorn, log_tail

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
