"""The apps depend one way: reports ──> policy ──> committee ──> allocations ──> governed (DESIGN.md, "Architecture";
governed is the store of the governed parameters, docs/maintaining.md), with
`core` under all of them, naming none, and `sso` beside reports, above committee, imported by no app. The scheduler
package (scheduler/) and Docket import nothing of each other.

Read from the source with ast: a package may import only the packages it stands on. A module-level import and one
inside a function count alike, so a "lazy" import cannot hide a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("governed", "allocations", "committee", "policy", "reports")  # each may import only those before it, and core
PACKAGES = ("core", *LAYERS, "sso")
ALLOWED: dict[str, set[str]] = {
    "core": set(),
    **{app: {"core", *LAYERS[: LAYERS.index(app)]} for app in LAYERS},
    "sso": {"core", "governed", "allocations", "committee"},
}
DOCKET = (*PACKAGES, "config")


def top_level_imports(path: Path) -> set[str]:
    """Every package a module imports (absolute imports, at module level or inside a function)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def imported_apps(path: Path) -> set[str]:
    return top_level_imports(path) & set(PACKAGES)


def upward_imports(app: str) -> list[str]:
    refused = set(PACKAGES) - ALLOWED[app] - {app}
    return sorted(
        f"{path.relative_to(ROOT)} imports {', '.join(sorted(imported_apps(path) & refused))}"
        for path in (ROOT / app).rglob("*.py")
        if imported_apps(path) & refused
    )


@pytest.mark.parametrize("app", PACKAGES)
def test_app_imports_only_the_apps_below_it(app: str) -> None:
    assert upward_imports(app) == []


def test_an_upward_import_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = tmp_path / "allocations" / "leak.py"
    module.parent.mkdir()
    module.write_text("def f():\n    from committee.models import GpuRequest\n", encoding="utf-8")
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    assert upward_imports("allocations") == ["allocations/leak.py imports committee"]


def test_core_names_no_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = tmp_path / "core" / "leak.py"
    module.parent.mkdir()
    module.write_text("import committee.selectors\nfrom sso.oidc import oidc_enabled\n", encoding="utf-8")
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    assert upward_imports("core") == ["core/leak.py imports committee, sso"]


def test_docket_never_imports_the_scheduler_package() -> None:
    """The scheduler side (scheduler/, `docket_scheduler`) is installed on scheduler hosts, apart from Docket; Docket
    talks to it through the API only, so it runs, ships and deploys without it."""
    found = sorted(
        str(path.relative_to(ROOT))
        for app in DOCKET
        for path in (ROOT / app).rglob("*.py")
        if "docket_scheduler" in top_level_imports(path)
    )
    assert found == []


def test_the_scheduler_package_imports_no_part_of_docket() -> None:
    source = ROOT / "scheduler" / "src"
    found = sorted(
        f"{path.relative_to(ROOT)} imports {', '.join(sorted(top_level_imports(path) & set(DOCKET)))}"
        for path in source.rglob("*.py")
        if top_level_imports(path) & {*DOCKET, "django", "rest_framework"}
    )
    assert found == []
