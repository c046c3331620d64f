"""The texts the policy lab stores for people to read, as codes rendered in the reader's language (core.texts)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.utils.translation import gettext as _

from core.texts import text_renderer


@text_renderer("proposal_applied")
def proposal_applied(params: Mapping[str, Any]) -> str:
    """An adopted proposal's note: the version of the rules its adoption recorded in the store and from which week
    (None for a proposal adopted before its note had a code); once that week began, the pools whose own fields were
    written, or why they could not be (the refusal's words as they were said)."""
    parts = []
    if params.get("version") is not None:
        parts.append(_("Policy version %(n)d, from week %(week)s.") % {"n": int(params["version"]),
                                                                       "week": params["week"]})
    pools = [_("pool %(pool)s") % {"pool": pool} for pool in params.get("pools") or []]
    if pools:
        parts.append(_("Applied: %(what)s.") % {"what": ", ".join(pools)})
    if params.get("refused"):
        parts.append(_("Applied: %(what)s.") % {"what": _("not applied: %(why)s") % {"why": params["refused"]}})
    return " ".join(parts)
