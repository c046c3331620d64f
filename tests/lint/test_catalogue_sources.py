"""The zh-hans catalogue against the sources, run by `make lint`: GNU gettext extracts every marked string from a copy
of the tree (as `make messages` would) and compiles the catalogue with its format checks; every marked string must be
in the catalogue with the same python-format flag, and the catalogue must hold nothing the sources no longer mark.
The catalogue's own checks (complete, placeholders kept, .mo in step) are behaviour and run with the tests
(tests/test_templates_i18n.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.catalogue import (
    ZH_HANS_MO,
    ZH_HANS_PO,
    Entry,
    catalogue_entries,
    entry_label,
    messages,
    mo_catalogue,
    parse_po,
)
from tests.conftest import require

ROOT = Path(__file__).resolve().parents[2]
# What `make messages` passes to makemessages (Makefile): the test suite, the benchmarks and the scheduler package
# (scheduler/, English command-line programs) are not the app's text.
MAKEMESSAGES_IGNORE = (".venv", "tests", "bench", "staticfiles", "media", "node_modules", "scheduler")


def test_msgfmt_compiles_the_catalogue_with_its_format_checks(tmp_path):
    """CI compiles the .po with GNU msgfmt --check (placeholders, header) into a scratch file, same as committed."""
    require(shutil.which("msgfmt") is not None, "GNU gettext (msgfmt)")
    compiled = tmp_path / "django.mo"
    result = subprocess.run(
        ["msgfmt", "--check", "-o", str(compiled), str(ZH_HANS_PO)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert mo_catalogue(compiled) == mo_catalogue(ZH_HANS_MO)


@pytest.fixture(scope="module")
def extracted(tmp_path_factory: pytest.TempPathFactory) -> list[Entry]:
    """What makemessages finds marked in the sources today, run on a copy of the tree (nothing written here)."""
    require(shutil.which("xgettext") is not None and shutil.which("msgmerge") is not None, "GNU gettext (xgettext)")
    copy = tmp_path_factory.mktemp("sources")
    skip = {*MAKEMESSAGES_IGNORE, "locale", ".git", "docs", ".mypy_cache", ".ruff_cache", ".pytest_cache"}
    for item in ROOT.iterdir():
        if item.name in skip or item.is_symlink():
            continue
        if item.is_dir():
            shutil.copytree(item, copy / item.name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        elif item.suffix in (".py", ".html", ".txt"):  # what makemessages reads; not a local db.sqlite3
            shutil.copy2(item, copy / item.name)
    (copy / "locale").mkdir()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "DEBUG": "1",
           "DATABASE_URL": f"sqlite:///{copy / 'unused.sqlite3'}"}
    command = [sys.executable, "manage.py", "makemessages", "-l", "zh_Hans", "--no-obsolete"]
    command += [f"--ignore={pattern}" for pattern in MAKEMESSAGES_IGNORE]
    result = subprocess.run(command, cwd=copy, env=env, capture_output=True, text=True, check=False, timeout=120)
    assert result.returncode == 0, result.stderr
    return messages(parse_po((copy / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po").read_text(encoding="utf-8")))


def test_every_string_marked_in_the_sources_is_in_the_catalogue(extracted):
    catalogue = {entry.key: entry for entry in catalogue_entries()}
    missing = [entry_label(entry) for entry in extracted if entry.key not in catalogue]
    assert not missing, (
        f"{len(missing)} marked strings are not in locale/zh_Hans (run `make messages`, translate, compile; see "
        f"docs/maintaining.md), e.g. {missing[:5]}"
    )
    plural_changed = [entry_label(entry) for entry in extracted
                      if entry.key in catalogue and catalogue[entry.key].msgid_plural != entry.msgid_plural]
    assert not plural_changed, f"plural forms changed since the catalogue was made: {plural_changed[:5]}"


def test_the_catalogue_flags_strings_as_python_format_exactly_as_the_sources_do(extracted):
    """The flag decides which placeholders msgfmt and the test above check: it must be the one xgettext gives."""
    catalogue = {entry.key: entry for entry in catalogue_entries()}
    kinds = {"python-format", "no-python-format"}
    differ = [
        f"{entry_label(entry)}: {sorted(catalogue[entry.key].flags & kinds)} instead of {sorted(entry.flags & kinds)}"
        for entry in extracted
        if entry.key in catalogue and catalogue[entry.key].flags & kinds != entry.flags & kinds
    ]
    assert not differ, differ[:5]


def test_the_catalogue_holds_no_string_the_sources_no_longer_mark(extracted):
    marked = {entry.key for entry in extracted}
    stale = [entry_label(entry) for entry in catalogue_entries() if entry.key not in marked]
    assert not stale, f"{len(stale)} catalogue entries are marked nowhere now (run `make messages`): {stale[:5]}"


def test_the_extraction_sees_a_newly_marked_string(tmp_path):
    """The check above can fail: a template with a new {% translate %} string is found by the same makemessages run."""
    require(shutil.which("xgettext") is not None, "GNU gettext (xgettext)")
    (tmp_path / "templates").mkdir()
    template = '{% load i18n %}<p>{% translate "A string nobody translated" %}</p>'
    (tmp_path / "templates" / "new.html").write_text(template)
    (tmp_path / "locale").mkdir()
    result = subprocess.run(
        [sys.executable, "-m", "django", "makemessages", "-l", "zh_Hans"],
        cwd=tmp_path, env={**os.environ, "DJANGO_SETTINGS_MODULE": ""}, capture_output=True, text=True, check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    found = messages(parse_po((tmp_path / "locale" / "zh_Hans" / "LC_MESSAGES" / "django.po").read_text()))
    assert [entry.msgid for entry in found] == ["A string nobody translated"]
    assert found[0].untranslated
