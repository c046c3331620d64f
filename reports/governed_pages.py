"""The archive page of a change of the governed parameters (governed.PolicyChange): its data and its Markdown.

Written by reports.services.policy_change_page_sync when the store sends `governed.signals.policy_changed`, the way
the policy lab's proposal pages are written: one page per change, `policy-change-v<n>`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from django.utils.translation import gettext as _

from core.datetimes import format_isoweek
from core.isoweek import parse_iso_week
from governed import params
from governed.models import PolicyChange
from governed.selectors import policy_values
from reports.records import figure, policy_change_slug, quote, table, text
from reports.selectors.records import _iso, _when

__all__ = ["policy_change_data", "policy_change_markdown", "policy_change_slug"]


def policy_change_data(*, change: PolicyChange) -> dict[str, object]:
    """A change: each value it sets beside the value in force the week before, why, why exempt, who and when."""
    before = policy_values(week=_week_before(change.effective_week)) if change.effective_week else {}
    rows = []
    for value in change.values.order_by("key"):
        found = params.param_for(value.key)
        label = value.key
        if found is not None:
            part = found[1]
            label = str(found[0].label) % {"criterion": part, "pool": part, "department": part} if part else str(
                found[0].label)
        previous = before.get(value.key)
        rows.append({"key": value.key, "label": label, "value": value.value,
                     "previous_value": None if previous is None else params.value_text(previous)})
    return {
        "schema": 1,
        "version": change.number,
        "effective_week": change.effective_week,
        "source": change.get_source_display(),
        "reason": change.reason,
        "exempt_reason": change.exempt_reason,
        "changed_by": change.author_name,
        "changed_at": _iso(change.created_at),
        "changed_label": _when(change.created_at),
        "parameters": rows,
    }


def _week_before(week: str) -> str:
    return format_isoweek(parse_iso_week(week) - timedelta(weeks=1))


def policy_change_markdown(data: Mapping[str, Any]) -> str:
    """The generated block of a change's page."""
    out: list[str] = [
        _("Version %(version)d of the committee's rules, in force from week %(week)s, recorded by %(name)s, "
          "%(when)s, through: %(source)s.") % {
            "version": data["version"], "week": data["effective_week"] or "—", "name": text(data.get("changed_by")),
            "when": data["changed_label"], "source": text(data.get("source"))},
        "## " + _("Reason"),
        quote(data.get("reason") or "—"),
    ]
    if data.get("exempt_reason"):
        out.append(_("Not counted as the week's one change: %(why)s") % {"why": text(data["exempt_reason"])})
    rows = [
        [text(p["label"]), "—" if p.get("previous_value") is None else figure(p["previous_value"]), figure(p["value"])]
        for p in data["parameters"]
    ]
    out.append("## " + _("Parameters"))
    out.append(table([_("Parameter"), _("Old"), _("New")], rows))
    return "\n\n".join(out) + "\n"
