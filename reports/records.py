"""Generated pages as Markdown: a week's decision record and a rubric version's policy page.

Pure functions from the structured data a revision stores (see selectors.decision_record_data
and selectors.policy_data) to Markdown text. The generated part of a body sits between two
markers; people add their notes outside them, and regenerating replaces only what is inside.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _

from reports.snapshot import (
    DecisionRecordSnapshot,
    PlanChangesSnapshot,
    PlanSnapshot,
    PolicyChangeSnapshot,
    RankingRowSnapshot,
    WindowSnapshot,
)

GENERATED_START = "<!-- docket:generated:start -->"
GENERATED_END = "<!-- docket:generated:end -->"
_GENERATED_RE = re.compile(re.escape(GENERATED_START) + r".*?" + re.escape(GENERATED_END), re.DOTALL)
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|>~])")


def decision_record_slug(week: str) -> str:
    return f"decision-record-{week.lower()}"


def policy_slug(version: int) -> str:
    return f"rubric-v{version}"


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


def _request_link(row: RankingRowSnapshot, *, in_table: bool = False) -> str:
    title = text(row.get("title"))
    # Labels of [[…|label]] links are shown as typed, so they take the raw title, minus brackets and newlines.
    # In a table row a "|" would end the cell, even inside the link.
    label = " ".join(re.sub(r"[\[\]|]" if in_table else r"[\[\]]", " ", str(row.get("title") or "")).split()) or title
    separator = "\\|" if in_table else "|"
    return f"[[request:{row['request_id']}{separator}{label}]]" if row.get("request_id") else title


def _window_rows(windows: Sequence[WindowSnapshot]) -> list[list[str]]:
    return [
        [
            text(w.get("cluster")),
            text(w.get("pool")),
            text(w.get("team")),
            number(w.get("gpu_count")),
            text(w.get("start_label")),
            text(w.get("end_label")),
            text(w.get("tier_label")),
            f"[[request:{w['request_id']}]]" if w.get("request_id") else "—",
        ]
        for w in windows
    ]


def _window_header() -> list[str]:
    return [_("Cluster"), _("Pool"), _("Team"), _("GPUs"), _("Start"), _("End"), _("Tier"), _("Request")]


def _emphasis(value: str) -> str:
    return "_" + value + "_"


def _intro(data: DecisionRecordSnapshot) -> list[str]:
    return [
        _emphasis(
            _(
                "Generated by Docket from the committee's records when week %(week)s was finalized, and updated "
                "when its plan is published. Text inside this generated part is replaced at each update; add notes "
                "below it."
            )
            % {"week": data["cycle"]["week"]}
        )
    ]


def _summary(data: DecisionRecordSnapshot) -> list[str]:
    cycle, rubric = data["cycle"], data["rubric"]
    counts = data.get("outcome_counts") or {}
    lines = [
        _("Week: %(week)s (%(start)s – %(end)s)")
        % {"week": cycle["week"], "start": cycle["starts_label"], "end": cycle["ends_label"]},
        _("Status: %(status)s") % {"status": cycle["status_label"]},
        _("Rubric: [[%(slug)s|version %(version)d]] — %(weights)s")
        % {
            "slug": policy_slug(rubric["version"]),
            "version": rubric["version"],
            "weights": ", ".join(f"{text(c['label'])} {c['weight_pct']}%" for c in rubric["criteria"]),
        },
        _("Requests reviewed: %(n)d — %(outcomes)s")
        % {
            "n": len(data.get("ranking") or []),
            "outcomes": ", ".join(f"{text(label)} {counts.get(key, 0)}" for key, label in data["outcome_labels"])
            or "—",
        },
    ]
    if cycle.get("finalized_by"):
        finalized = {"name": text(cycle.get("finalized_by")), "when": cycle["finalized_label"]}
        lines.append(_("Finalized by %(name)s, %(when)s") % finalized)
    if data.get("previous_record"):
        lines.append(_("Previous week: [[%(slug)s]]") % {"slug": data.get("previous_record")})
    return ["## " + _("Summary"), "\n".join(f"- {line}" for line in lines)]


def _participants(data: DecisionRecordSnapshot) -> list[str]:
    participants = data.get("participants") or []
    if not participants:
        return ["## " + _("Who took part"), _emphasis(_("No scores or decisions were recorded."))]
    rows = [[text(p["name"]), number(p["scored"]), number(p["decided"])] for p in participants]
    return ["## " + _("Who took part"), table([_("Member"), _("Requests scored"), _("Decisions recorded")], rows)]


def _recusals(data: DecisionRecordSnapshot) -> list[str]:
    """Conflicts of interest declared on the week's requests (absent in older records and weeks without any)."""
    recusals = data.get("recusals")
    if not recusals:
        return []
    rows = [
        [text(r["member"]), text(r["title"]), text(r["team"]), text(r["reason"]) or "—", text(r["declared_label"]),
         text(r["withdrawn_label"]) if r.get("withdrawn_at") else _("no: recused")]
        for r in recusals
    ]
    return [
        "## " + _("Recusals"),
        _("Members who declared a conflict of interest on a request did not score or decide it, and their scores "
          "of it were left out of its totals, unless they withdrew the declaration before the week was finalized."),
        table([_("Member"), _("Request"), _("Team"), _("Reason"), _("Declared"), _("Withdrawn")], rows),
    ]


