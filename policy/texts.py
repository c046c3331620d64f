"""The texts the policy lab stores for people to read, as codes rendered in the reader's language (core.texts)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.utils.translation import gettext as _

from core.texts import text_renderer


@text_renderer("proposal_applied")
def proposal_applied(params: Mapping[str, Any]) -> str:
    """An adopted proposal's note: the version of the rules its adoption recorded in the store, from which week."""
    return _("Policy version %(n)d, from week %(week)s.") % {"n": int(params["version"]), "week": params["week"]}
