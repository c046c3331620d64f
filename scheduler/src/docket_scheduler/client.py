"""Docket's windows API as a scheduler host sees it, and the poll loop every adapter shares.

Standard library only (urllib): it runs on scheduler hosts without Django. The token is
sent to Docket's own origin only; a `next` link pointing elsewhere is refused.
"""

from __future__ import annotations

import functools
import http.client
import io
import json
import os
import random
import socket
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from docket_scheduler import __version__
from docket_scheduler.base import (
    DEFAULT_MAX_REMOVE_PCT,
    DesiredCommitment,
    DesiredWindow,
    RemovalGuard,
    SchedulerSync,
    SyncState,
    SyncStatus,
    WindowFormatError,
    Withdrawal,
    parse_commitments,
    parse_windows,
)

USER_AGENT = f"docket-scheduler/{__version__}"
# A plan published while we page through the list would mix two versions; refetch.
MAX_FETCH_ATTEMPTS = 3


class DocketError(Exception):
    """Docket could not be reached or answered something the contract does not allow.

    `status` is the HTTP status when Docket answered one (401 bad token, 400, 409, ...).
    """

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class UsagePosted:
    """Docket's answer to one measured usage record: the stored record, and whether the key had been seen before."""

    record: dict[str, Any]
    replayed: bool


@dataclass(frozen=True)
class WindowsSnapshot:
    """The cluster's current windows, all pages of one plan version."""

    windows: list[DesiredWindow]
    etag: str | None
    cursor: int | None
    plan_version: int | None
    # The later weeks of runs (every state), as the first page lists them; none from a Docket before API 1.1.0.
    commitments: list[DesiredCommitment] = field(default_factory=list)


