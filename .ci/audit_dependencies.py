"""pip-audit on requirements.txt, reported for CI: a known vulnerability fails, no advisory data does not.

pip-audit needs PyPI's JSON API (its vulnerability data). Where that cannot be reached (a proxy
that serves only package files, no network), this says why and exits 0, so CI does not go red
for the network; when the data is there, any known vulnerability exits 1 and names it.

Usage: python .ci/audit_dependencies.py [path/to/pip-audit]   (default: pip-audit on PATH)
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS = ROOT / "requirements.txt"
REQUIREMENTS_LDAP = ROOT / "requirements-ldap.txt"  # optional at install, audited all the same


def main() -> int:
    tool = shutil.which(sys.argv[1] if len(sys.argv) > 1 else "pip-audit")
    if not tool:
        print("pip-audit: not installed; nothing audited")
        return 0
    with tempfile.TemporaryDirectory() as folder:
        report_path = Path(folder) / "report.json"
        result = subprocess.run(  # noqa: S603 (our own tool, our own arguments)
            [tool, "-r", str(REQUIREMENTS), "-r", str(REQUIREMENTS_LDAP), "--progress-spinner", "off", "-f", "json",
             "-o", str(report_path)],
            capture_output=True, text=True, timeout=900, check=False,
        )
        report = json.loads(report_path.read_text()) if report_path.is_file() and report_path.stat().st_size else None
    if report is None:
        reason = (result.stderr.strip().splitlines() or ["no output"])[-1]
        print(f"pip-audit: could not audit (advisory service unreachable?): {reason}")
        return 0
    dependencies = report.get("dependencies", [])
    vulnerable = [d for d in dependencies if d.get("vulns")]
    skipped = [d for d in dependencies if d.get("skip_reason")]
    for dependency in vulnerable:
        for vuln in dependency["vulns"]:
            fixes = ", ".join(vuln.get("fix_versions") or []) or "no fix yet"
            print(f"pip-audit: {dependency['name']} {dependency.get('version', '')}: {vuln['id']} (fixed in {fixes})")
    if vulnerable:
        print(f"pip-audit: {len(vulnerable)} vulnerable package(s); see docs/security.md")
        return 1
    audited = len(dependencies) - len(skipped)
    if dependencies and not audited:
        print(f"pip-audit: no advisory data reachable: {skipped[0]['skip_reason']} (and {len(skipped) - 1} more); "
              "nothing audited")
        return 0
    print(f"pip-audit: no known vulnerabilities in {audited} package(s)"
          + (f"; {len(skipped)} could not be audited" if skipped else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