def _ranking(data: DecisionRecordSnapshot) -> list[str]:
    criteria = data["rubric"]["criteria"]
    header = [_("Rank"), _("Request"), _("Team"), _("Pool"), _("GPU-hours")]
    header += [f"{text(c['label'])} ({c['weight_pct']}%)" for c in criteria]
    header += [_("Total"), _("Decision")]
    rows = []
    for row in data.get("ranking") or []:
        scores = row.get("scores") or {}
        rows.append(
            [
                str(row["rank"]) if row.get("rank") else "—",
                _request_link(row, in_table=True),
                text(row.get("team")),
                text(row.get("pool")),
                number(row.get("gpu_hours")),
                *[number(scores.get(c["key"])) for c in criteria],
                number(row.get("total")),
                text(row.get("outcome_summary") or row.get("decision_label") or "—"),
            ]
        )
    return [
        "## " + _("Ranking"),
        _("Each criterion shows the mean of the members' scores (0–10; fairness is computed); the total is "
          "Σ weight × score on 0–100. Requests below quorum (%(quorum)d scores per criterion) are not ranked.")
        % {"quorum": data.get("quorum", 0)},
        table(header, rows) if rows else _emphasis(_("No requests were reviewed.")),
    ]


def _decision(row: RankingRowSnapshot) -> list[str]:
    granted = ""
    if row.get("granted_gpu_count"):
        granted = " " + _("(%(granted)d of %(asked)d GPUs)") % {
            "granted": row["granted_gpu_count"],
            "asked": row.get("gpu_count") or 0,
        }
    label = text(row.get("decision_label") or _("No decision"))
    if row.get("alternative"):
        label = _("granted the alternative: %(description)s (%(gpu_hours)s GPU-hours)") % {
            "description": text(row["alternative"]),
            "gpu_hours": number(row.get("alternative_gpu_hours") or 0),
        }
    rank = f"{row['rank']}. " if row.get("rank") else ""
    details = [_("Request: %(link)s") % {"link": _request_link(row)}]
    if row.get("decided_by"):
        details.append(_("decided by %(name)s") % {"name": text(row["decided_by"])})
    if row.get("total") is not None:
        details.append(_("total %(total)s") % {"total": number(row["total"])})
    if row.get("placement") == "not_placed":
        details.append(text(row.get("placement_reason") or row.get("placement_label")))
    elif row.get("placed_text"):
        placed = _("placed: %(placed)s") % {"placed": text(row["placed_text"])}
        if row.get("placement") != "as_decided":
            placed += " — " + text(row.get("placement_label"))
        details.append(placed)
    return [
        f"### {rank}{text(row.get('title'))} — {text(row.get('team'))}: "
        f"{label}{granted}",
        quote(row.get("rationale") or _("No rationale recorded.")),
        *_exception(row.get("exception")),
        _emphasis("; ".join(details)),
    ]


def _exception(reason: str | None) -> list[str]:
    """A grant of a request below the score quorum: the chair's stated exception to the rubric, quoted."""
    if not reason:
        return []
    return [_("Granted as an exception to the rubric (not ranked: too few scores). The chair's reason:"), quote(reason)]


def _decisions(data: DecisionRecordSnapshot) -> list[str]:
    return ["## " + _("Decisions and rationale"), *(b for row in data.get("ranking") or [] for b in _decision(row))]


# Placements that differ from their decision (committee.selectors.PlacementStatus values).
_DIFFERENCES = ("shortened", "preemptible", "not_placed")


