"""The dependency audit's verdicts (.ci/audit_dependencies.py, run by .ci/run and `make audit`), with a stand-in for
pip-audit: a known vulnerability fails the run and is named; no advisory data, or no pip-audit, says so and passes.
(bandit runs with `make lint`: tests/lint/test_bandit.py.)
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

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