class DocketClient:
    """Reads a cluster's windows and reports their sync status, with a cluster-bound token.

    `timeout_s` is each request's whole deadline (connecting, sending, every byte of the answer), not a
    limit per socket read: a proxy that trickles a byte at a time cannot hold a pass past it."""

    def __init__(self, url: str, token: str, cluster: str, *, timeout_s: float = 30.0) -> None:
        self.base_url = url.rstrip("/")
        self.token = token
        self.cluster = cluster
        self.timeout_s = timeout_s
        self._origin = _origin(self.base_url)
        self._requests: dict[int, int | None] = {}
        self._node_sizes: dict[int, int] = {}  # GPUs per node of the windows asked about
        if self._origin[0] not in ("http", "https") or not self._origin[1]:
            raise DocketError(f"{url!r} is not an http(s) URL")

    @property
    def windows_url(self) -> str:
        return self._windows_url(None)

    def _windows_url(self, ends_after: datetime | None) -> str:
        params = {"cluster": self.cluster}
        if ends_after is not None:
            params["ends_after"] = ends_after.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return f"{self.base_url}/api/v1/windows/?" + urllib.parse.urlencode(params)

    def fetch_windows(self, *, etag: str | None = None, ends_after: datetime | None = None) -> WindowsSnapshot | None:
        """All current windows (of the weeks ending after `ends_after`, default now), following
        `next`; None when Docket answers 304 to `etag`.

        Raises DocketError on transport errors, unexpected statuses, malformed JSON or
        windows, and when the pages keep disagreeing on the plan version.
        """
        for _attempt in range(MAX_FETCH_ATTEMPTS):
            try:
                return self._fetch_all_pages(etag, self._windows_url(ends_after))
            except _PlanChanged:
                continue
        raise DocketError(f"the plan kept changing while reading {MAX_FETCH_ATTEMPTS} times; try again later")

    def _fetch_all_pages(self, etag: str | None, url: str) -> WindowsSnapshot | None:
        headers = {"If-None-Match": etag} if etag else {}
        status, body, response_headers = self._request("GET", url, headers=headers)
        if status == 304:
            return None
        first_etag = response_headers.get("ETag")
        page = _json_object(body, url)
        plan_version = page.get("plan_version")
        cursor = page.get("cursor")
        commitments = page.get("commitments", [])
        if not isinstance(commitments, list):
            raise DocketError("windows response has a 'commitments' that is not a list")
        results: list[Any] = []
        while True:
            if page.get("plan_version") != plan_version:
                raise _PlanChanged
            items = page.get("results")
            if not isinstance(items, list):
                raise DocketError("windows response has no 'results' list")
            results.extend(items)
            next_url = page.get("next")
            if not next_url:
                break
            next_url = urllib.parse.urljoin(url, str(next_url))
            if _origin(next_url) != self._origin:
                raise DocketError(f"refusing to send the token to {next_url}: not Docket's origin {self.base_url}")
            _status, body, _headers = self._request("GET", next_url)
            page = _json_object(body, next_url)
        try:
            windows = parse_windows(results)
            runs = parse_commitments(commitments)
        except WindowFormatError as exc:
            raise DocketError(f"malformed window from Docket: {exc}") from None
        foreign = sorted({w.cluster for w in windows} - {self.cluster})
        if foreign:
            raise DocketError(f"Docket returned windows of other clusters: {', '.join(foreign)}")
        return WindowsSnapshot(
            windows=windows,
            etag=first_etag,
            cursor=cursor if isinstance(cursor, int) else None,
            plan_version=plan_version if isinstance(plan_version, int) else None,
            commitments=runs,
        )

    def window_withdrawal(self, window_id: int) -> tuple[Withdrawal, str]:
        """Ask Docket about one window (`GET /api/v1/windows/<id>/`): withdrawn by a newer plan, still held,
        or unknown (404, or Docket could not be asked). The second element says it in words."""
        url = f"{self.base_url}/api/v1/windows/{window_id}/"
        try:
            _status, body, _headers = self._request("GET", url)
            window = _json_object(body, url)
        except DocketError as exc:
            if exc.status == 404:
                return Withdrawal.UNKNOWN, f"Docket does not know window {window_id} (404)"
            return Withdrawal.UNKNOWN, f"window {window_id}: {exc}"
        if window.get("withdrawn") is True:
            return Withdrawal.WITHDRAWN, f"window {window_id} withdrawn in plan version {window.get('plan_version')}"
        return Withdrawal.HELD, (f"Docket still holds window {window_id} (plan version {window.get('plan_version')}) "
                                 "but left it out of the list")

    def window_request(self, window_id: int) -> int | None:
        """The request a window belonged to (`GET /api/v1/windows/<id>/`, ended or withdrawn ones too), or None when
        it has none or Docket does not say. Remembered: a window's request never changes."""
        if window_id not in self._requests:
            url = f"{self.base_url}/api/v1/windows/{window_id}/"
            try:
                _status, body, _headers = self._request("GET", url)
                window = _json_object(body, url)
            except DocketError:
                return None  # not remembered: asked again next pass
            request, size = window.get("request_id"), window.get("gpus_per_node")
            self._requests[window_id] = request if isinstance(request, int) and not isinstance(request, bool) else None
            if isinstance(size, int) and not isinstance(size, bool) and size > 0:
                self._node_sizes[window_id] = size
        return self._requests[window_id]

    def window_gpus_per_node(self, window_id: int) -> int | None:
        """The GPUs per node of a window's pool, as its own endpoint said when `window_request` asked (None before,
        or when it did not say)."""
        return self._node_sizes.get(window_id)

    def post_statuses(self, statuses: Sequence[SyncStatus]) -> None:
        """Report every window's status; raises DocketError unless Docket answers 2xx."""
        body = json.dumps({"statuses": [status.to_api() for status in statuses]}).encode()
        self._request(
            "POST",
            f"{self.base_url}/api/v1/windows/sync-status/",
            headers={"Content-Type": "application/json"},
            data=body,
        )

    def fetch_cluster(self) -> dict[str, Any]:
        """The cluster's pools and team accounts (`GET /api/v1/clusters/<slug>/`)."""
        url = f"{self.base_url}/api/v1/clusters/{urllib.parse.quote(self.cluster)}/"
        _status, body, _headers = self._request("GET", url)
        reference = _json_object(body, url)
        if not isinstance(reference.get("pools"), list) or not isinstance(reference.get("accounts"), list):
            raise DocketError(f"{url} answered no 'pools' and 'accounts' lists")
        return reference

    def post_usage(self, report: Mapping[str, Any]) -> UsagePosted:
        """Post one measured usage record (the body of `POST /api/v1/usage/`).

        Raises DocketError unless Docket stores it or replays it; its `status` is 400 for a
        report Docket refuses and 409 for a key already used for other data.
        """
        _status, body, headers = self._request(
            "POST",
            f"{self.base_url}/api/v1/usage/",
            headers={"Content-Type": "application/json"},
            data=json.dumps(dict(report)).encode(),
        )
        return UsagePosted(
            record=_json_object(body, f"{self.base_url}/api/v1/usage/"),
            replayed=headers.get("Idempotent-Replayed") == "true",
        )

    def fetch_elastic_policy(self, *, etag: str | None = None) -> tuple[dict[str, Any], str | None] | None:
        """The elastic policy in force for the cluster (`GET /api/v1/elastic/policy/`) and its ETag; None when
        Docket answers 304 to `etag`."""
        url = f"{self.base_url}/api/v1/elastic/policy/"
        status, body, headers = self._request("GET", url, headers={"If-None-Match": etag} if etag else {})
        if status == 304:
            return None
        return _json_object(body, url), headers.get("ETag")

    def post_elastic_action(self, action: Mapping[str, Any]) -> bool:
        """Report one action of the elastic agent (`POST /api/v1/elastic/actions/`); True when Docket had it already
        (the same idempotency key and data). Raises DocketError otherwise: 400 refused, 409 a key used for other
        data."""
        _status, _body, headers = self._request(
            "POST", f"{self.base_url}/api/v1/elastic/actions/", headers={"Content-Type": "application/json"},
            data=json.dumps(dict(action)).encode(),
        )
        return bool(headers.get("Idempotent-Replayed") == "true")

    def _request(
        self, method: str, url: str, *, headers: dict[str, str] | None = None, data: bytes | None = None
    ) -> tuple[int, bytes, Any]:
        # Every URL passed here has Docket's http(s) origin (checked in __init__ and for `next`).
        request = urllib.request.Request(url, data=data, method=method)  # noqa: S310
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("Accept", "application/json")
        request.add_header("User-Agent", USER_AGENT)
        for key, value in (headers or {}).items():
            request.add_header(key, value)
        try:
            with open_url(request, timeout_s=self.timeout_s) as response:
                return response.status, response.read(), response.headers
        except urllib.error.HTTPError as exc:
            if exc.code == 304:
                return 304, b"", exc.headers
            try:
                detail = exc.read()[:300].decode(errors="replace")
            except OSError:
                detail = "(the body did not arrive before the deadline)"
            raise DocketError(f"{method} {url}: HTTP {exc.code} {detail}", status=exc.code) from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
            reason = getattr(exc, "reason", exc)
            if isinstance(reason, TimeoutError) or isinstance(exc, TimeoutError):
                raise DocketError(f"{method} {url}: no whole answer within {self.timeout_s:g} s") from None
            raise DocketError(f"{method} {url}: {exc}") from None


