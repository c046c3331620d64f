"""A decision record longer than one archive page holds: its generated block cut into parts, each an ordinary
page (`decision-record-<week>-part-<n>`) linked from the week's page and to its neighbours."""

from __future__ import annotations

from django.utils.translation import gettext as _

from reports.records.decision import decision_record_slug


def decision_record_part_slug(week: str, part: int) -> str:
    return f"{decision_record_slug(week)}-part-{part}"


def split_generated(generated: str, *, first: int, rest: int) -> list[str]:
    """Cut a generated block into chunks of at most `first` characters, then `rest` characters each.

    Cuts fall between lines. A chunk that starts inside a table repeats the table's header row,
    and one that starts inside a section repeats its "##" heading, marked as continued, so each
    chunk reads on its own. A line longer than a whole chunk (a long rationale) is cut within.
    Nothing is dropped: the chunks hold every line of `generated`, in order.
    """
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    has_content = False  # `current` holds more than the heading and table header it repeats
    heading = ""
    table_head: list[str] = []
    lines = generated.strip("\n").split("\n")

    def start_chunk(repeat_rows: list[str]) -> None:
        nonlocal current, size, has_content
        chunks.append("\n".join(current).strip("\n"))
        current = [f"{heading} ({_('continued')})", ""] if heading else []
        current += repeat_rows
        size = sum(len(line) + 1 for line in current)
        has_content = False

    for index, line in enumerate(lines):
        budget = rest if chunks else first
        if not line.startswith("|"):
            table_head = []
        elif not table_head and index + 1 < len(lines) and lines[index + 1].startswith("|---"):
            table_head = [line, lines[index + 1]]
        # A table row continued on the next chunk needs the rows of the header above it.
        repeat_rows = table_head[: table_head.index(line)] if line in table_head else table_head
        if line.startswith("## "):
            heading = ""  # a new section needs no "continued" heading above it
        while size + len(line) + 1 > budget:
            if has_content:
                start_chunk(repeat_rows)
            else:  # the line alone does not fit in a chunk: cut it
                room = max(budget - size - 1, 1)
                current.append(line[:room])
                line = line[room:]
                start_chunk([])
            budget = rest
        current.append(line)
        size += len(line) + 1
        has_content = True
        if line.startswith("## "):
            heading = line
    chunks.append("\n".join(current).strip("\n"))
    return chunks


def decision_record_part_intro(*, week: str, part: int, parts: int) -> str:
    """The first line of part `part` (2…`parts`) of a week's record that did not fit on one page."""
    links = [_("Part %(n)d of %(total)d of the [[%(slug)s|decision record of week %(week)s]].")
             % {"n": part, "total": parts, "slug": decision_record_slug(week), "week": week}]
    if part > 2:
        links.append(_("Previous: [[%(slug)s|part %(n)d]].") % {"slug": decision_record_part_slug(week, part - 1),
                                                                 "n": part - 1})
    if part < parts:
        links.append(_("Next: [[%(slug)s|part %(n)d]].") % {"slug": decision_record_part_slug(week, part + 1),
                                                             "n": part + 1})
    return "_" + " ".join(links) + "_"


def decision_record_parts_list(*, week: str, parts: int) -> str:
    """The end of the week's page when its record continues on other pages: one link per part."""
    lines = ["## " + _("Continued on %(n)d more pages") % {"n": parts - 1},
             _("This record is longer than one archive page holds; it continues, in order, on:"), ""]
    lines += [
        f"- [[{decision_record_part_slug(week, part)}|" + _("Part %(n)d of %(total)d") % {"n": part, "total": parts}
        + "]]"
        for part in range(2, parts + 1)
    ]
    return "\n".join(lines)


def decision_record_part_notes_placeholder(*, week: str) -> str:
    return "_" + _("Committee notes on this week go on its first page, [[%(slug)s]].") % {
        "slug": decision_record_slug(week)} + "_"


def decision_record_part_unused(*, week: str) -> str:
    """What a part page says once the week's record needs fewer parts than it did."""
    return "_" + _("This part is no longer used: the current record of week %(week)s is on [[%(slug)s]] "
                   "and the parts it links to.") % {"week": week, "slug": decision_record_slug(week)} + "_"
