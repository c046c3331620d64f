"""The Slurm sync in parts: reconcile() on plain data, the client against a stand-in Docket,
the executor against a real slurmctld with windows the real API would not serve.

The whole loop (the real API, the CLI as a process, the committee's page) is
tests/allocations/test_slurm_sync_e2e.py. Here the stand-in Docket (FakeDocketWindowsApi)
serves only what the real one cannot easily be made to: a plan published between two
page reads, a `next` link to another host. The executor tests hand it windows directly,
e.g. one that changes under its id or has already begun, and share one private
slurmctld per pytest process (tests/allocations/slurm_testbed.py), each from an empty
reservation table.
"""

from __future__ import annotations

import io
import json
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from docket_scheduler.base import (
    DesiredWindow,
    RemovalGuard,
    SyncState,
    SyncStatus,
    WindowFormatError,
    Withdrawal,
    parse_windows,
)
from docket_scheduler.client import DocketClient, DocketError
from docket_scheduler.slurm_commands import SlurmError, parse_fields
from docket_scheduler.slurm_reservations import (
    Create,
    Delete,
    Keep,
    Report,
    Reservation,
    Update,
    nodes_needed,
    parse_reservations,
    reconcile,
)
from docket_scheduler.slurm_sync import SlurmSync, main
from tests.allocations.slurm_testbed import SlurmTestbed, clean_slurmctld, slurmctld  # noqa: F401  (fixtures)
from tests.clock import machine_now

TOKEN = "atlas-scheduler-token"
# slurmctld keeps the machine's clock and refuses reservations in its past (tests/clock.py).
NOW = machine_now().replace(minute=0, second=0, microsecond=0)
DAY = timedelta(days=1)


def window_json(window_id: int, **overrides: Any) -> dict[str, Any]:
    """One window as the windows API serves it; defaults: 12 A100 GPUs in 2 days for team search,
    tier priority (a reservation; standard and preemptible windows are QOS: test_slurm_tiers.py)."""
    data: dict[str, Any] = {
        "id": window_id,
        "plan_version": 3,
        "cluster": "atlas",
        "pool": "a100",
        "gpu_model": "A100",
        "scheduler_label": "a100",
        "gpu_count": 12,
        "gpus_per_node": 8,
        "start": (NOW + 2 * DAY).isoformat().replace("+00:00", "Z"),
        "end": (NOW + 4 * DAY).isoformat().replace("+00:00", "Z"),
        "team": "search",
        "account": "search-acct",
        "tier": "priority",
        "request_id": 40 + window_id,
    }
    data.update(overrides)
    return data


def window(window_id: int, **overrides: Any) -> DesiredWindow:
    return DesiredWindow.from_api(window_json(window_id, **overrides))


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


# --- pure parts --------------------------------------------------------------------------


def test_window_parses_the_contract_and_refuses_malformed_ones() -> None:
    parsed = window(17)
    assert parsed.start == NOW + 2 * DAY
    assert parsed.start.tzinfo is not None
    assert nodes_needed(parsed) == 2
    assert window(5, account=None).account is None
    with pytest.raises(WindowFormatError, match="end"):
        window(1, end=iso(NOW))
    with pytest.raises(WindowFormatError, match="id must be an integer"):
        window(True)
    with pytest.raises(WindowFormatError, match="no UTC offset"):
        window(1, start="2026-12-01T08:00:00")
    with pytest.raises(WindowFormatError, match="appears twice"):
        parse_windows([window_json(1), window_json(1)])


def test_scontrol_line_splits_on_first_equals_and_null_is_empty() -> None:
    line = (
        "ReservationName=docket-w17 StartTime=2026-12-01T08:00:00 EndTime=2026-12-03T08:00:00 "
        "Duration=2-00:00:00 Nodes=gpu[01-02] NodeCnt=2 CoreCnt=128 Features=a100 PartitionName=gpu "
        "Flags= TRES=cpu=128 Users=(null) Groups=(null) Accounts=search-acct,ads State=INACTIVE"
    )
    fields = parse_fields(line)
    assert fields["TRES"] == "cpu=128"
    assert fields["Users"] == ""
    assert fields["Flags"] == ""
    [reservation] = parse_reservations(line + "\n")
    assert reservation.window_id == 17
    assert reservation.node_count == 2
    assert reservation.accounts == {"search-acct", "ads"}
    assert reservation.start == datetime(2026, 12, 1, 8, tzinfo=UTC)
    assert parse_reservations("No reservations in the system\n") == []
    odd = "ReservationName=maint StartTime=Unknown EndTime=Unknown NodeCnt=1\n"
    assert parse_reservations(odd) == []
    with pytest.raises(SlurmError, match="cannot read reservation line"):
        parse_reservations(odd.replace("maint", "docket-w3"))


