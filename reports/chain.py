"""The archive's hash chain: canonical JSON of a revision and sha256 links between revisions.

Pure functions on plain data, so the chain can be recomputed anywhere (the verify command, a
test, or an auditor's own script reading an export of the table):

    hash(n) = sha256_hex(hash(n-1) + canonical_json(payload(n)))      hash(0) = "0" * 64

The payload holds everything a reader relies on: the page, the revision's number and place in
the chain, title, Markdown body, structured data, edit summary, author, time and what it restored.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.utils.translation import gettext as _

from reports.models import GENESIS_HASH


def canonical_json(value: Any) -> str:
    """JSON with sorted keys, no insignificant whitespace, UTF-8 text kept as is.

    Only JSON-native values are accepted (dicts with string keys, lists, strings, numbers,
    booleans, null): a Decimal or a datetime must be converted by the caller, so two machines can
    never disagree on how it was written.
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def normalize_data(value: Any) -> Any:
    """The value as it will read back from a JSON column (tuples become lists, key order dropped)."""
    return json.loads(canonical_json(value))


def timestamp(value: datetime) -> str:
    """A revision's time in the chain: UTC, ISO 8601, microseconds always written."""
    if value.tzinfo is None:
        raise ValueError("revision times must be timezone-aware")
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def revision_payload(
    *,
    page_slug: str,
    number: int,
    position: int,
    title: str,
    body: str,
    data: Any,
    summary: str,
    author_name: str,
    created_at: datetime,
    restored_from: int | None,
) -> dict[str, Any]:
    return {
        "page": page_slug,
        "number": number,
        "position": position,
        "title": title,
        "body": body,
        "data": data,
        "summary": summary,
        "author": author_name,
        "time": timestamp(created_at),
        "restored_from": restored_from,
    }


def link_hash(prev_hash: str, payload: Mapping[str, Any]) -> str:
    return hashlib.sha256((prev_hash + canonical_json(payload)).encode("utf-8")).hexdigest()


def payload_of(revision: Any) -> dict[str, Any]:
    """The payload of a stored PageRevision (its page must be loaded or loadable)."""
    return revision_payload(
        page_slug=revision.page.slug,
        number=revision.number,
        position=revision.position,
        title=revision.title,
        body=revision.body,
        data=revision.data,
        summary=revision.summary,
        author_name=revision.author_name,
        created_at=revision.created_at,
        restored_from=revision.restored_from,
    )


@dataclass(frozen=True)
class ChainRow:
    """What verification needs of one stored revision."""

    pk: int
    page_slug: str
    number: int
    position: int
    prev_hash: str
    hash: str
    payload: Mapping[str, Any]


@dataclass(frozen=True)
class ChainReport:
    ok: bool
    checked: int
    head_position: int
    head_hash: str
    first_bad: ChainRow | None = None
    problem: str = ""


def verify_rows(rows: Iterable[ChainRow], *, expected_head: tuple[int, str] | None = None) -> ChainReport:
    """Walk the rows in chain order (by position) and stop at the first that does not match.

    A row fails when its position is not the next one (a deleted or moved row), when its stored
    previous hash is not the hash computed so far (rows swapped or one removed), or when its own
    hash is not what its content gives (a changed field). `expected_head` is the (position, hash)
    the archive claims as its head; a shorter chain than claimed means its last rows are gone.
    """
    running = GENESIS_HASH
    checked = 0
    for row in rows:
        expected_position = checked + 1
        if row.position != expected_position:
            return ChainReport(
                False,
                checked,
                checked,
                running,
                row,
                _("position %(found)d where %(expected)d was expected: a revision is missing or moved")
                % {"found": row.position, "expected": expected_position},
            )
        if row.prev_hash != running:
            return ChainReport(
                False, checked, checked, running, row, _("its previous hash does not match the revision before it")
            )
        recomputed = link_hash(running, row.payload)
        if recomputed != row.hash:
            return ChainReport(
                False,
                checked,
                checked,
                running,
                row,
                _("its content hashes to %(recomputed)s, not the stored %(stored)s")
                % {"recomputed": recomputed, "stored": row.hash},
            )
        running = row.hash
        checked += 1
    if expected_head is not None and expected_head != (checked, running):
        position, head_hash = expected_head
        return ChainReport(
            False,
            checked,
            checked,
            running,
            None,
            _(
                "the recorded head is position %(position)d (%(head)s), but the chain ends at position %(end)d "
                "(%(running)s): revisions after position %(end)d are missing or changed"
            )
            % {"position": position, "head": head_hash, "end": checked, "running": running},
        )
    return ChainReport(True, checked, checked, running)
