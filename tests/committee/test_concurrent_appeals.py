"""Two members of a team appeal the same outcome at the same moment, over real HTTP: one appeal is filed.

Runs against PostgreSQL (the cycle row's lock is what is tested). The first request to take the
lock holds it until the second is seen waiting on it (tests/races.py), so the second is certainly
waiting when the first commits; it then finds the open appeal and is told so, and the database
holds one appeal.
"""

from __future__ import annotations

import threading

import pytest

from committee.models import Appeal
from committee.services import corrections
from tests.clock import FIXED_NOW
from tests.committee.appealing import finalize_week, publish
from tests.conftest import require
from tests.races import RaceWindow
from tests.reports.conftest import on_postgresql
from tests.reports.test_concurrent_saves import post, session_cookie

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_two_simultaneous_appeals_file_one(live_server, world, clock, monkeypatch):
    require(on_postgresql(), "PostgreSQL (run with DATABASE_URL=postgres://…)")
    clock.move_to(FIXED_NOW, tick=False)
    _first, second, _third = finalize_week(world)
    publish(world)
    url = f"{live_server.url}/requests/{second.pk}/appeal/"
    sessions = {"member_b": session_cookie(world.member_b), "tech": session_cookie(world.tech)}

    real_lock = corrections._lock_cycle
    window = RaceWindow(parties=2)

    def slow_lock(cycle):
        row = real_lock(cycle)
        window.hold()  # hold the cycle's lock until the other request is seen waiting on it
        return row

    monkeypatch.setattr(corrections, "_lock_cycle", slow_lock)
    start = threading.Barrier(2)
    results: dict[str, tuple[int, str]] = {}

    def appeal(name: str) -> None:
        start.wait()
        results[name] = post(url, sessions[name], {"statement": f"{name}: eight GPUs are too few."})

    threads = [threading.Thread(target=appeal, args=(name,), name=name) for name in sessions]
    for thread in threads:
        thread.start()
    waited = window.open_when_all_arrived(threads)
    for thread in threads:
        thread.join(timeout=60)

    statuses = sorted(status for status, _body in results.values())
    assert statuses == [302, 400], results
    refused = next(body for status, body in results.values() if status == 400)
    assert "already has an open appeal" in refused
    assert Appeal.objects.count() == 1
    assert waited == 1  # the second request waited on the cycle's lock
