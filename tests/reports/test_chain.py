"""The hash chain's pure functions: canonical JSON and links."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from reports import chain
from reports.models import GENESIS_HASH


def payload(**overrides: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "page_slug": "charter", "number": 1, "position": 1, "title": "Charter", "body": "Text", "data": {},
        "summary": "First", "author_name": "Chris Chair",
        "created_at": datetime(2026, 1, 5, 9, 30, tzinfo=UTC), "restored_from": None}
    values.update(overrides)
    return chain.revision_payload(**values)


def test_canonical_json_sorts_keys_and_drops_whitespace():
    assert chain.canonical_json({"b": 1, "a": [1, 2], "é": "ü"}) == '{"a":[1,2],"b":1,"é":"ü"}'


def test_canonical_json_refuses_values_json_cannot_hold_exactly():
    with pytest.raises(TypeError):
        chain.canonical_json({"when": datetime.now(tz=UTC)})
    with pytest.raises(ValueError):
        chain.canonical_json({"x": float("nan")})


def test_time_is_written_in_utc_with_microseconds_whatever_the_zone():
    paris = timezone(timedelta(hours=1))
    assert chain.timestamp(datetime(2026, 1, 5, 10, 30, tzinfo=paris)) == "2026-01-05T09:30:00.000000+00:00"
    with pytest.raises(ValueError):
        chain.timestamp(datetime(2026, 1, 5, 10, 30))


def test_link_hash_is_sha256_of_previous_hash_then_canonical_json():
    data = payload()
    expected = hashlib.sha256((GENESIS_HASH + chain.canonical_json(data)).encode()).hexdigest()
    assert chain.link_hash(GENESIS_HASH, data) == expected


@pytest.mark.parametrize("field,value", [("body", "Text!"), ("author_name", "Mallory"), ("number", 2),
                                         ("summary", "Other"), ("data", {"x": 1}), ("page_slug", "minutes"),
                                         ("created_at", datetime(2026, 1, 5, 9, 30, 0, 1, tzinfo=UTC))])
def test_any_change_of_content_author_time_or_number_changes_the_hash(field, value):
    assert chain.link_hash(GENESIS_HASH, payload(**{field: value})) != chain.link_hash(GENESIS_HASH, payload())


def _rows(n):
    rows, running = [], GENESIS_HASH
    for i in range(1, n + 1):
        data = payload(position=i, number=i, body=f"v{i}")
        digest = chain.link_hash(running, data)
        rows.append(chain.ChainRow(pk=i, page_slug="charter", number=i, position=i, prev_hash=running, hash=digest,
                                   payload=data))
        running = digest
    return rows


def test_verify_rows_passes_an_intact_chain_and_reports_its_head():
    rows = _rows(4)
    report = chain.verify_rows(rows, expected_head=(4, rows[-1].hash))
    assert report.ok and report.checked == 4 and report.head_hash == rows[-1].hash


def test_verify_rows_names_the_row_after_a_gap():
    rows = _rows(4)
    report = chain.verify_rows([rows[0], rows[2], rows[3]])
    assert not report.ok and report.first_bad is not None
    assert report.first_bad.pk == 3 and "missing" in report.problem


def test_verify_rows_catches_a_truncated_tail_through_the_recorded_head():
    rows = _rows(4)
    report = chain.verify_rows(rows[:3], expected_head=(4, rows[-1].hash))
    assert not report.ok and report.first_bad is None and "position 3" in report.problem