def reservation_for(desired: DesiredWindow, **overrides: Any) -> Reservation:
    fields: dict[str, Any] = {
        "name": f"docket-w{desired.id}",
        "start": desired.start,
        "end": desired.end,
        "node_count": nodes_needed(desired),
        "features": desired.scheduler_label,
        "accounts": frozenset({desired.account}),
    }
    fields.update(overrides)
    return Reservation(**fields)


def test_reconcile_never_names_reservations_without_the_prefix() -> None:
    foreign = [
        Reservation("maintenance", NOW, NOW + DAY, 4),
        Reservation("docket-weekly", NOW, NOW + DAY, 1),
        Reservation("docket-w12x", NOW, NOW + DAY, 1),
    ]
    assert reconcile([], foreign, NOW) == []


def test_active_reservation_only_moves_its_end() -> None:
    desired = window(17, start=iso(NOW - DAY), end=iso(NOW + 3 * DAY))
    current = reservation_for(desired, start=NOW - DAY + timedelta(minutes=5), end=NOW + 2 * DAY)
    [action] = reconcile([desired], [current], NOW)
    assert isinstance(action, Update)
    assert action.changes == (("EndTime", (NOW + 3 * DAY).strftime("%Y-%m-%dT%H:%M:%S")),)


def test_active_reservation_whose_start_moved_ahead_is_recreated() -> None:
    desired = window(17)  # starts in two days
    current = reservation_for(desired, start=NOW - timedelta(hours=1))
    delete, create = reconcile([desired], [current], NOW)
    assert isinstance(delete, Delete) and delete.recreate and delete.name == "docket-w17"
    assert isinstance(create, Create) and create.start == desired.start


def test_window_already_begun_is_created_starting_now() -> None:
    [create] = reconcile([window(17, start=iso(NOW - DAY))], [], NOW)
    assert isinstance(create, Create) and create.start is None
    assert "StartTime=now" in create.argv()


def test_unmapped_window_loses_its_old_reservation() -> None:
    desired = window(17, account=None)
    delete, report = reconcile([desired], [reservation_for(window(17))], NOW)
    assert isinstance(delete, Delete) and not delete.recreate
    assert isinstance(report, Report) and report.state is SyncState.FAILED
    assert "no Slurm account mapped for team search" in report.message


def test_reconcile_of_a_matching_reservation_keeps_it() -> None:
    desired = window(17)
    [action] = reconcile([desired], [reservation_for(desired)], NOW)
    assert isinstance(action, Keep)


def test_unreachable_docket_exits_2_and_runs_no_scontrol(tmp_path: Path) -> None:
    out = io.StringIO()
    # Port 9 (discard) on localhost: nothing listens, the connection is refused at once.
    missing_scontrol = SlurmTestbed(root=tmp_path, conf=tmp_path, scontrol=str(tmp_path / "none"), env={})

    code = run_cli("http://127.0.0.1:9", missing_scontrol, out)

    assert code == 2
    assert "sync failed" in out.getvalue()


def run_cli(url: str, testbed: SlurmTestbed, out: io.StringIO, *extra: str) -> int:
    argv = ["--url", url, "--token", TOKEN, "--cluster", "atlas", "--once", "--scontrol", testbed.scontrol, *extra]
    return main(argv, env=testbed.env, out=out)


# --- a stand-in Docket, for what the real API does not do on its own ---------------------


class FakeDocketWindowsApi:
    """Serves pages of the windows contract on 127.0.0.1, two windows per page, and records the paths asked for.

    `after_page` and `next_base` let a test do what the real API never does on its own.
    """

    page_size = 2

    def __init__(self) -> None:
        self.windows: list[dict[str, Any]] = []
        self.plan_version: int | None = 3
        self.next_base: str | None = None  # where `next` links point; default: this server
        self.after_page: Callable[[int], None] | None = None  # called with each page number served
        self.requests: list[str] = []  # paths asked for
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
                pass

            def _json(self, status: int, body: object, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                api.requests.append(self.path)
                url = urllib.parse.urlsplit(self.path)
                query = urllib.parse.parse_qs(url.query)
                if url.path != "/api/v1/windows/" or query.get("cluster") != ["atlas"]:
                    self._json(404, {"detail": "Not found."})
                    return
                page = int(query.get("page", ["1"])[0])
                start = (page - 1) * api.page_size
                more = start + api.page_size < len(api.windows)
                body = {
                    "count": len(api.windows),
                    "next": f"{api.next_base or api.url}/api/v1/windows/?cluster=atlas&page={page + 1}"
                    if more
                    else None,
                    "previous": None,
                    "cursor": 100,
                    "plan_version": api.plan_version,
                    "results": api.windows[start : start + api.page_size],
                }
                # Change the state before the page is sent, so the next request sees it: after
                # sending, the client's next request can arrive before this thread runs again.
                if api.after_page:
                    api.after_page(page)
                self._json(200, body)

        return Handler

    def __enter__(self) -> FakeDocketWindowsApi:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)


