"""POST /api/v1/windows/sync-status/: the scheduler reports how it holds its cluster's windows."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from allocations.models import WindowSyncStatus
from tests.allocations.plans import W, bearer, publish, token_for

URL = "/api/v1/windows/sync-status/"


@pytest.fixture
def plan(world):
    # Neither window has ended on Wednesday 11:00 (FIXED_NOW): the client fetches the windows that have not ended.
    return publish([W(world.a100, world.team_a, 16, 8, 120, ref=1), W(world.h100, world.team_b, 8, 72, 96, ref=2)])


@pytest.fixture
def api(world) -> APIClient:
    client = APIClient()
    client.credentials(**bearer(token_for(world.atlas, "slurm-sync")))
    return client


def status(window, state="in_sync", **extra):
    return {"window": window.pk, "state": state, "nodes_requested": 2, "nodes_reserved": 2,
            "message": "reserved 16 GPUs on 2 nodes (16 GPUs)", **extra}


def test_latest_status_replaces_the_previous_one(world, plan, api):
    window = plan.windows.get(request_ref=1)
    assert api.post(URL, {"statuses": [status(window)]}, format="json").json() == {"recorded": 1}
    response = api.post(URL, {"statuses": [status(window, "short", nodes_reserved=1, message="short by 1 node")]},
                        format="json")
    assert response.status_code == 200
    stored = WindowSyncStatus.objects.get()
    assert (stored.window, stored.state, stored.nodes_reserved, stored.client_name) == (window, "short", 1,
                                                                                       "slurm-sync")


def test_windows_of_another_cluster_are_refused_and_nothing_is_stored(world, plan, api):
    mine, theirs = plan.windows.get(request_ref=1), plan.windows.get(request_ref=2)
    response = api.post(URL, {"statuses": [status(mine), status(theirs)]}, format="json")
    assert response.status_code == 400 and "statuses.1.window" in response.json()
    assert not WindowSyncStatus.objects.exists()


@pytest.mark.parametrize(
    "bad",
    [
        {"state": "great"},
        {"nodes_reserved": -1},
        {"window": "x"},
        {"window": 2**70},  # once a database overflow (500), found by the API fuzzing
        {"nodes_reserved": 2**40},  # the same
        {"message": 0},  # not a string (DRF would have stored "0"), found by the API fuzzing
    ],
)
def test_malformed_status_is_400(world, plan, api, bad):
    response = api.post(URL, {"statuses": [{**status(plan.windows.get(request_ref=1)), **bad}]}, format="json")
    assert response.status_code == 400
    assert not WindowSyncStatus.objects.exists()


def test_the_adapters_client_can_post_its_statuses(transactional_db, world, plan, api, live_server):
    from docket_scheduler.base import SyncState, SyncStatus
    from docket_scheduler.client import DocketClient

    token = token_for(world.atlas, "other-sync")
    client = DocketClient(live_server.url, token, "atlas")
    snapshot = client.fetch_windows()
    assert snapshot is not None
    assert [w.request_id for w in snapshot.windows] == [1]
    assert client.fetch_windows(etag=snapshot.etag) is None  # 304
    window = snapshot.windows[0]
    client.post_statuses([SyncStatus(window=window.id, state=SyncState.FAILED, nodes_requested=2,
                                     nodes_reserved=0, message="no Slurm account mapped for team team-a")])
    assert WindowSyncStatus.objects.get(window_id=window.id).state == "failed"


def test_a_report_runs_the_same_queries_for_1_and_for_40_windows(world, api):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    plan = publish([W(world.a100, world.team_a, 1, hour, hour + 2, ref=hour + 1) for hour in range(40)])
    windows = list(plan.windows.order_by("pk"))
    api.post(URL, {"statuses": [status(windows[0])]}, format="json")  # the token's first use also notes last_seen
    counts = []
    for batch in (windows[:1], windows):
        with CaptureQueriesContext(connection) as queries:
            assert api.post(URL, {"statuses": [status(w) for w in batch]}, format="json").status_code == 200
        counts.append(len(queries))
    assert counts[0] == counts[1]
    assert WindowSyncStatus.objects.count() == 40
