"""Static security scan on every change: bandit at medium severity and above, against a reviewed baseline.

`bandit -r allocations committee policy reports config core -ll` must report nothing that bandit-accepted.toml
does not list with a reason; an accepted entry that matches nothing any more fails too, so the
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

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("allocations", "committee", "policy", "reports", "config", "core")


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


# --- the dependency audit's verdicts (.ci/audit_dependencies.py), with a stand-in for pip-audit ----------


FAKE_PIP_AUDIT = """#!/bin/sh
# pip-audit stand-in: writes the report given in $FAKE_REPORT where -o says, or fails like a network error.
while [ $# -gt 0 ]; do [ "$1" = "-o" ] && out="$2"; shift; done
[ -n "$FAKE_REPORT" ] || { echo "ConnectionError: Failed to resolve 'pypi.org'" >&2; exit 1; }
printf '%s' "$FAKE_REPORT" > "$out"
[ -z "$FAKE_VULNERABLE" ]
"""

VULNERABLE = {"dependencies": [{"name": "django", "version": "5.2.19", "vulns": [
    {"id": "PYSEC-0000-1", "fix_versions": ["5.2.20"]}]}]}
CLEAN = {"dependencies": [{"name": "django", "version": "5.2.19", "vulns": []}]}
NO_DATA = {"dependencies": [{"name": "django", "skip_reason": "Dependency not found on PyPI"}]}


@pytest.mark.parametrize(
    ("report", "vulnerable", "returncode", "says"),
    [
        (VULNERABLE, "1", 1, "PYSEC-0000-1 (fixed in 5.2.20)"),
        (CLEAN, "", 0, "no known vulnerabilities in 1 package"),
        (NO_DATA, "", 0, "no advisory data reachable"),
        (None, "", 0, "could not audit"),
    ],
)
def test_dependency_audit_fails_on_a_vulnerability_only(tmp_path: Path, report: dict | None, vulnerable: str,
                                                        returncode: int, says: str) -> None:
    fake = tmp_path / "pip-audit"
    fake.write_text(FAKE_PIP_AUDIT)
    fake.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "FAKE_REPORT": json.dumps(report) if report else "", "FAKE_VULNERABLE": vulnerable}
    result = subprocess.run([sys.executable, ".ci/audit_dependencies.py", str(fake)], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == returncode and says in result.stdout, result.stdout + result.stderr