@pytest.fixture
def docket() -> Iterator[FakeDocketWindowsApi]:
    with FakeDocketWindowsApi() as api:
        yield api


def test_plan_published_between_pages_is_read_again(docket: FakeDocketWindowsApi) -> None:
    docket.windows = [window_json(17), window_json(18), window_json(19)]

    def publish_v4_once(page: int) -> None:
        if page == 1 and docket.plan_version == 3:
            docket.plan_version = 4
            docket.windows = [window_json(i, plan_version=4) for i in (17, 18, 20)]

    docket.after_page = publish_v4_once
    snapshot = DocketClient(docket.url, TOKEN, "atlas").fetch_windows()

    assert snapshot is not None and snapshot.plan_version == 4
    assert [(w.id, w.plan_version) for w in snapshot.windows] == [(17, 4), (18, 4), (20, 4)]
    assert len(docket.requests) == 4  # two pages of v3 then v4, then two pages of v4


def test_token_is_not_sent_to_a_next_link_on_another_host(docket: FakeDocketWindowsApi) -> None:
    docket.windows = [window_json(17), window_json(18), window_json(19)]
    docket.next_base = "http://127.0.0.2:1"

    with pytest.raises(DocketError, match="refusing to send the token"):
        DocketClient(docket.url, TOKEN, "atlas").fetch_windows()
    assert len(docket.requests) == 1


@pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://docket.example/", "docket.example", "http://"])
def test_client_opens_only_http_urls(url: str) -> None:
    """The client's urlopen never sees another scheme (bandit B310, accepted in bandit-accepted.toml)."""
    with pytest.raises(DocketError, match="is not an http"):
        DocketClient(url, TOKEN, "atlas")


# --- against a real slurmctld ------------------------------------------------------------


def sync(
    testbed: SlurmTestbed, windows: list[DesiredWindow], *, dry_run: bool = False, reservations_only: bool = False,
    guard: RemovalGuard | None = None,
) -> tuple[list[SyncStatus], str]:
    out = io.StringIO()
    statuses = SlurmSync(scontrol=testbed.scontrol, env=testbed.env, out=out, reservations_only=reservations_only).sync(
        windows, now=machine_now(), dry_run=dry_run, guard=guard
    )
    return statuses, out.getvalue()


def plan_v1() -> list[DesiredWindow]:
    return [
        window(17),
        window(18, pool="h100", gpu_model="H100", scheduler_label="h100", gpu_count=16, team="ads", account="ads"),
        window(19, gpu_count=8, start=iso(NOW + 5 * DAY), end=iso(NOW + 6 * DAY)),
    ]


@pytest.mark.slurm
def test_window_changed_under_its_id_is_updated_in_place(slurm: SlurmTestbed) -> None:
    # Docket never changes a published window under its id (a correction is a new window);
    # the end-to-end test covers that. A sync must still follow one that does, in place.
    sync(slurm, plan_v1())
    nodes_before = slurm.reservations()["docket-w17"].nodes
    plan_v2 = [
        window(17, plan_version=4, gpu_count=20, start=iso(NOW + 3 * DAY), end=iso(NOW + 5 * DAY)),
        window(18, plan_version=4, pool="h100", scheduler_label="h100", gpu_count=16, team="ads", account="ads-2"),
        # 19 is gone; 20 is new
        window(20, plan_version=4, gpu_count=4),
    ]

    statuses, out = sync(slurm, plan_v2)

    assert {s.window: s.state for s in statuses} == {
        17: SyncState.IN_SYNC,
        18: SyncState.IN_SYNC,
        20: SyncState.IN_SYNC,
    }
    held = slurm.reservations()
    assert sorted(held) == ["docket-w17", "docket-w18", "docket-w20"]
    w17 = held["docket-w17"]
    assert (w17.start, w17.end, w17.node_count) == (NOW + 3 * DAY, NOW + 5 * DAY, 3)
    assert w17.nodes != nodes_before  # grew in place from 2 to 3 nodes
    assert held["docket-w18"].accounts == {"ads-2"}
    assert held["docket-w20"].node_count == 1
    assert "delete docket-w19 (window 19 is no longer published)" in out


