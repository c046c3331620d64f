"""The live server answers one request at a time when it shares the test's in-memory SQLite connection.

Against an in-memory SQLite test database, Django's live server hands its request threads the test's own connection
(there is no other way to see the test's rows), while its server stays threaded. Two requests at once then use one
`sqlite3` connection from two threads, and CPython's module can deadlock on it: one thread holds SQLite's connection
mutex inside a statement and waits for the GIL to run one of Django's SQL functions, the other holds the GIL and asks
SQLite for the connection's state, which waits for the mutex. A browser does send two at once (the archive editor's
preview still loading when Save is pressed), and the run hung there for good.

So, only in that case, the server runs one request (and its response body) at a time; keep-alive connections stay
open and threaded. PostgreSQL, and SQLite in a file (DOCKET_TEST_DB_FILE=1), give each thread its own connection:
their server is Django's, unchanged.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from django.core.servers.basehttp import ThreadedWSGIServer
from django.test.testcases import LiveServerThread


class OneRequestAtATimeWhenShared(ThreadedWSGIServer):
    def __init__(self, *args: Any, connections_override: dict[str, Any] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, connections_override=connections_override, **kwargs)
        self.one_at_a_time = threading.Lock() if connections_override else None

    def set_app(self, application: Any) -> None:
        lock = self.one_at_a_time
        if lock is None or application is None:
            super().set_app(application)
            return

        def serialized(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
            with lock:
                response = application(environ, start_response)
                try:
                    return list(response)
                finally:
                    close = getattr(response, "close", None)
                    if close is not None:
                        close()

        super().set_app(serialized)


def install() -> None:
    LiveServerThread.server_class = OneRequestAtATimeWhenShared  # type: ignore[attr-defined]  # not in the stubs