# --- one deadline per request ----------------------------------------------------------------
# urllib's timeout bounds each socket operation, so an answer trickled a byte at a time never times out.
# Here every read of the answer (status line, headers, body) waits at most until the request's deadline.
# Only socket timeouts are used (no timer thread): they also hold under libfaketime, where a thread's timed
# wait that runs out never returns.


def open_url(request: urllib.request.Request, *, timeout_s: float, context: ssl.SSLContext | None = None) -> Any:
    """`urllib.request.urlopen` with one deadline for the whole request: connecting, sending and every byte of the
    answer within `timeout_s` (a TimeoutError past it). Every request of the package goes through here: to
    Docket, the Kubernetes API server and Prometheus. The caller has checked the URL is http(s)."""
    deadline = time.monotonic() + timeout_s
    opener = urllib.request.build_opener(_DeadlineHTTPHandler(deadline), _DeadlineHTTPSHandler(deadline, context))
    return opener.open(request, timeout=timeout_s)


class _DeadlineSocketIO(socket.SocketIO):
    def __init__(self, sock: socket.socket, deadline: float) -> None:
        super().__init__(sock, "rb")
        self._deadline = deadline
        self._socket = sock
        # As socket.makefile does: the socket stays open while this reader is (urllib closes the socket
        # object as soon as it has the response; SocketIO.close gives the reference back).
        sock._io_refs += 1  # type: ignore[attr-defined]

    def readinto(self, buffer: Any) -> int | None:
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the request's deadline has passed")
        self._socket.settimeout(remaining)
        return super().readinto(buffer)


class _DeadlineResponse(http.client.HTTPResponse):
    def __init__(self, sock: socket.socket, *args: Any, deadline: float, **kwargs: Any) -> None:
        super().__init__(sock, *args, **kwargs)
        self.fp.close()  # the plain reader HTTPResponse made; ours counts as the socket's reader instead
        self.fp = io.BufferedReader(_DeadlineSocketIO(sock, deadline))


