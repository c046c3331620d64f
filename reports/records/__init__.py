"""Generated pages as Markdown: one module per kind of page, every name importable from here.

- `blocks`: the Markdown pieces (escaped text, numbers, quotes, tables) and the generated block between its
  markers, which regenerating replaces while people's notes around it stay.
- `decision`: a week's decision record, one builder per section.
- `language`: a decision record in the reader's language, rendered from its revision's data.
- `parts`: a decision record too long for one page, cut into linked parts.
- `policy`: the pages of a rubric version, an elastic policy version and a policy proposal.
"""

from __future__ import annotations

from reports.records.blocks import (
    GENERATED_END,
    GENERATED_START,
    GeneratedSplit,
    figure,
    generated_join,
    generated_split,
    merge_generated,
    number,
    quote,
    quote_text,
    table,
    text,
)
from reports.records.decision import (
    DECISION_RECORD_SECTIONS,
    decision_record_markdown,
    decision_record_notes_placeholder,
    decision_record_slug,
    decision_record_title,
)
from reports.records.language import (
    decision_record_body_in_language,
    decision_record_language,
    decision_record_relabelled,
)
from reports.records.parts import (
    decision_record_part_intro,
    decision_record_part_notes_placeholder,
    decision_record_part_slug,
    decision_record_part_unused,
    decision_record_parts_list,
    split_generated,
)
from reports.records.policy import (
    policy_change_slug,
    policy_notes_placeholder,
    proposal_markdown,
    proposal_slug,
)

__all__ = [
    "DECISION_RECORD_SECTIONS",
    "GENERATED_END",
    "GENERATED_START",
    "GeneratedSplit",
    "decision_record_body_in_language",
    "decision_record_language",
    "decision_record_markdown",
    "decision_record_notes_placeholder",
    "decision_record_part_intro",
    "decision_record_part_notes_placeholder",
    "decision_record_part_slug",
    "decision_record_part_unused",
    "decision_record_parts_list",
    "decision_record_relabelled",
    "decision_record_slug",
    "decision_record_title",
    "figure",
    "generated_join",
    "generated_split",
    "merge_generated",
    "number",
    "policy_change_slug",
    "policy_notes_placeholder",
    "proposal_markdown",
    "proposal_slug",
    "quote",
    "quote_text",
    "split_generated",
    "table",
    "text",
]
