"""The scheduler package's programs (scheduler/, `docket-scheduler`) as the tests start them.

From an install when `DOCKET_SCHEDULER_BIN` names the `bin` folder of a virtualenv the package's wheel was installed
into (CI does this with a venv without Django: `.ci/run`), else from the source tree (`python -m` with
scheduler/src on the path). The tests that run a program in its own process go through `program()` and
`program_env()`, so the same tests check both.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCHEDULER_SRC = ROOT / "scheduler" / "src"
BIN_VARIABLE = "DOCKET_SCHEDULER_BIN"
MODULES = {
    "docket-slurm-sync": "docket_scheduler.slurm_sync",
    "docket-kueue-sync": "docket_scheduler.kueue_sync",
    "docket-slurm-usage": "docket_scheduler.slurm_usage",
    "docket-prometheus-usage": "docket_scheduler.prometheus_usage",
    "docket-elastic-agent": "docket_scheduler.elastic_agent",
}


def installed_bin() -> Path | None:
    value = os.environ.get(BIN_VARIABLE)
    return Path(value) if value else None


def program(command: str, *, installed: bool = True) -> list[str]:
    """The argv that starts `command` (a console script of the package); from the source tree when no install is
    named, or when `installed` is false (a test whose child needs the suite's pinned clock, which an install
    without the test tools cannot travel to)."""
    bin_dir = installed_bin() if installed else None
    if bin_dir is not None:
        return [str(bin_dir / command)]
    return [sys.executable, "-m", MODULES[command]]


def program_env(env: Mapping[str, str], *, installed: bool = True) -> dict[str, str]:
    """`env` for `program()`: the source tree on PYTHONPATH when it runs from there."""
    if installed and installed_bin() is not None:
        return dict(env)
    path = os.pathsep.join(filter(None, [str(SCHEDULER_SRC), env.get("PYTHONPATH", "")]))
    return {**env, "PYTHONPATH": path}