@pytest.mark.slurm
def test_window_too_large_for_pool_is_reported_failed_with_slurms_message(slurm: SlurmTestbed) -> None:
    statuses, out = sync(slurm, [window(30, gpu_count=100)])

    [status] = statuses
    assert status.state is SyncState.FAILED
    assert (status.nodes_requested, status.nodes_reserved) == (13, 0)
    assert "Requested node configuration is not available" in status.message
    assert "window 30: 100 GPUs → 13 nodes (104 GPUs)" in out
    assert slurm.reservations() == {}


@pytest.mark.slurm
def test_fewer_nodes_read_back_is_reported_short(slurm: SlurmTestbed, monkeypatch: pytest.MonkeyPatch) -> None:
    executor = SlurmSync(scontrol=slurm.scontrol, env=slurm.env, out=io.StringIO())
    real_read_back = executor.reservations.read_back

    def read_back_one_node(name: str) -> Reservation | None:
        # Slurm can hold fewer nodes than NodeCnt and still exit 0; the read-back must catch it.
        held = real_read_back(name)
        return replace(held, node_count=1) if held else None

    monkeypatch.setattr(executor.reservations, "read_back", read_back_one_node)
    [status] = executor.sync([window(17)], now=machine_now(), dry_run=False)

    assert status.state is SyncState.SHORT
    assert (status.nodes_requested, status.nodes_reserved) == (2, 1)
    assert status.message.startswith("short by 1 nodes")


@pytest.mark.slurm
def test_feature_change_and_active_start_move_recreate_the_reservation(slurm: SlurmTestbed) -> None:
    started = window(17, start=iso(NOW - DAY))
    sync(slurm, [started, window(18)])
    assert slurm.reservations()["docket-w17"].state == "ACTIVE"

    moved = window(17, start=iso(NOW + 2 * DAY))
    rehomed = window(18, scheduler_label="h100", pool="h100")
    statuses, out = sync(slurm, [moved, rehomed])

    assert all(s.state is SyncState.IN_SYNC for s in statuses), statuses
    held = slurm.reservations()
    assert (held["docket-w17"].start, held["docket-w17"].state) == (NOW + 2 * DAY, "INACTIVE")
    assert held["docket-w18"].features == "h100"
    assert out.count("delete docket-w1") == 2


@pytest.mark.slurm
def test_reservations_not_created_by_docket_are_left_alone(slurm: SlurmTestbed) -> None:
    for name in ("maintenance", "docket-weekly"):
        slurm.run(
            "create",
            "reservation",
            f"ReservationName={name}",
            "StartTime=now",
            "Duration=60",
            "NodeCnt=1",
            "Users=root",
        )
    sync(slurm, [window(17)])

    sync(slurm, [], guard=RemovalGuard(check=lambda window: (Withdrawal.WITHDRAWN, "withdrawn")))

    assert sorted(slurm.reservations()) == ["docket-weekly", "maintenance"]


@pytest.mark.slurm
def test_refused_update_is_failed_and_says_what_is_still_held(slurm: SlurmTestbed) -> None:
    # 2 + 6 nodes: every A100 node is taken over the same two days.
    sync(slurm, [window(17), window(19, gpu_count=48)])

    statuses, _out = sync(slurm, [window(17, gpu_count=24), window(19, gpu_count=48)])

    status = next(s for s in statuses if s.window == 17)
    assert status.state is SyncState.FAILED
    assert (status.nodes_requested, status.nodes_reserved) == (3, 2)
    assert "Error updating the reservation" in status.message
    assert slurm.reservations()["docket-w17"].node_count == 2


@pytest.mark.slurm
def test_without_accounting_standard_and_preemptible_windows_fail_alone(slurm: SlurmTestbed) -> None:
    sync(slurm, [window(21)])  # a reservation from before the window was a standard one
    windows = [window(17), window(21, tier="standard"), window(22, tier="preemptible", gpu_count=8)]

    statuses, out = sync(slurm, windows)

    by_window = {s.window: s for s in statuses}
    assert by_window[17].state is SyncState.IN_SYNC
    for window_id in (21, 22):
        assert by_window[window_id].state is SyncState.FAILED
        assert by_window[window_id].message.startswith("accounting is needed for quotas (AccountingStorageType=")
        assert by_window[window_id].message.endswith("or run the sync with --reservations-only")
    assert sorted(slurm.reservations()) == ["docket-w17"]
    assert "delete docket-w21 (window 21 is held as a QOS quota, not a reservation)" in out
    assert "window 21: 12 GPUs → 2 nodes" not in out  # no node rounding for what is no reservation

    # The explicit fallback: every window a whole-node reservation, as before tiers.
    statuses, out = sync(slurm, windows, reservations_only=True)

    assert all(s.state is SyncState.IN_SYNC for s in statuses), statuses
    assert sorted(slurm.reservations()) == ["docket-w17", "docket-w21", "docket-w22"]
    assert "window 22: 8 GPUs → 1 nodes (8 GPUs)" in out
