"""Races made certain instead of likely: a party inside the race window stays there until every other party is seen.

A concurrency test hooks a pause into the code under test, just after the lock is taken (or just where, without
the lock, two parties would both pass a check). A fixed sleep there only makes the race likely and costs its
length every run. `RaceWindow` pauses instead until every party is accounted for, which the test's own thread
sees: either inside the window too (nothing kept it out: the race happens, and the test's assertions catch it)
or waiting on a lock in PostgreSQL (pg_stat_activity, wait_event_type 'Lock': a row lock, a transaction, a
unique index). Then the window opens and everyone goes on; how many were seen waiting is the test's to assert.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from django.db import connection

T = TypeVar("T")

DEADLINE_SECONDS = 30.0


def lock_waiters() -> int:
    """How many other sessions on this test's database are waiting for a lock right now."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid() AND wait_event_type = 'Lock'"
        )
        (count,) = cursor.fetchone()
    return int(count)


class RaceWindow:
    """A pause for `parties` threads inside the code under test, opened by the test once all are accounted for."""

    def __init__(self, parties: int) -> None:
        self.parties = parties
        self._arrived = 0
        self._count = threading.Lock()
        self._open = threading.Event()

    @property
    def arrived(self) -> int:
        with self._count:
            return self._arrived

    def hold(self) -> None:
        """Called by the hook, inside the window: wait until the test opens it (at once once it is open)."""
        if self._open.is_set():
            return
        with self._count:
            self._arrived += 1
        if not self._open.wait(DEADLINE_SECONDS):
            raise AssertionError(f"the race window stayed shut for {DEADLINE_SECONDS:.0f} s")

    def open_when_all_arrived(self, threads: list[threading.Thread]) -> int:
        """Open the window once every party is in it, waiting on a lock or done; return how many waited on a lock.

        Called from the test's thread (its own database connection) after starting `threads`. A party counts
        as waiting only when PostgreSQL says it waits for a lock, so a slow thread not yet at the lock is
        waited for, not mistaken for a waiting one. A thread that ended never reached the window (it would be
        held there): its result is the test's to report. Fails, after opening the window, at the deadline.
        """
        deadline = time.monotonic() + DEADLINE_SECONDS
        try:
            while True:
                arrived = self.arrived
                waiting = lock_waiters()
                ended = sum(not thread.is_alive() for thread in threads)
                if arrived + waiting + ended >= self.parties:
                    return waiting
                if time.monotonic() > deadline:
                    raise AssertionError(
                        f"{arrived} of {self.parties} parties in the race window, {waiting} waiting on a lock and "
                        f"{ended} ended after {DEADLINE_SECONDS:.0f} s"
                    )
                time.sleep(0.005)
        finally:
            self._open.set()

    def run(self, calls: Sequence[Callable[[], T]]) -> tuple[list[T], int]:
        """Each call in a thread of its own (its own database connection, closed at its end), all released at once;
        the window opened once every party is in it (`open_when_all_arrived`). Returns what the calls returned, in
        the order they ended, and how many waited on a lock; an exception a call raised fails the test."""
        gate = threading.Barrier(len(calls))
        results: list[T] = []
        errors: list[BaseException] = []

        def party(call: Callable[[], T]) -> None:
            try:
                gate.wait()
                results.append(call())
            except BaseException as exc:  # reported below: a thread's exception is otherwise lost
                errors.append(exc)
            finally:
                connection.close()

        threads = [threading.Thread(target=party, args=(call,)) for call in calls]
        for thread in threads:
            thread.start()
        waited = self.open_when_all_arrived(threads)
        for thread in threads:
            thread.join(timeout=60)
        assert not errors, errors
        return results, waited
