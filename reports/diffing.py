"""Side-by-side differences between two texts, computed when a page is viewed (never stored).

`difflib.SequenceMatcher` pairs lines; within a changed pair a second, word-level match
marks what exactly changed. The result is plain data (rows of segments) that a template escapes
and renders, and that the API returns as JSON.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from reports.chain import canonical_json

CONTEXT_LINES = 3
# Above this many characters a line pair is shown as wholly changed rather than compared
# character by character (SequenceMatcher is quadratic in the worst case).
INTRALINE_LIMIT = 2000


@dataclass(frozen=True)
class Segment:
    text: str
    changed: bool


@dataclass(frozen=True)
class DiffRow:
    """One line of the side-by-side view. `kind` is equal, insert, delete or replace."""

    kind: str
    left_number: int | None
    left: tuple[Segment, ...]
    right_number: int | None
    right: tuple[Segment, ...]


@dataclass(frozen=True)
class Hunk:
    rows: tuple[DiffRow, ...]
    left_start: int
    right_start: int


@dataclass(frozen=True)
class TextDiff:
    hunks: tuple[Hunk, ...]
    added: int
    removed: int

    @property
    def changed(self) -> bool:
        return bool(self.hunks)


@dataclass(frozen=True)
class FieldDiff:
    name: str
    label: str
    diff: TextDiff


@dataclass
class RevisionDiff:
    fields: list[FieldDiff] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return any(f.diff.changed for f in self.fields)


_TOKEN_RE = re.compile(r"\w+|\s+|[^\w\s]")


def _segments(old: str, new: str) -> tuple[tuple[Segment, ...], tuple[Segment, ...]]:
    """Mark what changed within a changed line, word by word (characters would fragment words)."""
    if len(old) + len(new) > INTRALINE_LIMIT:
        return (Segment(old, True),), (Segment(new, True),)
    old_tokens = _TOKEN_RE.findall(old)
    new_tokens = _TOKEN_RE.findall(new)
    matcher = difflib.SequenceMatcher(None, old_tokens, new_tokens, autojunk=False)
    left: list[Segment] = []
    right: list[Segment] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if i2 > i1:
            left.append(Segment("".join(old_tokens[i1:i2]), tag != "equal"))
        if j2 > j1:
            right.append(Segment("".join(new_tokens[j1:j2]), tag != "equal"))
    return tuple(left), tuple(right)


def diff_text(old: str, new: str, *, context: int = CONTEXT_LINES) -> TextDiff:
    """The changed regions of `old` → `new`, each with `context` unchanged lines around it."""
    old_lines = old.splitlines()
    new_lines = new.splitlines()
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    hunks: list[Hunk] = []
    added = removed = 0
    if old_lines == new_lines:
        return TextDiff((), 0, 0)
    for group in matcher.get_grouped_opcodes(context):
        rows: list[DiffRow] = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for offset in range(i2 - i1):
                    line = old_lines[i1 + offset]
                    rows.append(DiffRow("equal", i1 + offset + 1, (Segment(line, False),), j1 + offset + 1,
                                        (Segment(line, False),)))
                continue
            removed += i2 - i1
            added += j2 - j1
            for offset in range(max(i2 - i1, j2 - j1)):
                has_left = i1 + offset < i2
                has_right = j1 + offset < j2
                left_line = old_lines[i1 + offset] if has_left else ""
                right_line = new_lines[j1 + offset] if has_right else ""
                if has_left and has_right:
                    left, right = _segments(left_line, right_line)
                    rows.append(DiffRow("replace", i1 + offset + 1, left, j1 + offset + 1, right))
                elif has_left:
                    rows.append(DiffRow("delete", i1 + offset + 1, (Segment(left_line, True),), None, ()))
                else:
                    rows.append(DiffRow("insert", None, (), j1 + offset + 1, (Segment(right_line, True),)))
        first = group[0]
        hunks.append(Hunk(tuple(rows), first[1] + 1, first[3] + 1))
    return TextDiff(tuple(hunks), added, removed)


def data_text(data: Any) -> str:
    """Structured data as stable, line-per-value text, so its changes diff line by line."""
    if data in (None, {}, []):
        return ""
    return json.dumps(json.loads(canonical_json(data)), indent=2, sort_keys=True, ensure_ascii=False)


def diff_snapshots(old: dict[str, Any], new: dict[str, Any], *, labels: dict[str, str]) -> RevisionDiff:
    """Compare two snapshots field by field: {"title": …, "body": …, "data": …} in, one FieldDiff each out."""
    result = RevisionDiff()
    for name, label in labels.items():
        old_value = old.get(name)
        new_value = new.get(name)
        if name == "data":
            old_text, new_text = data_text(old_value), data_text(new_value)
        else:
            old_text, new_text = str(old_value or ""), str(new_value or "")
        result.fields.append(FieldDiff(name, label, diff_text(old_text, new_text)))
    return result


def unified(old: str, new: str, *, old_name: str, new_name: str) -> str:
    """The same change as a unified diff, for the API and for people who prefer patches."""
    return "".join(
        difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True), fromfile=old_name, tofile=new_name
        )
    )


def as_json(diff: TextDiff) -> list[dict[str, Any]]:
    return [
        {
            "left_start": hunk.left_start,
            "right_start": hunk.right_start,
            "rows": [
                {
                    "kind": row.kind,
                    "left_number": row.left_number,
                    "left": [{"text": s.text, "changed": s.changed} for s in row.left],
                    "right_number": row.right_number,
                    "right": [{"text": s.text, "changed": s.changed} for s in row.right],
                }
                for row in hunk.rows
            ],
        }
        for hunk in diff.hunks
    ]
