"""Static security scan, run by `make lint`: bandit at medium severity and above, against a reviewed baseline.

`bandit -r allocations committee policy reports config core scheduler/src -ll` must report nothing that
bandit-accepted.toml does not list with a reason; an accepted entry that matches nothing any more fails too, so the
baseline never hides a new finding behind an old one. (pip-audit needs PyPI's advisory data, so
it runs in .ci/run and `make audit`, not here.)
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("allocations", "committee", "policy", "reports", "config", "core", "scheduler/src")


def bandit_findings() -> Counter[tuple[str, str]]:
    """(file, test id) → number of medium/high findings, from a bandit run in a subprocess."""
    result = subprocess.run(
        [sys.executable, "-m", "bandit", "-r", *SCANNED, "-ll", "-f", "json", "-q", "-x", "*/migrations/*"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )
    assert result.returncode in (0, 1), result.stderr  # 1 means "found something", which we judge below
    report = json.loads(result.stdout)
    assert not report["errors"], report["errors"]
    return Counter((Path(r["filename"]).as_posix(), r["test_id"]) for r in report["results"])


def accepted() -> dict[tuple[str, str], int]:
    entries = tomllib.loads((ROOT / "bandit-accepted.toml").read_text())["accepted"]
    for entry in entries:
        assert entry.get("reason", "").strip(), f"{entry['file']} {entry['test']}: an accepted finding needs a reason"
    return {(entry["file"], entry["test"]): entry["count"] for entry in entries}


def test_bandit_finds_nothing_beyond_the_reviewed_baseline() -> None:
    found, allowed = bandit_findings(), accepted()
    new = {key: count for key, count in found.items() if count > allowed.get(key, 0)}
    assert not new, f"bandit findings not in bandit-accepted.toml (fix them, or accept them with a reason): {new}"
    stale = {key: count for key, count in allowed.items() if found.get(key, 0) < count}
    assert not stale, f"bandit-accepted.toml accepts more than bandit finds; lower or remove: {stale}"
