"""Cutting a long generated record into pages: every chunk fits, reads on its own, and nothing is lost."""

from __future__ import annotations

from reports.records import split_generated, table

HEADER = ["Rank", "Request", "Team"]
ROWS = [[str(i), f"Request number {i:03d}", f"Team {i % 7}"] for i in range(1, 121)]
TEXT = (
    "_Generated._\n\n## Summary\n\n- Week: 2026-W50\n\n## Ranking\n\n" + table(HEADER, ROWS)
    + "\n\n## Decisions and rationale\n\n"
    + "\n\n".join(f"### {i}. Request number {i:03d}\n\n> " + "Because. " * (i % 13 + 1) for i in range(1, 41))
    + "\n\n## Demand and capacity\n\n—\n"
)


def test_a_text_that_fits_stays_whole():
    assert split_generated(TEXT, first=len(TEXT), rest=len(TEXT)) == [TEXT.strip("\n")]


def test_every_chunk_fits_and_together_they_hold_every_line_in_order():
    chunks = split_generated(TEXT, first=1_000, rest=1_500)
    assert len(chunks) > 4
    assert len(chunks[0]) <= 1_000 and all(len(chunk) <= 1_500 for chunk in chunks[1:])
    joined = "\n".join(chunks)
    position = 0
    for line in (line for line in TEXT.split("\n") if line):
        position = joined.index(line, position) + len(line)


def test_a_chunk_that_starts_inside_a_table_repeats_its_header_and_heading():
    chunks = split_generated(TEXT, first=600, rest=900)
    inside = [chunk for chunk in chunks if chunk.startswith("## Ranking (continued)")]
    assert inside
    for chunk in inside:
        lines = chunk.split("\n")
        assert lines[2:4] == ["| Rank | Request | Team |", "|---|---|---|"]
        assert lines[4].startswith("| ")  # a row follows the header, not a second separator
    assert any(chunk.startswith("## Decisions and rationale (continued)") for chunk in chunks)


def test_a_line_longer_than_a_page_is_cut_inside_and_kept_whole():
    long_line = "> " + "x" * 2_500
    chunks = split_generated("## Decisions\n\n" + long_line + "\n\nend", first=1_000, rest=1_000)
    assert all(len(chunk) <= 1_000 for chunk in chunks)
    assert "".join(chunks).count("x") == 2_500 and chunks[-1].endswith("end")
