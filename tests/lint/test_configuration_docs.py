"""docs/configuration.md documents every environment variable config/settings.py reads, and no other."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ENV_HELPERS = re.compile(r"^env_[a-z]+$")


def variables_read_by_settings() -> set[str]:
    """The first argument of every env_*("NAME", …) call in config/settings.py."""
    tree = ast.parse((REPO / "config" / "settings.py").read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and ENV_HELPERS.match(node.func.id):
            first = node.args[0] if node.args else None
            assert isinstance(first, ast.Constant) and isinstance(first.value, str), (
                f"line {node.lineno}: {node.func.id}() must name its variable as a string literal"
            )
            names.add(first.value)
    return names


def variables_documented() -> set[str]:
    """The `NAME`s in the first column of the table in docs/configuration.md."""
    names = set()
    for line in (REPO / "docs" / "configuration.md").read_text().splitlines():
        if line.startswith("| `"):
            first_column = line.split("|")[1]
            names.update(re.findall(r"`([A-Z][A-Z0-9_]*)`", first_column))
    return names


def test_settings_read_the_variables_this_test_expects():
    read = variables_read_by_settings()
    assert {"DEBUG", "SECRET_KEY", "DATABASE_URL", "CACHE_URL", "LOG_LEVEL", "SITE_URL", "PORT"} <= read
    assert len(read) >= 40


def test_every_variable_the_settings_read_is_documented():
    missing = variables_read_by_settings() - variables_documented()
    assert not missing, f"add to docs/configuration.md: {', '.join(sorted(missing))}"


def test_the_documentation_names_no_variable_the_settings_do_not_read():
    stale = variables_documented() - variables_read_by_settings()
    assert not stale, f"docs/configuration.md documents variables nothing reads: {', '.join(sorted(stale))}"
