"""Markdown pieces of generated pages, and the generated block people write their notes around.

The generated part of a body sits between two markers; people add their notes outside them, and regenerating
replaces only what is inside.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

GENERATED_START = "<!-- docket:generated:start -->"
GENERATED_END = "<!-- docket:generated:end -->"
_GENERATED_RE = re.compile(re.escape(GENERATED_START) + r".*?" + re.escape(GENERATED_END), re.DOTALL)
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|>~])")


def text(value: Any) -> str:
    """A value as inline Markdown that shows exactly as written: specials escaped, no HTML, one line."""
    plain = " ".join(str(value if value is not None else "").split())
    return _MD_SPECIAL.sub(r"\\\1", plain).replace("<", "&lt;")


def number(value: Any, places: int = 2) -> str:
    if value is None:
        return "—"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{float(value):,.{places}f}"


def figure(value: Any) -> str:
    """A number as the store or a person wrote it ("176200", "1180", "2.5") with its thousands separated ("176,200"),
    every decimal kept; any other value ("true", "22:00", a name) as inline text."""
    try:
        amount = Decimal(str(value))
    except (InvalidOperation, ValueError):
        return text(value)
    return text(f"{amount:,f}") if amount.is_finite() else text(value)


def quote(value: str) -> str:
    """Multi-line text (a rationale) as a Markdown block quote; its own Markdown is kept (and sanitized later)."""
    lines = (value or "").replace("\r\n", "\n").strip().split("\n")
    return "\n".join(f"> {line}".rstrip() for line in lines)


def quote_text(value: str | None) -> str:
    """Text someone outside the committee wrote (a team's appeal, a policy proposal) as a block quote of exactly
    what they typed: each line's Markdown escaped (as `text` does), so a link shows as its plain URL, an image
    as its address, and no HTML reaches the record, its PDF or its search; line breaks and paragraphs kept."""
    lines = (value or "").replace("\r\n", "\n").strip().split("\n")
    return "\n".join(f"> {text(line)}".rstrip() + ("  " if text(line) else "") for line in lines).rstrip()


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def merge_generated(previous_body: str | None, generated: str, notes_placeholder: str) -> str:
    """Put a freshly generated block into a body, keeping everything people wrote outside the old block."""
    block = f"{GENERATED_START}\n{generated.strip()}\n{GENERATED_END}"
    if previous_body is None:
        return f"{block}\n\n{notes_placeholder}\n"
    if _GENERATED_RE.search(previous_body):
        return _GENERATED_RE.sub(lambda _m: block, previous_body, count=1)
    # Someone removed the markers: keep all their text, below the new block.
    return f"{block}\n\n{previous_body.strip()}\n"


@dataclass(frozen=True)
class GeneratedSplit:
    """A body around its generated block: what people wrote above and below it, and the block (markers included)."""

    above: str
    block: str
    below: str


def generated_split(body: str) -> GeneratedSplit | None:
    """The body's first generated block and the text around it, or None for a body without one."""
    match = _GENERATED_RE.search(body)
    if match is None:
        return None
    return GeneratedSplit(body[: match.start()].strip("\n"), match.group(0), body[match.end():].strip("\n"))


def generated_join(*, above: str, block: str, below: str) -> str:
    """The inverse of generated_split, laid out as merge_generated lays out a new body (block, blank line, notes)."""
    above, below = _without_markers(above).strip("\n"), _without_markers(below).strip("\n")
    return (f"{above}\n\n" if above else "") + block + (f"\n\n{below}\n" if below else "\n")


def _without_markers(text: str) -> str:
    """People's text never carries a block of its own: a pasted block loses its content, stray markers go."""
    return _GENERATED_RE.sub("", text).replace(GENERATED_START, "").replace(GENERATED_END, "")