def _deadline_connection(base: type[http.client.HTTPConnection], deadline: float) -> Any:
    class Connection(base):  # type: ignore[valid-type,misc]
        response_class = functools.partial(_DeadlineResponse, deadline=deadline)

    return Connection


class _DeadlineHTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, deadline: float) -> None:
        super().__init__()
        self._deadline = deadline

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_deadline_connection(http.client.HTTPConnection, self._deadline), req)


class _DeadlineHTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, deadline: float, tls: ssl.SSLContext | None) -> None:
        super().__init__()
        self._deadline = deadline
        self._tls = tls

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        # Without a context, the default one and its host name check, as urllib's own handler.
        return self.do_open(_deadline_connection(http.client.HTTPSConnection, self._deadline), req, context=self._tls)


class _PlanChanged(Exception):
    """A later page belongs to another plan version than the first: read all pages again."""


def _origin(url: str) -> tuple[str, str]:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme, parts.netloc


def _json_object(body: bytes, url: str) -> dict[str, Any]:
    try:
        page = json.loads(body)
    except ValueError:
        raise DocketError(f"{url} did not answer JSON") from None
    if not isinstance(page, dict):
        raise DocketError(f"{url} answered JSON that is not an object")
    return page


@dataclass(frozen=True)
class PassResult:
    """One sync pass: the statuses reported (empty when nothing changed) and the ETag to send next.

    `cursor` is the change sequence of the plan the pass applied (None when nothing was read); `refused` says
    why the pass applied nothing (an older plan than one already applied) or kept objects Docket's list no
    longer holds."""

    statuses: list[SyncStatus]
    etag: str | None
    changed: bool
    cursor: int | None = None
    refused: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        return bool(self.refused) or any(status.state is SyncState.FAILED for status in self.statuses)

    @property
    def all_in_sync(self) -> bool:
        return not self.refused and all(status.state is SyncState.IN_SYNC for status in self.statuses)


class StalePlan(DocketError):
    """Docket served an older plan than one this sync already applied: nothing was changed."""


def run_pass(
    client: DocketClient,
    adapter: SchedulerSync,
    *,
    dry_run: bool,
    etag: str | None = None,
    now: datetime | None = None,
    out: TextIO = sys.stdout,
    applied_cursor: int | None = None,
    max_remove_pct: int = DEFAULT_MAX_REMOVE_PCT,
) -> PassResult:
    """Fetch the windows, sync the scheduler, report the statuses (not in a dry run).

    With `etag` and a 304 from Docket, nothing is synced or reported. A list older than `applied_cursor` (the
    change sequence of a plan already applied: Docket restored from a backup, or pointed at another database)
    is not an instruction: nothing is changed, each of its windows is reported failed, and StalePlan is
    raised. Removals go through a `RemovalGuard` that asks Docket about each guarded window.
    """
    snapshot = client.fetch_windows(etag=etag)
    if snapshot is None:
        print("windows unchanged (304); nothing to do", file=out)
        return PassResult(statuses=[], etag=etag, changed=False, cursor=applied_cursor)
    print(
        f"cluster {client.cluster}: {len(snapshot.windows)} window(s), plan version {snapshot.plan_version}, "
        f"cursor {snapshot.cursor}",
        file=out,
    )
    if applied_cursor is not None and (snapshot.cursor is None or snapshot.cursor < applied_cursor):
        message = (f"not applied: Docket served change {snapshot.cursor} (plan version {snapshot.plan_version}), "
                   f"older than change {applied_cursor} this sync already applied; nothing was changed")
        print(message, file=out)
        if not dry_run and snapshot.windows:
            client.post_statuses([SyncStatus(w.id, SyncState.FAILED, 0, 0, message) for w in snapshot.windows])
        raise StalePlan(message)
    guard = RemovalGuard(max_remove_pct=max_remove_pct, check=client.window_withdrawal,
                         request_of=client.window_request, gpus_per_node_of=client.window_gpus_per_node)
    statuses = adapter.sync(snapshot.windows, now=now or datetime.now(UTC), dry_run=dry_run, guard=guard,
                            commitments=snapshot.commitments)
    for message in guard.refused.values():
        print(message, file=out)
    if not dry_run and statuses:
        client.post_statuses(statuses)
    return PassResult(statuses=statuses, etag=snapshot.etag, changed=True, cursor=snapshot.cursor,
                      refused=tuple(guard.refused.values()))