def _placement(data: DecisionRecordSnapshot) -> list[str]:
    """Grants the plan does not honour as decided: shortened, demoted to preemptible, not placed."""
    out = ["## " + _("Shortened, demoted and unplaced grants")]
    rows = data.get("ranking") or []
    if not any("placement" in row for row in rows):
        return []  # a record from before placements were recorded
    if not data.get("plan"):
        return [*out, _emphasis(_("Not published yet: the engine places the grants when the chair publishes "
                                  "the plan, and any grant it cannot place as decided is listed here."))]
    differing = [row for row in rows if row.get("placement") in _DIFFERENCES]
    if not differing:
        return [*out, _("Every grant was placed as decided.")]
    header = [_("Request"), _("Team"), _("Decided"), _("Placed"), _("Difference"), _("The engine's reason")]
    table_rows = [
        [
            _request_link(row, in_table=True),
            text(row.get("team")),
            _("%(outcome)s, %(gpus)s GPUs (%(hours)s GPU-hours)")
            % {
                "outcome": text(row.get("decision_label")),
                "gpus": str(row.get("granted_gpu_count") or row.get("gpu_count")),
                "hours": str(row.get("decided_gpu_hours")),
            },
            text(row.get("placed_text") or "—"),
            text(row.get("placement_label")),
            text(row.get("placement_reason") or "—"),
        ]
        for row in differing
    ]
    return [
        *out,
        _("The committee decided these grants; the engine could not place them as decided. Decided GPU-hours are "
          "GPUs × the request's duration; placed GPU-hours are those of the plan's windows."),
        table(header, table_rows),
    ]


def _corrections(data: DecisionRecordSnapshot) -> list[str]:
    corrections = data.get("corrections") or []
    appeals = data.get("appeals") or []
    if not corrections and not appeals:
        return []
    out = ["## " + _("Corrections and appeals")]
    for c in corrections:
        plan = (
            _("published as plan version %(v)d") % {"v": c["plan_version"]}
            if c.get("plan_version")
            else _("before the plan was published")
        )
        out += [
            f"### {text(c.get('title'))} — {text(c.get('team'))}: "
            + _("%(old)s → %(new)s") % {"old": text(c.get("previous_label")), "new": text(c.get("new_label"))},
            _("Reason: %(reason)s") % {"reason": text(c.get("reason"))},
            _("Previous rationale:"),
            quote(c.get("previous_rationale") or "—"),
            _("New rationale:"),
            quote(c.get("rationale") or "—"),
            *_exception(c.get("exception")),
            _emphasis(
                _("Corrected by %(name)s, %(when)s, %(plan)s%(appeal)s.")
                % {
                    "name": text(c.get("by")),
                    "when": c.get("at_label") or "—",
                    "plan": plan,
                    "appeal": _(", on appeal") if c.get("from_appeal") else "",
                }
            ),
        ]
    if appeals:
        rows = [
            [
                text(a.get("title")),
                text(a.get("team")),
                _("%(name)s, %(when)s") % {"name": text(a.get("filed_by")), "when": a.get("filed_label") or "—"},
                text(a.get("status_label")),
                _("%(name)s, %(when)s") % {"name": text(a.get("decided_by")), "when": a.get("decided_label")}
                if a.get("decided_by")
                else "—",
                text(a.get("reason")) or "—",
            ]
            for a in appeals
        ]
        out += [
            "**" + _("Appeals") + "**",
            table([_("Request"), _("Team"), _("Filed"), _("Outcome"), _("Decided"), _("Reason")], rows),
        ]
        for a in appeals:
            out += [
                _("Statement of %(team)s on “%(title)s”:")
                % {"team": text(a.get("team")), "title": text(a.get("title"))},
                quote_text(a.get("statement") or "—"),
            ]
    return out


def _capacity(data: DecisionRecordSnapshot) -> list[str]:
    capacity = data.get("capacity") or []
    rows = [
        [text(p["pool"]), number(p["capacity_gpu_hours"]), number(p["requested_gpu_hours"]),
         number(p["granted_gpu_hours"])]
        for p in capacity
    ]
    header = [_("Pool"), _("Capacity (GPU-hours)"), _("Requested"), _("Decided")]
    return ["## " + _("Demand and capacity"), table(header, rows) if rows else "—"]


