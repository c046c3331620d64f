"""Every user-facing string is marked for translation, and the zh-hans catalogue translates every one.

Strips what Django translates or renders ({% translate %}, {% blocktranslate %}, {{ … }},
tags, comments, scripts, styles, URL paths) and fails on any word left over, naming the
template. Attribute texts a person reads (title, placeholder, aria-label, alt) count too.
"""

from __future__ import annotations

import gettext
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.catalogue import ZH_HANS_MO, ZH_HANS_PO, Entry, messages, parse_po
from tests.conftest import require

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"

# Proper names, and Pico CSS's styling hook (it selects nav[aria-label=breadcrumb]).
ALLOWED_WORDS = {"Docket"}
ALLOWED_ATTRIBUTES = {"breadcrumb"}

STRIP = [
    re.compile(r"{%\s*blocktranslate.*?{%\s*endblocktranslate\s*%}", re.S),
    re.compile(r"{#.*?#}", re.S),
    re.compile(r"{%\s*comment\s*%}.*?{%\s*endcomment\s*%}", re.S),
    re.compile(r"<(script|style)\b.*?</\1>", re.S),
    re.compile(r"{{.*?}}", re.S),
]
ATTRIBUTE = re.compile(r'\b(?:placeholder|title|aria-label|alt)="([^"{]*[A-Za-z][^"{]*)"')


def untranslated(text: str) -> tuple[list[str], list[str]]:
    for pattern in STRIP:
        text = pattern.sub(" ", text)
    attributes = [value for value in ATTRIBUTE.findall(text) if value not in ALLOWED_ATTRIBUTES]
    text = re.sub(r"{%.*?%}", " ", text, flags=re.S)
    text = re.sub(r"<[^>]*>", " ", text, flags=re.S)
    text = re.sub(r"&[a-z#0-9]+;", " ", text)
    text = re.sub(r"(?<!\w)/[\w/.-]*", " ", text)  # URL paths shown as such
    words = [word for word in re.findall(r"[A-Za-z][A-Za-z'’-]+", text) if word not in ALLOWED_WORDS]
    return words, attributes


def test_the_checker_catches_an_unmarked_string():
    assert untranslated('<p>Hello {{ name }}</p><a title="Open it">{% translate "Go" %}</a>') == (
        ["Hello"],
        ["Open it"],
    )


def test_every_template_string_is_marked_for_translation():
    offenders = {}
    for path in sorted(TEMPLATES.rglob("*.html")):
        words, attributes = untranslated(path.read_text())
        if words or attributes:
            offenders[str(path.relative_to(TEMPLATES))] = words[:10] + attributes[:5]
    assert not offenders, f"untranslated text in templates: {offenders}"


# --- the zh-hans catalogue: complete, in step with the sources, placeholders kept, compiled --------------------

ROOT = TEMPLATES.parent
# What `make messages` passes to makemessages (Makefile): the test suite and the benchmarks are not the app's text.
MAKEMESSAGES_IGNORE = (".venv", "tests", "bench", "staticfiles", "media", "node_modules")
# Python's format directives, named or not, and the markup a translation must carry over unchanged: Plotly's
# hover placeholders, HTML tags, code spans.
PY_FORMAT = re.compile(r"%(?:\([\w.]+\))?[#0 +-]*\d*(?:\.\d+)?[diouxXeEfFgGcrsa%]")
MARKUP = re.compile(r"%\{[^}]*\}|</?(?:a|b|br|code|em|i|kbd|mark|small|strong)\b[^>]*>|`[^`]+`")


def _catalogue() -> list[Entry]:
    return messages(parse_po(ZH_HANS_PO.read_text(encoding="utf-8")))


def _label(entry: Entry) -> str:
    return f"{entry.msgid!r} ({', '.join(entry.references[:2])})"


