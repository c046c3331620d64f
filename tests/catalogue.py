"""A reader for gettext .po files (the standard library has none), enough for the catalogue's tests."""

from __future__ import annotations

import gettext
import re
from dataclasses import dataclass, field
from pathlib import Path

LOCALE = Path(__file__).resolve().parent.parent / "locale"
ZH_HANS_PO = LOCALE / "zh_Hans" / "LC_MESSAGES" / "django.po"
ZH_HANS_MO = LOCALE / "zh_Hans" / "LC_MESSAGES" / "django.mo"

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\"}
_KEYWORD = re.compile(r'^(msgctxt|msgid|msgid_plural|msgstr(?:\[(\d+)\])?)\s+(".*")\s*$')


def _unquote(literal: str) -> str:
    body = literal.strip()
    if not (body.startswith('"') and body.endswith('"')):
        raise ValueError(f"not a quoted string: {literal!r}")
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), "\\" + m.group(1)), body[1:-1])


@dataclass
class Entry:
    msgid: str = ""
    msgid_plural: str | None = None
    msgctxt: str | None = None
    msgstr: dict[int, str] = field(default_factory=dict)
    flags: set[str] = field(default_factory=set)
    references: list[str] = field(default_factory=list)
    obsolete: bool = False

    @property
    def key(self) -> tuple[str | None, str]:
        return (self.msgctxt, self.msgid)

    @property
    def translations(self) -> list[str]:
        return [self.msgstr[index] for index in sorted(self.msgstr)]

    @property
    def untranslated(self) -> bool:
        return not self.msgstr or any(not text for text in self.msgstr.values())


def parse_po(text: str) -> list[Entry]:
    """Every entry of a .po file, the header (msgid "") included, in file order."""
    entries: list[Entry] = []
    entry = Entry()
    started = False
    target: tuple[str, int | None] | None = None

    def finish() -> None:
        nonlocal entry, started, target
        if started:
            entries.append(entry)
        entry, started, target = Entry(), False, None

    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            finish()
            continue
        if line.startswith("#~"):
            entry.obsolete = True
            continue
        if line.startswith("#"):
            if target is not None and target[0] != "comment":
                finish()  # a comment after a msgstr starts the next entry
            if line.startswith("#,"):
                entry.flags.update(flag.strip() for flag in line[2:].split(",") if flag.strip())
            elif line.startswith("#:"):
                entry.references.extend(line[2:].split())
            target = ("comment", None)
            continue
        match = _KEYWORD.match(line)
        if match:
            keyword, index, literal = match.groups()
            if keyword in ("msgctxt", "msgid") and target is not None and target[0] == "msgstr":
                finish()
            started = True
            value = _unquote(literal)
            if keyword == "msgctxt":
                entry.msgctxt, target = value, ("msgctxt", None)
            elif keyword == "msgid":
                entry.msgid, target = value, ("msgid", None)
            elif keyword == "msgid_plural":
                entry.msgid_plural, target = value, ("msgid_plural", None)
            else:
                slot = int(index) if index is not None else 0
                entry.msgstr[slot], target = value, ("msgstr", slot)
            continue
        if line.startswith('"') and target is not None:
            value = _unquote(line)
            kind, continued = target
            if kind == "msgctxt":
                entry.msgctxt = (entry.msgctxt or "") + value
            elif kind == "msgid":
                entry.msgid += value
            elif kind == "msgid_plural":
                entry.msgid_plural = (entry.msgid_plural or "") + value
            elif kind == "msgstr" and continued is not None:
                entry.msgstr[continued] += value
            continue
        raise ValueError(f"line {number}: cannot read {raw!r}")
    finish()
    return [entry for entry in entries if not entry.obsolete]


def messages(entries: list[Entry]) -> list[Entry]:
    """The entries without the header."""
    return [entry for entry in entries if entry.msgid]


def catalogue_entries() -> list[Entry]:
    """The messages of the committed zh-hans catalogue."""
    return messages(parse_po(ZH_HANS_PO.read_text(encoding="utf-8")))


def entry_label(entry: Entry) -> str:
    """An entry as a failure names it: its msgid and where the sources use it."""
    return f"{entry.msgid!r} ({', '.join(entry.references[:2])})"


def mo_catalogue(path: Path) -> dict[object, str]:
    """A compiled .mo file's messages, keyed as gettext keys them."""
    with path.open("rb") as handle:
        catalog = gettext.GNUTranslations(handle)._catalog  # type: ignore[attr-defined]
    return {key: value for key, value in catalog.items() if key != ""}
