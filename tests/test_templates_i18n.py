"""Every user-facing string is marked for translation, and the zh-hans catalogue translates every one.

Strips what Django translates or renders ({% translate %}, {% blocktranslate %}, {{ … }},
tags, comments, scripts, styles, URL paths) and fails on any word left over, naming the
template. Attribute texts a person reads (title, placeholder, aria-label, alt) count too.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

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

# Python's format directives, named or not, and the markup a translation must carry over unchanged: Plotly's
# hover placeholders, HTML tags, code spans.
PY_FORMAT = re.compile(r"%(?:\([\w.]+\))?[#0 +-]*\d*(?:\.\d+)?[diouxXeEfFgGcrsa%]")
MARKUP = re.compile(r"%\{[^}]*\}|</?(?:a|b|br|code|em|i|kbd|mark|small|strong)\b[^>]*>|`[^`]+`")


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
    missing = [entry_label(entry) for entry in messages(entries) if entry.untranslated]
    fuzzy = [entry_label(entry) for entry in messages(entries) if "fuzzy" in entry.flags]
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
                faults.append(f"{entry_label(entry)}: {sorted(got.elements())} instead of {sorted(wanted.elements())}")
        elif PY_FORMAT.search(translation.replace("%%", "")) and not PY_FORMAT.search(entry.msgid):
            faults.append(f"{entry_label(entry)}: a % directive in a string that is not formatted")
        markup, wanted_markup = MARKUP.findall(translation), MARKUP.findall(sources[-1])
        if Counter(markup) != Counter(wanted_markup):
            faults.append(f"{entry_label(entry)}: markup {markup} instead of {wanted_markup}")
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
    faults = [fault for entry in catalogue_entries() for fault in _placeholder_faults(entry)]
    assert not faults, "\n".join(faults[:20])


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
    assert mo_catalogue(ZH_HANS_MO) == _po_catalogue(catalogue_entries()), (
        "django.mo is out of step with django.po: run `make messages` and commit both"
    )


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
