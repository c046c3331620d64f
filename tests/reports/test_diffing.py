"""Side-by-side differences computed with difflib."""

from __future__ import annotations

from reports import diffing


def rows(diff):
    return [row for hunk in diff.hunks for row in hunk.rows]


def test_identical_texts_have_no_hunks():
    diff = diffing.diff_text("a\nb", "a\nb")
    assert not diff.changed and diff.added == diff.removed == 0


def test_a_changed_line_is_paired_and_the_changed_words_marked():
    diff = diffing.diff_text("Grant 16 GPUs to Search.", "Grant 8 GPUs to Search.")
    (row,) = rows(diff)
    assert row.kind == "replace" and (row.left_number, row.right_number) == (1, 1)
    assert [s.text for s in row.left if s.changed] == ["16"]
    assert [s.text for s in row.right if s.changed] == ["8"]


def test_inserted_and_deleted_lines_have_one_side_only():
    diff = diffing.diff_text("a\nb\nc", "a\nc\nd")
    kinds = [(r.kind, r.left_number, r.right_number) for r in rows(diff)]
    assert ("delete", 2, None) in kinds and ("insert", None, 3) in kinds
    assert (diff.added, diff.removed) == (1, 1)


def test_far_apart_changes_become_separate_hunks_with_context():
    old = "\n".join(f"line {i}" for i in range(40))
    new = old.replace("line 2\n", "line two\n").replace("line 35", "line thirty-five")
    diff = diffing.diff_text(old, new)
    assert len(diff.hunks) == 2
    assert all(len(h.rows) <= 1 + 2 * diffing.CONTEXT_LINES for h in diff.hunks)


def test_structured_data_diffs_line_by_line_in_a_stable_order():
    diff = diffing.diff_snapshots({"data": {"b": 1, "a": [1, 2]}}, {"data": {"a": [1, 3], "b": 1}},
                                  labels={"data": "Data"})
    (field,) = diff.fields
    changed = [r for r in rows(field.diff) if r.kind != "equal"]
    assert len(changed) == 1 and [s.text for s in changed[0].left if s.changed] == ["2"]


def test_very_long_lines_are_marked_whole_instead_of_compared():
    long_old, long_new = "x" * 3000, "y" * 3000
    (row,) = rows(diffing.diff_text(long_old, long_new))
    assert row.left == (diffing.Segment(long_old, True),)


def test_unified_and_json_forms():
    assert "-a\n+b\n" in diffing.unified("a\n", "b\n", old_name="p@1", new_name="p@2")
    (hunk,) = diffing.as_json(diffing.diff_text("a", "b"))
    assert hunk["rows"][0]["kind"] == "replace"