def _policy_changes(data: DecisionRecordSnapshot) -> list[str]:
    """The policy this week was ranked under, as far as it changed since the week before (absent in old records)."""
    changes = data.get("policy_changes")
    if changes is None:
        return []
    out = [
        "## " + _("Policy changes since the previous week"),
        _("Fair-share weights, pools (reserves, cost), cluster accounts and committee seats changed before this "
          "week's intake closed, newest first:"),
    ]

    def told(change: PolicyChangeSnapshot) -> str:
        fields = "; ".join(
            f"{c['label']}: {c['new']}" if c["old"] is None else f"{c['label']}: {c['old']} → {c['new']}"
            for c in change["changes"]
        )
        return f"{change['action']}" + (f" ({fields})" if fields else "")

    rows = [
        [text(c["at_label"]), text(f"{c['kind']}: {c['subject']}"), text(told(c)), text(c["who"]),
         text(c["reason"]) or "—"]
        for c in changes
    ]
    out.append(table([_("When"), _("What"), _("Change"), _("By"), _("Reason")], rows))
    if data.get("policy_changes_more"):
        out.append(
            _emphasis(_("…and %(n)d older changes, on the policy history page.") % {"n": data["policy_changes_more"]})
        )
    return out


def _plan_changes(plan: PlanSnapshot, changes: PlanChangesSnapshot | None) -> list[str]:
    out = ["## " + _("Changes from the previous plan version")]
    if not changes:
        return [*out, _("This is the first published version of the plan.")]
    out.append(
        _("Compared with version %(old)d: %(added)d windows added, %(withdrawn)d withdrawn, "
          "%(kept)d carried over unchanged.")
        % {
            "old": changes["from_version"],
            "added": len(changes["added"]),
            "withdrawn": len(changes["withdrawn"]),
            "kept": changes["carried"],
        }
    )
    if plan.get("note"):
        out.append(_("Reason given: %(note)s") % {"note": text(plan["note"])})
    for label, windows in ((_("Added"), changes["added"]), (_("Withdrawn"), changes["withdrawn"])):
        if windows:
            out += [f"**{label}**", table(_window_header(), _window_rows(windows))]
    return out


def _published_windows(data: DecisionRecordSnapshot) -> list[str]:
    out = ["## " + _("Published windows")]
    plan = data.get("plan")
    if not plan:
        return [*out, _emphasis(_("Not published yet: the windows appear here when the chair publishes the plan."))]
    out.append(
        _("Plan version %(version)d, published by %(name)s, %(when)s.")
        % {"version": plan["version"], "name": text(plan.get("published_by")), "when": plan["published_label"]}
    )
    windows = plan.get("windows") or []
    out.append(table(_window_header(), _window_rows(windows)) if windows else _emphasis(_("No windows.")))
    return [*out, *_plan_changes(plan, data.get("plan_changes"))]


# The record's sections, in reading order; each returns its Markdown blocks.
DECISION_RECORD_SECTIONS: tuple[Callable[[DecisionRecordSnapshot], list[str]], ...] = (
    _intro,
    _summary,
    _participants,
    _recusals,
    _ranking,
    _decisions,
    _corrections,
    _capacity,
    _policy_changes,
    _placement,
    _published_windows,
)


def decision_record_markdown(data: DecisionRecordSnapshot) -> str:
    """The generated block of a week's decision record (without the markers)."""
    return "\n\n".join(block for section in DECISION_RECORD_SECTIONS for block in section(data)) + "\n"


def decision_record_notes_placeholder() -> str:
    return "## " + _("Committee notes") + "\n\n_" + _("Notes added by committee members go here.") + "_"


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




def policy_markdown(data: Mapping[str, Any]) -> str:
    """The generated block of a rubric version's policy page."""
    out: list[str] = []
    previous = data.get("previous_version")
    out.append(
        _("Version %(version)d of the published rubric, saved by %(name)s, %(when)s.")
        % {"version": data["version"], "name": text(data.get("changed_by")), "when": data["changed_label"]}
    )
    if previous:
        out.append(_("It replaces [[%(slug)s|version %(version)d]].") % {"slug": policy_slug(previous),
                                                                          "version": previous})
    out.append("## " + _("Reason"))
    out.append(quote(data.get("reason") or "—"))
    out.append("## " + _("Weights"))
    rows = []
    for c in data["criteria"]:
        old = c.get("previous_weight_pct")
        change = "—" if old is None else (f"{c['weight_pct'] - old:+d} " + _("points") if c["weight_pct"] != old
                                          else _("unchanged"))
        rows.append([text(c["label"]), "—" if old is None else f"{old}%", f"{c['weight_pct']}%", change])
    out.append(table([_("Criterion"), _("Old weight"), _("New weight"), _("Change")], rows))
    out.append("## " + _("Guidance"))
    for c in data["criteria"]:
        marker = " " + _("(changed)") if c.get("guidance_changed") else ""
        out.append(f"**{text(c['label'])}**{marker}: {text(c.get('guidance'))}")
    out.append(
        _("Cycles pin the rubric version current when they open, so this version applies from the next cycle to "
          "open.")
    )
    return "\n\n".join(out) + "\n"


