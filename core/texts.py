"""Texts Docket writes into the database for people to read, kept as a code with parameters.

A note on a plan ("Emergency “Hotfix” of Search, approved by …"), a line of a request's history ("plan
version 3: placed …") is written once and read for years, by readers of either language. Such a text is
stored as `{"code": ..., "params": {...}}` (a JSONField beside the text column, `stored_text(...)` builds
it) and rendered when it is read, in the reader's language, with its numbers, times and ids written the
one way (core.numbers, core.datetimes): `text_render(stored, fallback=row.note)`.

The text column beside it keeps the text as written at the time: the API, exports and the archive's
snapshots show it as published, and a row written before its text had a code (or one whose code is gone)
renders that text unchanged. What a person typed is a parameter, shown as typed, never translated.

A code is registered once, by the app whose service writes it, with the function that renders it
(`@text_renderer("emergency_placed")`, committee/texts.py); `docs/maintaining.md` ("Add or change a
string") says how.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Renderer = Callable[[Mapping[str, Any]], str]

_RENDERERS: dict[str, Renderer] = {}


def text_renderer(code: str) -> Callable[[Renderer], Renderer]:
    """Register `code`'s renderer: it takes the stored parameters and returns the text in the active language."""

    def register(render: Renderer) -> Renderer:
        if _RENDERERS.get(code, render) is not render:
            raise ValueError(f"the stored text {code!r} has two renderers")
        _RENDERERS[code] = render
        return render

    return register


def stored_text(code: str, **params: Any) -> dict[str, Any]:
    """What a model's JSONField keeps for `code` with `params` (plain JSON values); an unknown code is refused,
    so a typo fails where the text is written, not where it is read."""
    if code not in _RENDERERS:
        raise ValueError(f"no renderer for the stored text {code!r} (core.texts.text_renderer)")
    return {"code": code, "params": params}


def text_render(stored: Mapping[str, Any] | None, *, fallback: str = "") -> str:
    """The stored text in the active language; `fallback` (the text as written then) for a row without a code,
    with a code no longer known, or with parameters its renderer cannot read."""
    if not stored:
        return fallback
    render = _RENDERERS.get(str(stored.get("code")))
    params = stored.get("params")
    if render is None or not isinstance(params, Mapping):
        return fallback
    try:
        return render(params)
    except (KeyError, TypeError, ValueError):
        return fallback
