"""Views read numbers and quarters through core/parsers.py only (docs/maintaining.md, "Read a parameter").

Read from the source with ast: no view module calls `str.isdigit()`, `isdecimal()` or `isnumeric()` (they
take "²" or full-width digits that `int()` then refuses: a 500). (The scheduler package's own copy,
`docket_scheduler.base`, is out of Docket's reach: tests/lint/test_app_layers.py.)
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DIGIT_TESTS = {"isdigit", "isdecimal", "isnumeric"}


def view_modules() -> list[Path]:
    found = []
    for app in ("committee", "policy", "reports", "sso", "core"):
        found += [path for path in (ROOT / app).rglob("*.py")
                  if "views" in path.parts or path.name == "views.py"]
    return sorted(found)


def problems(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    where = path.relative_to(ROOT)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in DIGIT_TESTS:
            found.append(f"{where}:{node.lineno} calls .{node.attr}(): use core.parsers.parse_whole_number")
    return found


def test_views_parse_numbers_through_core_parsers() -> None:
    modules = view_modules()
    assert len(modules) > 10
    assert [problem for path in modules for problem in problems(path)] == []
