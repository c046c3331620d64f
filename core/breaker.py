"""A circuit breaker: after a dependency fails to answer in time, stop calling it for a while.

A request that needs nothing from Redis must not wait for a Redis that hangs. Each call already has a short
timeout (`CACHE_SOCKET_TIMEOUT`, `CELERY_BROKER_CONNECTION_TIMEOUT`), but with a hung server every request would
still pay it, and a few sync workers waiting at once stall the whole site (issue 27: every request took about
10 s). So the first call that fails opens the breaker: for `OPEN_SECONDS` the callers skip the dependency at once
(the rate limit is not counted, the outbox leaves the work for the minute's relay), then one call tries again.
The state is per process (each gunicorn worker learns on its own, at the cost of one timeout); `/readyz` always
asks the dependency itself and sets the breaker by the answer (core/health.py).

Used for the cache by the API's rate limits (core/throttling.py) and for the broker by the outbox
(committee/outbox.py). docs/reliability.md, "A hung Redis".
"""

from __future__ import annotations

import logging
import threading
import time

logger = logging.getLogger(__name__)

OPEN_SECONDS = 30.0


class CircuitBreaker:
    """Closed: calls go through. Open (after a failure): callers skip the dependency until `OPEN_SECONDS` pass."""

    def __init__(self, name: str, open_seconds: float = OPEN_SECONDS) -> None:
        self.name = name
        self.open_seconds = open_seconds
        self._open_until = 0.0
        self._lock = threading.Lock()

    def allows(self) -> bool:
        """Whether to call the dependency now: the breaker is closed, or open long enough for one more try.

        Of the callers that find the time up, one tries (the breaker stays open for the others meanwhile).
        """
        with self._lock:
            if self._open_until == 0.0:
                return True
            now = time.monotonic()
            if now < self._open_until:
                return False
            self._open_until = now + self.open_seconds  # this caller tries; the others keep skipping
            return True

    @property
    def is_open(self) -> bool:
        with self._lock:
            return self._open_until != 0.0

    def failed(self, error: object) -> None:
        """The dependency did not answer: skip it for the next `open_seconds`."""
        with self._lock:
            first = self._open_until == 0.0
            self._open_until = time.monotonic() + self.open_seconds
        if first:
            logger.warning("%s did not answer (%s): not calling it for %.0f s", self.name, error, self.open_seconds)

    def reset(self) -> None:
        """Closed, without a word (the tests start each test so)."""
        with self._lock:
            self._open_until = 0.0

    def succeeded(self) -> None:
        with self._lock:
            was_open = self._open_until != 0.0
            self._open_until = 0.0
        if was_open:
            logger.warning("%s answers again", self.name)


CACHE = CircuitBreaker("the cache (CACHE_URL)")
BROKER = CircuitBreaker("the Celery broker (CELERY_BROKER_URL)")