@dataclass(frozen=True)
class StateFile:
    """Where a sync keeps the change sequence (`cursor`) of the last list it applied, across restarts and
    `--once` runs: one JSON object, `{"cursor": N}`, replaced whole (written beside it, then renamed)."""

    path: Path

    def load(self) -> int | None:
        """The cursor kept, None when there is no file yet; a file that cannot be read is an error, not a
        fresh start (that would let an older plan through)."""
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise DocketError(f"cannot read the state file {self.path}: {exc}") from None
        cursor = data.get("cursor") if isinstance(data, dict) else None
        if not isinstance(cursor, int) or isinstance(cursor, bool) or cursor < 0:
            raise DocketError(f"the state file {self.path} holds no cursor")
        return cursor

    def save(self, cursor: int) -> None:
        temporary = self.path.with_name(self.path.name + ".tmp")
        temporary.write_text(json.dumps({"cursor": cursor}) + "\n")
        os.replace(temporary, self.path)


def backoff_delay(failures: int, *, interval_s: float, cap_s: float,
                  rng: Callable[[float, float], float] = random.uniform) -> float:
    """How long to wait after `failures` failed passes in a row: the interval doubled per failure, at most
    `cap_s`, drawn between half and all of it (jitter: syncs of many clusters do not return at once)."""
    if failures <= 0:
        return interval_s
    ceiling = min(cap_s, interval_s * 2 ** min(failures, 30))
    return rng(ceiling / 2, ceiling)


def poll(
    client: DocketClient,
    adapter: SchedulerSync,
    *,
    interval_s: float,
    resync_s: float,
    dry_run: bool,
    passes: int | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    out: TextIO = sys.stdout,
    errors: tuple[type[Exception], ...] = (DocketError,),
    wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    max_backoff_s: float = 900.0,
    max_remove_pct: int = DEFAULT_MAX_REMOVE_PCT,
    wake_at_boundary: bool = False,
    rng: Callable[[float, float], float] = random.uniform,
    state: StateFile | None = None,
) -> None:
    """Run passes forever (or `passes` times), sleeping `interval_s` after each.

    The ETag of the last pass is sent so that an unchanged plan costs one 304, except
    when that pass left a window short or failed (resources may have freed up since) or
    when `resync_s` has passed since the last full pass (someone may have changed the
    scheduler's objects by hand), or when the adapter's `next_boundary` (a window start or
    end that it must act on itself, as the Slurm sync's QOS quotas) has come; with `wake_at_boundary` the loop
    also sleeps no longer than until that boundary (Kueue). Errors in `errors` are printed and the loop goes on;
    after a failed pass (an error, or an older plan than one applied) it waits `backoff_delay`: doubling per
    failure in a row, with jitter, at most `max_backoff_s`. The change sequence of the last plan applied is
    remembered: an older one is refused (`run_pass`).
    """
    etag: str | None = None
    last_full = float("-inf")
    applied = state.load() if state is not None else None
    failures = 0
    done = 0
    while passes is None or done < passes:
        done += 1
        at, started = wall_clock(), clock()
        boundary = getattr(adapter, "next_boundary", None)
        due = isinstance(boundary, datetime) and at >= boundary
        send_etag = etag if started - last_full < resync_s and not due else None
        try:
            result = run_pass(client, adapter, dry_run=dry_run, etag=send_etag, now=at, out=out,
                              applied_cursor=applied, max_remove_pct=max_remove_pct)
        except errors as exc:
            print(f"sync pass failed: {exc}", file=out)
            etag = None
            failures += 1
        else:
            failures = 0
            if result.changed:
                last_full = started
                etag = result.etag if result.all_in_sync else None
                if result.cursor is not None and not dry_run:
                    applied = max(applied or 0, result.cursor)
                    if state is not None:
                        state.save(applied)
        delay = backoff_delay(failures, interval_s=interval_s, cap_s=max(max_backoff_s, interval_s), rng=rng)
        boundary = getattr(adapter, "next_boundary", None)
        if wake_at_boundary and not failures and isinstance(boundary, datetime):
            delay = min(delay, max(0.0, (boundary - wall_clock()).total_seconds()))
        if failures:
            print(f"next pass in {delay:.0f} s (failed passes in a row: {failures})", file=out)
        sleep(delay)
