"""Docket's windows API as a scheduler host sees it, and the poll loop every adapter shares.

Standard library only (urllib): it runs on scheduler hosts without Django. The token is
sent to Docket's own origin only; a `next` link pointing elsewhere is refused.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TextIO

from allocations.adapters.base import (
    DesiredWindow,
    SchedulerSync,
    SyncState,
    SyncStatus,
    WindowFormatError,
    parse_windows,
)

USER_AGENT = "docket-scheduler-sync/1"
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
    """Docket's answer to one usage report: the stored record, and whether the key had been seen before."""

    record: dict[str, Any]
    replayed: bool


@dataclass(frozen=True)
class WindowsSnapshot:
    """The cluster's current windows, all pages of one plan version."""

    windows: list[DesiredWindow]
    etag: str | None
    cursor: int | None
    plan_version: int | None


class DocketClient:
    """Reads a cluster's windows and reports their sync status, with a cluster-bound token."""

    def __init__(self, url: str, token: str, cluster: str, *, timeout_s: float = 30.0) -> None:
        self.base_url = url.rstrip("/")
        self.token = token
        self.cluster = cluster
        self.timeout_s = timeout_s
        self._origin = _origin(self.base_url)
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
        )

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
        """Post one usage report (the body of `POST /api/v1/usage/`).

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
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:  # noqa: S310
                return response.status, response.read(), response.headers
        except urllib.error.HTTPError as exc:
            if exc.code == 304:
                return 304, b"", exc.headers
            detail = exc.read()[:300].decode(errors="replace")
            raise DocketError(f"{method} {url}: HTTP {exc.code} {detail}", status=exc.code) from None
        except (urllib.error.URLError, OSError) as exc:
            raise DocketError(f"{method} {url}: {exc}") from None


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
    """One sync pass: the statuses reported (empty when nothing changed) and the ETag to send next."""

    statuses: list[SyncStatus]
    etag: str | None
    changed: bool

    @property
    def failed(self) -> bool:
        return any(status.state is SyncState.FAILED for status in self.statuses)

    @property
    def all_in_sync(self) -> bool:
        return all(status.state is SyncState.IN_SYNC for status in self.statuses)


def run_pass(
    client: DocketClient,
    adapter: SchedulerSync,
    *,
    dry_run: bool,
    etag: str | None = None,
    now: datetime | None = None,
    out: TextIO = sys.stdout,
) -> PassResult:
    """Fetch the windows, sync the scheduler, report the statuses (not in a dry run).

    With `etag` and a 304 from Docket, nothing is synced or reported.
    """
    snapshot = client.fetch_windows(etag=etag)
    if snapshot is None:
        print("windows unchanged (304); nothing to do", file=out)
        return PassResult(statuses=[], etag=etag, changed=False)
    print(
        f"cluster {client.cluster}: {len(snapshot.windows)} window(s), plan version {snapshot.plan_version}, "
        f"cursor {snapshot.cursor}",
        file=out,
    )
    statuses = adapter.sync(snapshot.windows, now=now or datetime.now(UTC), dry_run=dry_run)
    if not dry_run and statuses:
        client.post_statuses(statuses)
    return PassResult(statuses=statuses, etag=snapshot.etag, changed=True)


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
) -> None:
    """Run passes forever (or `passes` times), sleeping `interval_s` after each.

    The ETag of the last pass is sent so that an unchanged plan costs one 304, except
    when that pass left a window short or failed (resources may have freed up since) or
    when `resync_s` has passed since the last full pass (someone may have changed the
    scheduler's objects by hand), or when the adapter's `next_boundary` (a window start or
    end that it must act on itself, as the Slurm sync's QOS quotas) has come. Errors in
    `errors` are printed and the loop goes on.
    """
    etag: str | None = None
    last_full = float("-inf")
    done = 0
    while passes is None or done < passes:
        done += 1
        at = wall_clock()
        boundary = getattr(adapter, "next_boundary", None)
        due = isinstance(boundary, datetime) and at >= boundary
        send_etag = etag if clock() - last_full < resync_s and not due else None
        try:
            result = run_pass(client, adapter, dry_run=dry_run, etag=send_etag, now=at, out=out)
        except errors as exc:
            print(f"sync pass failed: {exc}", file=out)
            etag = None
        else:
            if result.changed:
                last_full = clock()
                etag = result.etag if result.all_in_sync else None
        sleep(interval_s)
