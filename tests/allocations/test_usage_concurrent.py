"""Five schedulers post a full hour of one pool at the same moment, over real HTTP: one report is stored.

Runs against PostgreSQL (the pool row's lock is what is tested). A check that has read the pool's
reports holds on until each of the five is either there too or seen waiting on the lock
(tests/races.py), so without the lock all five would see an empty hour and all five would be
stored (320 GPU-hours for an hour that holds 64).
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from datetime import timedelta
from typing import Any

import pytest

from allocations import services
from allocations.models import ClusterAccount, UsageRecord
from tests.allocations.plans import token_for
from tests.clock import FIXED_NOW
from tests.conftest import require
from tests.races import RaceWindow
from tests.reports.conftest import on_postgresql

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def post_json(url: str, token: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST")  # noqa: S310 (live server)
    request.add_header("Authorization", f"Bearer {token}")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310 (the live server's http URL)
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def test_concurrent_reports_cannot_together_overfill_a_pool(live_server, world, clock, monkeypatch):
    require(on_postgresql(), "PostgreSQL (run with DATABASE_URL=postgres://…)")
    clock.move_to(FIXED_NOW, tick=False)
    ClusterAccount.objects.create(cluster=world.atlas, team=world.team_a, account="team-a-acct")
    ClusterAccount.objects.create(cluster=world.atlas, team=world.team_b, account="team-b-acct")
    token = token_for(world.atlas, "slurm-sync")
    real_check = services.usage._usage_fits_pool
    window = RaceWindow(parties=5)

    def slow_check(**kwargs: Any) -> Any:
        result = real_check(**kwargs)
        window.hold()  # the others arrive (or wait on the lock) while this one has read the hour as empty
        return result

    monkeypatch.setattr(services.usage, "_usage_fits_pool", slow_check)
    hour = FIXED_NOW.replace(minute=0, second=0, microsecond=0) - timedelta(hours=2)
    start = threading.Barrier(5)
    results: dict[str, tuple[int, dict[str, Any]]] = {}

    def report(key: str, team: str) -> None:
        body = {"team": team, "pool": "a100", "period_start": hour.isoformat(),
                "period_end": (hour + timedelta(hours=1)).isoformat(), "gpu_hours_used": "64",
                "mean_utilization_pct": "90", "idempotency_key": key}
        start.wait()
        results[key] = post_json(f"{live_server.url}/api/v1/usage/", token, body)

    threads = [threading.Thread(target=report, args=(f"k{i}", "team-a" if i % 2 else "team-b")) for i in range(5)]
    for thread in threads:
        thread.start()
    waited = window.open_when_all_arrived(threads)
    for thread in threads:
        thread.join(timeout=60)

    statuses = sorted(status for status, _body in results.values())
    assert statuses == [201, 400, 400, 400, 400], results
    for status, body in results.values():
        if status == 400:
            assert list(body) == ["gpu_hours_used"], body
    assert [str(r.gpu_hours_used) for r in UsageRecord.objects.all()] == ["64.00"]
    assert waited == 4  # the other four reports waited on the pool's lock


def test_concurrent_replays_of_one_report_store_it_once(live_server, world, clock):
    require(on_postgresql(), "PostgreSQL (run with DATABASE_URL=postgres://…)")
    clock.move_to(FIXED_NOW, tick=False)
    ClusterAccount.objects.create(cluster=world.atlas, team=world.team_a, account="team-a-acct")
    token = token_for(world.atlas, "slurm-sync")
    hour = FIXED_NOW.replace(minute=0, second=0, microsecond=0) - timedelta(hours=2)
    body = {"team": "team-a", "pool": "a100", "period_start": hour.isoformat(),
            "period_end": (hour + timedelta(hours=1)).isoformat(), "gpu_hours_used": "64",
            "mean_utilization_pct": "90", "idempotency_key": "same"}
    start = threading.Barrier(4)
    results: list[tuple[int, dict[str, Any]]] = []

    def report() -> None:
        start.wait()
        results.append(post_json(f"{live_server.url}/api/v1/usage/", token, body))

    threads = [threading.Thread(target=report) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert [status for status, _body in results] == [201] * 4, results
    assert len({body["id"] for _status, body in results}) == 1
    assert UsageRecord.objects.count() == 1
