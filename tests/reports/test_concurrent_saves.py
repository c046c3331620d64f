"""Two committee members save the same page at the same moment, over real HTTP: one wins, one gets the conflict.

Runs against PostgreSQL (row locks are what is tested): two threads post to the live server at
once, each with its own session and database connection. The first save to take the page's
lock holds it until the second request is seen waiting on it (tests/races.py), so the second is
certainly waiting when the first commits — without the lock both would read the same latest
revision and both would save.
"""

from __future__ import annotations

import secrets
import threading
import urllib.error
import urllib.parse
import urllib.request

import pytest
from django.test import Client

from reports import selectors
from reports.models import PageRevision
from reports.services import pages as page_services
from tests.conftest import require
from tests.races import RaceWindow
from tests.reports.conftest import make_page, on_postgresql

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def session_cookie(user) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies["sessionid"].value


def post(url: str, session: str, fields: dict[str, str]) -> tuple[int, str]:
    csrf = secrets.token_hex(16)  # 32 characters: Django accepts its own secret as the form token
    data = urllib.parse.urlencode({**fields, "csrfmiddlewaretoken": csrf}).encode()
    request = urllib.request.Request(url, data=data, method="POST")  # noqa: S310 (the live server's http URL)
    request.add_header("Cookie", f"sessionid={session}; csrftoken={csrf}")
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def test_two_simultaneous_saves_one_wins_the_other_is_told(live_server, world, monkeypatch):
    require(on_postgresql(), "PostgreSQL (run with DATABASE_URL=postgres://…)")
    page = make_page(world, body="The committee meets on Mondays.")
    base = page.latest_revision_id
    url = f"{live_server.url}/archive/{page.slug}/edit/"
    sessions = {"reviewer": session_cookie(world.reviewer), "finance": session_cookie(world.finance)}

    real_lock = page_services._page_lock
    locked_by: list[str] = []
    window = RaceWindow(parties=2)

    def slow_lock(pk):
        row = real_lock(pk)
        locked_by.append(threading.current_thread().name)
        window.hold()  # hold the lock until the other request is seen waiting on it
        return row

    monkeypatch.setattr(page_services, "_page_lock", slow_lock)
    start = threading.Barrier(2)
    results: dict[str, tuple[int, str]] = {}

    def save(name: str) -> None:
        start.wait()
        results[name] = post(url, sessions[name], {
            "title": "Charter", "body": f"The committee meets on Mondays. ({name} was here)",
            "summary": f"{name}'s edit", "base_revision_id": str(base)})

    threads = [threading.Thread(target=save, args=(name,), name=name) for name in sessions]
    for thread in threads:
        thread.start()
    waited = window.open_when_all_arrived(threads)
    for thread in threads:
        thread.join(timeout=60)

    statuses = sorted(status for status, _body in results.values())
    assert statuses == [302, 409], results
    winner = next(name for name, (status, _b) in results.items() if status == 302)
    loser = next(name for name, (status, _b) in results.items() if status == 409)
    conflict_page = results[loser][1]
    assert "Edit conflict: nothing was saved." in conflict_page
    assert f"({loser} was here)" in conflict_page  # the loser's text is kept in the form
    assert f"({winner} was here)" in conflict_page  # and the winner's shown in the difference
    revisions = list(PageRevision.objects.filter(page=page).order_by("number"))
    assert [r.summary for r in revisions] == ["First version", f"{winner}'s edit"]
    assert len(locked_by) == 2  # both requests reached the lock; the second waited for it
    assert waited == 1
    assert selectors.archive_verify().ok