def test_the_catalogue_reader_reads_plurals_flags_and_continued_lines():
    entries = parse_po(
        'msgid ""\nmsgstr "Plural-Forms: nplurals=1; plural=0;\\n"\n\n'
        '#: a.py:1\n#, fuzzy, python-format\nmsgid "%(n)d GPU"\nmsgid_plural "%(n)d GPUs"\nmsgstr[0] ""\n"%(n)d 块"\n\n'
        'msgid "Say \\"hi\\""\nmsgstr ""\n'
    )
    header, plural, empty = entries
    assert "nplurals=1" in header.msgstr[0]
    assert (plural.msgid, plural.msgid_plural, plural.translations) == ("%(n)d GPU", "%(n)d GPUs", ["%(n)d 块"])
    assert plural.flags == {"fuzzy", "python-format"} and plural.references == ["a.py:1"]
    assert empty.msgid == 'Say "hi"' and empty.untranslated


def test_every_message_has_a_chinese_translation_that_is_not_fuzzy():
    entries = parse_po(ZH_HANS_PO.read_text(encoding="utf-8"))
    header = entries[0]
    assert header.msgid == "" and "fuzzy" not in header.flags
    assert "Plural-Forms: nplurals=1; plural=0;" in header.msgstr[0]
    missing = [_label(entry) for entry in messages(entries) if entry.untranslated]
    fuzzy = [_label(entry) for entry in messages(entries) if "fuzzy" in entry.flags]
    assert len(messages(entries)) > 1000
    assert not missing, f"{len(missing)} messages have no translation, e.g. {missing[:5]}"
    assert not fuzzy, f"{len(fuzzy)} translations are fuzzy (check them, then drop the flag), e.g. {fuzzy[:5]}"


def _placeholder_faults(entry: Entry) -> list[str]:
    faults = []
    sources = [entry.msgid] + ([entry.msgid_plural] if entry.msgid_plural else [])
    for translation in entry.translations:
        if "python-format" in entry.flags:
            # Every placeholder of the English (the plural form for zh's single form), none added.
            wanted = Counter(PY_FORMAT.findall(sources[-1]))
            if entry.msgid_plural:
                wanted |= Counter(PY_FORMAT.findall(entry.msgid))
            got = Counter(PY_FORMAT.findall(translation))
            if got != wanted:
                faults.append(f"{_label(entry)}: {sorted(got.elements())} instead of {sorted(wanted.elements())}")
        elif PY_FORMAT.search(translation.replace("%%", "")) and not PY_FORMAT.search(entry.msgid):
            faults.append(f"{_label(entry)}: a % directive in a string that is not formatted")
        markup, wanted_markup = MARKUP.findall(translation), MARKUP.findall(sources[-1])
        if Counter(markup) != Counter(wanted_markup):
            faults.append(f"{_label(entry)}: markup {markup} instead of {wanted_markup}")
    return faults


def test_the_placeholder_checker_catches_a_lost_or_renamed_placeholder():
    entry = Entry(msgid="%(n)d of <code>%(total)s</code>", msgstr={0: "%(n)d / <code>%(totl)s</code>"},
                  flags={"python-format"})
    assert len(_placeholder_faults(entry)) == 1
    entry.msgstr[0] = "%(n)d，共 %(total)s"
    assert len(_placeholder_faults(entry)) == 1  # the <code> tags are gone
    entry.msgstr[0] = "<code>%(total)s</code> 中的 %(n)d"
    assert _placeholder_faults(entry) == []
    plural = Entry(msgid="One token is revoked.", msgid_plural="All %(count)d tokens are revoked.",
                   msgstr={0: "已吊销全部令牌。"}, flags={"python-format"})
    assert len(_placeholder_faults(plural)) == 1


def test_translations_keep_every_placeholder_and_markup():
    faults = [fault for entry in _catalogue() for fault in _placeholder_faults(entry)]
    assert not faults, "\n".join(faults[:20])