def policy_notes_placeholder() -> str:
    return "## " + _("Discussion") + "\n\n_" + _("Notes on this change go here.") + "_"


def elastic_policy_slug(version: int) -> str:
    return f"elastic-policy-v{version}"


def elastic_policy_markdown(data: Mapping[str, Any]) -> str:
    """The generated block of an elastic policy version's page."""
    out: list[str] = [
        _("Version %(version)d of the elastic policy, saved by %(name)s, %(when)s.")
        % {"version": data["version"], "name": text(data.get("changed_by")), "when": data["changed_label"]}
    ]
    previous = data.get("previous_version")
    if previous:
        out.append(_("It replaces [[%(slug)s|version %(version)d]].") % {"slug": elastic_policy_slug(previous),
                                                                          "version": previous})
    out.append("## " + _("Reason"))
    out.append(quote(data.get("reason") or "—"))
    out.append("## " + _("Parameters"))
    rows = [
        [text(p["label"]), "—" if p.get("previous_value") is None else text(p["previous_value"]), text(p["value"]),
         _("changed") if p.get("previous_value") not in (None, p["value"]) else ""]
        for p in data["parameters"]
    ]
    out.append(table([_("Parameter"), _("Old"), _("New"), ""], rows))
    out.append(_("The hourly evaluation uses the version in force when it runs; docs/elastic.md states the rules."))
    return "\n\n".join(out) + "\n"


def proposal_slug(pk: int) -> str:
    return f"policy-proposal-{pk}"


def proposal_markdown(data: Mapping[str, Any]) -> str:
    """The generated block of a policy proposal's page: its changes, reasons, figures, votes, comments, decision."""
    out: list[str] = [
        _("Proposal #%(n)d, filed by %(name)s on %(when)s. Status: %(status)s.")
        % {"n": data["id"], "name": text(data["proposer"]), "when": data["filed"], "status": text(data["status"])}
    ]
    out.append("## " + _("Changes"))
    out.append(table([_("Parameter"), _("Old"), _("New")],
                     [[text(c["label"]), text(c["old"]), text(c["new"])] for c in data["changes"]]))
    out.append("## " + _("Reason"))
    out.append(quote_text(data["reason"]))
    out.append("## " + _("Expected effect"))
    out.append(quote_text(data["expected_effect"]))
    for stage, heading in (("staging", _("Staging benchmark")), ("observed", _("Observed figures"))):
        rows = [[text(f["metric"]), text(f["baseline"] if f["baseline"] is not None else "—"), text(f["value"]),
                 text(f["unit"])] for f in data["figures"] if f["stage"] == stage]
        if rows:
            out.append("## " + heading)
            out.append(table([_("Metric"), _("Today"), _("With the change"), _("Unit")], rows))
    out.append("## " + _("Votes"))
    out.append("\n".join(f"- {text(v['choice'])}: {text(v['by'])} — {text(v['comment'])}" for v in data["votes"])
               or "—")
    out.append("## " + _("Comments"))
    out.append("\n".join(f"- {text(c['by'])} ({c['at']}): {text(c['body'])}" for c in data["comments"]) or "—")
    if data.get("decided_by"):
        out.append("## " + _("Decision"))
        out.append(_("%(status)s by %(name)s on %(when)s%(week)s.") % {
            "status": text(data["status"]), "name": text(data["decided_by"]), "when": data["decided_at"],
            "week": (" — " + _("effective from week %(week)s") % {"week": data["effective_week"]})
            if data.get("effective_week") else ""})
        out.append(quote_text(data.get("decision_reason") or "—"))
        if data.get("applied_note"):
            out.append(text(data["applied_note"]))
    if data.get("observed_result"):
        out.append("## " + _("Observed result"))
        out.append(quote_text(data["observed_result"]))
    return "\n\n".join(out) + "\n"
