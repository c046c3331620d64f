"""A week's decision record in the reader's language, rendered from the data its revision stores.

The archive keeps one text of each record: the Markdown written when the week was finalized or published, in the
default language (settings.LANGUAGE_CODE), hash-chained with its data and never rewritten. A reader of another
language reads the same revision rendered again from its data, in theirs: the record's builders
(reports.records.decision) are already gettext, and each label Docket wrote into the data (a status, an outcome, a
tier, a placement and the engine's reason, a policy change's kind, action and fields) is written again from the code
stored beside it. What people wrote (a rationale, a statement, a reason, a name, the notes around the generated
block) is shown as written. Labels without a code (older records) stay as stored.

One mechanism for every stored text, as core.texts does for a plan's note or a request's history: the code and
its parameters are stored, the words are rendered when read.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.utils import translation

from allocations.models import AgentActionKind, CommitmentState, WindowTier
from committee.models import AppealStatus, Criterion, CycleStatus, DecisionOutcome
from committee.selectors.outcomes import placement_params_text
from committee.selectors.policy import policy_change_labels
from committee.texts import outcome_label
from core.texts import text_render
from reports.records.blocks import GENERATED_END, GENERATED_START, generated_join, generated_split
from reports.records.decision import decision_record_markdown, decision_record_notes_placeholder
from reports.snapshot import DecisionRecordSnapshot, PolicyChangeSnapshot, RankingRowSnapshot, WindowSnapshot


def decision_record_language(data: Mapping[str, Any]) -> str:
    """The language a record's stored text and labels are written in (records before it was kept: the default)."""
    return str(data.get("language") or settings.LANGUAGE_CODE)


def _label(choices: Any, value: Any, stored: Any) -> Any:
    return str(choices(value).label) if value in choices.values else stored


def _window(window: WindowSnapshot) -> None:
    window["tier_label"] = _label(WindowTier, window.get("tier"), window.get("tier_label"))


def _ranking_row(row: RankingRowSnapshot) -> None:
    if row.get("decision"):
        row["decision_label"] = _label(DecisionOutcome, row["decision"], row.get("decision_label"))
    params = row.get("placement_params")
    texts = placement_params_text(dict(params)) if params else {}
    if texts:
        row["placed_text"] = texts["placed"]
        row["placement_label"] = texts["difference"]
        row["placement_reason"] = texts["reason"]
        row["outcome_summary"] = texts["summary"]


def _policy_change(change: PolicyChangeSnapshot) -> None:
    if not change.get("kind_code"):
        return  # an older record: its labels as stored
    kind, action, subject, labels = policy_change_labels(
        kind_code=change["kind_code"], action_code=change.get("action_code", ""), version=change.get("version"),
        fields=[field.get("field", "") for field in change["changes"]])
    change["kind"] = kind or change["kind"]
    change["action"] = action or change["action"]
    change["subject"] = subject or change["subject"]
    for field, label in zip(change["changes"], labels, strict=True):
        field["label"] = label or field["label"]


def decision_record_relabelled(data: DecisionRecordSnapshot) -> DecisionRecordSnapshot:
    """A copy of a record's data with every label that has a code written again in the active language."""
    out: DecisionRecordSnapshot = copy.deepcopy(data)
    cycle = out["cycle"]
    cycle["status_label"] = _label(CycleStatus, cycle.get("status"), cycle.get("status_label"))
    for criterion in out["rubric"]["criteria"]:
        criterion["label"] = _label(Criterion, criterion.get("key"), criterion.get("label"))
    out["outcome_labels"] = [[key, _label(DecisionOutcome, key, label)] for key, label in out["outcome_labels"]]
    for row in out.get("ranking") or []:
        _ranking_row(row)
    plan, changes = out.get("plan"), out.get("plan_changes")
    if plan and plan.get("note_text"):
        plan["note"] = text_render(plan["note_text"], fallback=plan.get("note", ""))
    windows: list[WindowSnapshot] = list(plan["windows"]) if plan else []
    if changes:
        windows += [*changes["added"], *changes["withdrawn"]]
    for window in windows:
        _window(window)
    for correction in out.get("corrections") or []:
        if "outcome" in correction and "previous_outcome" in correction:
            correction["previous_label"] = outcome_label(
                correction["previous_outcome"], correction.get("previous_granted_gpu_count"))
            correction["new_label"] = outcome_label(correction["outcome"], correction.get("granted_gpu_count"))
    for appeal in out.get("appeals") or []:
        appeal["status_label"] = _label(AppealStatus, appeal.get("status"), appeal.get("status_label"))
    for change in out.get("policy_changes") or []:
        _policy_change(change)
    for continuation in out.get("continuations") or []:
        continuation["state_label"] = _label(CommitmentState, continuation.get("state"),
                                             continuation.get("state_label"))
    for run in out.get("runs_committed") or []:
        run["state_label"] = _label(CommitmentState, run.get("state"), run.get("state_label"))
    for action in out.get("agent_actions") or []:
        action["kind_label"] = _label(AgentActionKind, action.get("kind"), action.get("kind_label"))
    out["language"] = translation.get_language() or settings.LANGUAGE_CODE
    return out


def decision_record_body_in_language(*, body: str, data: DecisionRecordSnapshot) -> str:
    """A record revision's body as a reader of the active language reads it: the generated block rendered again
    from `data` in that language, people's notes around it as written (the notes' placeholder, if nobody replaced
    it, in that language too).

    The whole record is rendered here, also when its stored text continues on parts (a record longer than one
    archive page holds): the page a reader reads is not stored, so it needs no cutting.
    """
    split = generated_split(body)
    if split is None:  # someone's page without a generated block: nothing Docket wrote to render again
        return body
    generated = decision_record_markdown(decision_record_relabelled(data)).strip()
    below = split.below
    with translation.override(decision_record_language(data)):
        placeholder = decision_record_notes_placeholder()
    if below.strip() == placeholder.strip():
        below = decision_record_notes_placeholder()
    return generated_join(above=split.above, block=f"{GENERATED_START}\n{generated}\n{GENERATED_END}", below=below)