def _mo_catalogue(path: Path) -> dict[object, str]:
    with path.open("rb") as handle:
        catalog = gettext.GNUTranslations(handle)._catalog  # type: ignore[attr-defined]
    return {key: value for key, value in catalog.items() if key != ""}


def _po_catalogue(entries: list[Entry]) -> dict[object, str]:
    expected: dict[object, str] = {}
    for entry in entries:
        key = entry.msgid if entry.msgctxt is None else f"{entry.msgctxt}\x04{entry.msgid}"
        if entry.msgid_plural is None:
            expected[key] = entry.msgstr[0]
        else:
            for index, text in entry.msgstr.items():
                expected[(key, index)] = text
    return expected


def test_the_committed_mo_file_is_compiled_from_the_po_file():
    """The .mo is committed, so `make run` needs no GNU gettext; it must say what the .po says."""
    assert ZH_HANS_MO.exists(), "locale/zh_Hans/LC_MESSAGES/django.mo is missing: run `make messages`"
    assert _mo_catalogue(ZH_HANS_MO) == _po_catalogue(_catalogue()), (
        "django.mo is out of step with django.po: run `make messages` and commit both"
    )


def test_msgfmt_compiles_the_catalogue_with_its_format_checks(tmp_path):
    """CI compiles the .po with GNU msgfmt --check (placeholders, header) into a scratch file, same as committed."""
    require(shutil.which("msgfmt") is not None, "GNU gettext (msgfmt)")
    compiled = tmp_path / "django.mo"
    result = subprocess.run(
        ["msgfmt", "--check", "-o", str(compiled), str(ZH_HANS_PO)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert _mo_catalogue(compiled) == _mo_catalogue(ZH_HANS_MO)


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
    catalogue = {entry.key: entry for entry in _catalogue()}
    missing = [_label(entry) for entry in extracted if entry.key not in catalogue]
    assert not missing, (
        f"{len(missing)} marked strings are not in locale/zh_Hans (run `make messages`, translate, compile; see "
        f"docs/maintaining.md), e.g. {missing[:5]}"
    )
    plural_changed = [_label(entry) for entry in extracted
                      if entry.key in catalogue and catalogue[entry.key].msgid_plural != entry.msgid_plural]
    assert not plural_changed, f"plural forms changed since the catalogue was made: {plural_changed[:5]}"


def test_the_catalogue_flags_strings_as_python_format_exactly_as_the_sources_do(extracted):
    """The flag decides which placeholders msgfmt and the test above check: it must be the one xgettext gives."""
    catalogue = {entry.key: entry for entry in _catalogue()}
    kinds = {"python-format", "no-python-format"}
    differ = [
        f"{_label(entry)}: {sorted(catalogue[entry.key].flags & kinds)} instead of {sorted(entry.flags & kinds)}"
        for entry in extracted
        if entry.key in catalogue and catalogue[entry.key].flags & kinds != entry.flags & kinds
    ]
    assert not differ, differ[:5]


def test_the_catalogue_holds_no_string_the_sources_no_longer_mark(extracted):
    marked = {entry.key for entry in extracted}
    stale = [_label(entry) for entry in _catalogue() if entry.key not in marked]
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


def test_the_catalogue_leaves_djangos_own_date_words_to_django():
    """A msgid of ours such as "Fri" would replace Django's translation of that word everywhere, the weekday of every
    "D" date format included (it turned 星期五 into 周五 on every Chinese page once): dates get their words from
    Django."""
    from django.utils import dates

    django_words = {
        str(word)
        for table in (dates.WEEKDAYS, dates.WEEKDAYS_ABBR, dates.MONTHS, dates.MONTHS_3, dates.MONTHS_AP)
        for word in table.values()
    }
    entries = parse_po(ZH_HANS_PO.read_text(encoding="utf-8"))
    ours = {entry.msgid for entry in messages(entries) if entry.msgctxt is None}
    assert sorted(ours & django_words) == []
