"""A small HTTP proxy in front of the live Docket that misbehaves on demand, for the syncs' fault tests.

Modes (`FaultProxy.mode`), applied to every request while set:
- `pass`: forwards the request and the answer unchanged (the client's Host header too, so Docket's `next`
  links name the proxy);
- `stall`: reads the request and never answers, until the client hangs up;
- `trickle`: answers 200 with a 1,000-byte body announced, one byte every `trickle_s`, until the client hangs up;
- `error`: answers 500;
- `empty`: the windows list with no windows (`count` 0, `results` []), as a Docket restored from an old backup
  or pointed at another database would send; every other request passes;
- `older`: the first windows list this proxy served, again (an older plan version); every other request passes.

`served` records (mode, method, path) of each request. The proxy runs in a thread of the test process on a
free loopback port; `close()` stops it.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODES = ("pass", "stall", "trickle", "error", "empty", "older")
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding"}
# A stalled or trickling answer gives up after this, so a client without a deadline ends the test, failing.
GIVE_UP_S = 120


class FaultProxy:
    def __init__(self, upstream: str, *, trickle_s: float = 0.25) -> None:
        self.upstream = urllib.parse.urlsplit(upstream)
        self.mode = "pass"
        self.trickle_s = trickle_s
        self.served: list[tuple[str, str, str]] = []
        self.first_list: bytes | None = None
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                proxy.handle(self)

            def do_POST(self) -> None:
                proxy.handle(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def handle(self, request: BaseHTTPRequestHandler) -> None:
        mode = self.mode
        self.served.append((mode, request.command, request.path))
        length = int(request.headers.get("Content-Length") or 0)
        body = request.rfile.read(length) if length else None
        is_list = request.command == "GET" and request.path.startswith("/api/v1/windows/?")
        if mode == "stall":
            request.connection.settimeout(GIVE_UP_S)
            with contextlib.suppress(OSError):
                request.connection.recv(1)  # returns when the client hangs up
            request.close_connection = True
            return
        if mode == "trickle":
            self._trickle(request)
            return
        if mode == "error":
            self._answer(request, 500, {"Content-Type": "application/json"}, b'{"detail": "proxy error"}')
            return
        if mode == "older" and is_list and self.first_list is not None:
            self._answer(request, 200, {"Content-Type": "application/json"}, self.first_list)
            return
        # Another database answers another list: an ETag of the real one must not match it.
        status, headers, answer = self._forward(request, body, etag=not (is_list and mode == "empty"))
        if is_list and status == 200:
            if self.first_list is None:
                self.first_list = answer
            if mode == "empty":
                page = json.loads(answer)
                page.update(count=0, next=None, previous=None, results=[])
                answer = json.dumps(page).encode()
                headers["ETag"] = '"another-database"'
        self._answer(request, status, headers, answer)

    def _forward(self, request: BaseHTTPRequestHandler, body: bytes | None, *,
                 etag: bool = True) -> tuple[int, dict[str, str], bytes]:
        connection = http.client.HTTPConnection(self.upstream.hostname or "", self.upstream.port, timeout=60)
        try:
            headers = {k: v for k, v in request.headers.items()
                       if k.lower() not in HOP_BY_HOP and (etag or k.lower() != "if-none-match")}
            connection.request(request.command, request.path, body=body, headers=headers)
            response = connection.getresponse()
            answer = response.read()
            kept = {k: v for k, v in response.getheaders() if k.lower() not in HOP_BY_HOP}
            return response.status, kept, answer
        finally:
            connection.close()

    @staticmethod
    def _answer(request: BaseHTTPRequestHandler, status: int, headers: dict[str, str], body: bytes) -> None:
        request.send_response(status)
        for key, value in headers.items():
            request.send_header(key, value)
        request.send_header("Content-Length", str(len(body)))
        request.send_header("Connection", "close")
        request.end_headers()
        request.wfile.write(body)
        request.close_connection = True

    def _trickle(self, request: BaseHTTPRequestHandler) -> None:
        request.close_connection = True
        try:
            request.send_response(200)
            request.send_header("Content-Type", "application/json")
            request.send_header("Content-Length", "1000")
            request.end_headers()
            request.wfile.flush()
            given_up = time.monotonic() + GIVE_UP_S
            while time.monotonic() < given_up:
                request.wfile.write(b" ")
                request.wfile.flush()
                time.sleep(self.trickle_s)  # the fault itself: a byte at this pace, never a whole answer
        except OSError:
            pass  # the client hung up: what the test waits for
