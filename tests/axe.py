"""axe-core (Deque's accessibility rules) in the browser tests: `assert_accessible(page, where)`.

axe-core is a test asset only: pinned in tests/a11y/package.json, installed by npm into the tests' cache (as the
OpenID provider of tests/sso is) the first time a test asks for it, and evaluated in the page under test through
Playwright (the page's CSP is not loosened: nothing is added to what Docket serves). To move to a newer axe-core,
change the pin in tests/a11y/package.json (`npm view axe-core version` names the newest); the cache folder is
keyed by that file's hash, so the next run installs it. Without node/npm the tests that ask skip locally and fail
in CI (`tests.conftest.require`).
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

from tests.conftest import require
from tests.sso.servers import CACHE

HERE = Path(__file__).resolve().parent / "a11y"
# What fails a page: axe's two worst impacts. "minor" and "moderate" findings are printed by a failing test only.
FAILING = ("critical", "serious")


@cache
def axe_source() -> str:
    """The text of axe.min.js, installed once per version (under a lock: xdist workers share the cache)."""
    require(shutil.which("npm") is not None, "npm (apt-get install npm), for axe-core")
    manifest = (HERE / "package.json").read_bytes()
    folder = CACHE / f"axe-core-{hashlib.sha256(manifest).hexdigest()[:12]}"
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "node_modules" / "axe-core" / "axe.min.js"
    with (folder / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not script.exists():
            (folder / "package.json").write_bytes(manifest)
            done = subprocess.run(
                ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=folder, capture_output=True, text=True, timeout=300, check=False,
            )
            assert done.returncode == 0, f"npm install of axe-core failed:\n{done.stdout}\n{done.stderr}"
    return script.read_text(encoding="utf-8")


_RUN = """async () => {
  const results = await window.axe.run(document, {resultTypes: ["violations"]});
  return results.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                                       nodes: v.nodes.slice(0, 5).map(n => n.target.join(" "))}));
}"""


def violations(page: Any) -> list[dict[str, Any]]:
    """axe-core's violations on the page as it is now (axe loaded into it first if it is not there yet)."""
    if not page.evaluate("() => typeof window.axe === 'object'"):
        page.evaluate(axe_source() + "\n;0")  # evaluated by the browser's debugger protocol: the page's CSP allows it
    return page.evaluate(_RUN)


def assert_accessible(page: Any, where: str) -> None:
    """No critical or serious axe-core violation on the page."""
    found = [v for v in violations(page) if v["impact"] in FAILING]
    assert not found, f"axe-core on {where}: " + "; ".join(
        f"{v['impact']} {v['id']} ({v['help']}): {', '.join(v['nodes'])}" for v in found)
