"""The type checker runs with the tests: `mypy` over every app, sso, config, core, tests and the scheduler package
reports nothing.

Its settings are pyproject.toml's [tool.mypy] (the Django and DRF plugins, migrations and bench/ left
out); the checker and the stubs are pinned in requirements-dev.txt. A fresh cache in the test's
temporary directory keeps the run independent of whatever a developer's own runs left behind.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHECKED = ("allocations", "committee", "policy", "reports", "sso", "config", "core", "tests", "scheduler/src")


def test_mypy_finds_no_type_errors(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path / "mypy_cache"), *CHECKED],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )
    assert result.returncode == 0, f"mypy found problems:\n{result.stdout}{result.stderr}"
