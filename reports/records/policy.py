"""The policy pages of the archive as Markdown: a policy proposal's, from the structured data its revision stores
(reports.selectors.proposal_data); the slug of a change of the governed parameters (reports.governed_pages writes its
page). The rubric's and the elastic policy's pages of before the one store stay as they were published."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.utils.translation import gettext as _

from reports.records.blocks import figure, quote_text, table, text


def policy_change_slug(number: int) -> str:
    """The archive page of the store's change `number` (reports.governed_pages); the rubric's pages of before the
    one store (`rubric-v<n>`) stay as they were published."""
    return f"policy-change-v{number}"


def policy_notes_placeholder() -> str:
    return "## " + _("Discussion") + "\n\n_" + _("Notes on this change go here.") + "_"


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
                     [[text(c["label"]), figure(c["old"]), figure(c["new"])] for c in data["changes"]]))
    out.append("## " + _("Reason"))
    out.append(quote_text(data["reason"]))
    out.append("## " + _("Expected effect"))
    out.append(quote_text(data["expected_effect"]))
    for stage, heading in (("staging", _("Staging benchmark")), ("observed", _("Observed figures"))):
        rows = [[text(f["metric"]), figure(f["baseline"] if f["baseline"] is not None else "—"), figure(f["value"]),
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
