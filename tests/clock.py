"""The suite's clock. Every test runs at a fixed instant, never at the real day.

`FIXED_NOW` is an ordinary instant in the middle of a week: Wednesday 2 December 2026, 10:00 UTC
(11:00 in Berlin), in ISO week 2026-W49, with next week's intake open until Friday 18:00. The
autouse `clock` fixture (tests/conftest.py) travels there before each test and lets it tick, so
seconds still pass (timeouts, ordering) while the date never depends on when the suite runs.
Tests of the instants where weekly code breaks move the clock themselves (`clock.move_to(...)`,
or `time_machine.travel(..., tick=False)`).

Processes a test starts (gunicorn, a Celery worker, a seeding script) get the test's instant through
`child_env()`: tests/clock_site/sitecustomize.py travels there before the program starts.

Only tests against a real slurmctld keep the machine's clock: the controller keeps it too, and
it refuses reservations in its own past, so those tests build their windows from `machine_now()`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from time_machine import escape_hatch

FIXED_NOW = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)
NOW_VARIABLE = "DOCKET_TEST_NOW"
SITE_DIR = Path(__file__).resolve().parent / "clock_site"


def machine_now() -> datetime:
    """The machine's real time, for talking to a daemon that keeps it (slurmctld), and nothing else."""
    return datetime.fromtimestamp(escape_hatch.time.time(), tz=UTC)


def child_env(env: Mapping[str, str]) -> dict[str, str]:
    """`env` for a Python process that must see the test's clock: the instant now, and the hook that pins it."""
    python_path = os.pathsep.join(filter(None, [str(SITE_DIR), env.get("PYTHONPATH", "")]))
    return {**env, NOW_VARIABLE: datetime.now(UTC).isoformat(), "PYTHONPATH": python_path}


def machine_clock_env() -> dict[str, str]:
    """The variables that shift this process's machine clock (libfaketime under `make test-at`), for a daemon started
    with an environment of its own: it must keep the same clock as the test that talks to it."""
    return {name: value for name, value in os.environ.items() if name == "LD_PRELOAD" or name.startswith("FAKETIME")}


def unshifted_env() -> dict[str, str]:
    """The environment without libfaketime (`make test-at`), for redis-server: its jemalloc hangs under it at start,
    and Docket reads no time from Redis."""
    return {name: value for name, value in os.environ.items()
            if name != "LD_PRELOAD" and not name.startswith("FAKETIME")}
