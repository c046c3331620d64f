"""Links to what the reader may open, plain text otherwise.

A team member may open their teams' requests and emergency requests, the committee every one
(`committee.selectors.request_list_for_viewer`, `emergency_list_for_viewer`); a link to another team's
would answer 404. Pages that name requests of many teams (the windows, the buffer fund) write
`{% request_link ref label %}` and `{% emergency_link pk label %}`: one query per page, kept on the request.
"""

from __future__ import annotations

from typing import Any

from django import template
from django.urls import reverse
from django.utils.html import format_html

from committee import selectors

register = template.Library()


def _readable(context: template.Context, key: str, load: Any) -> frozenset[int] | None:
    request = context.get("request")
    if request is None:
        return frozenset()
    kept = getattr(request, "_docket_readable", None)
    if kept is None:
        kept = {}
        request._docket_readable = kept
    if key not in kept:
        kept[key] = None if selectors.user_is_committee(user=request.user) else load(request.user)
    return kept[key]


def _link(allowed: frozenset[int] | None, pk: int, url: str, label: Any, site: str) -> str:
    if allowed is None or int(pk) in allowed:
        return format_html('<a href="{}{}">{}</a>', site, url, label)
    return format_html("{}", label)


@register.simple_tag(takes_context=True)
def request_link(context: template.Context, pk: int, label: Any, site: str = "") -> str:
    """A link to request `pk` if the reader may open it, else `label` as text (`site`: a PDF's absolute links)."""
    allowed = _readable(context, "requests", lambda user: frozenset(
        selectors.request_list_for_viewer(viewer=user).values_list("pk", flat=True)))
    return _link(allowed, pk, reverse("committee:request-detail", args=[pk]), label, site)


@register.simple_tag(takes_context=True)
def emergency_link(context: template.Context, pk: int, label: Any, site: str = "") -> str:
    """A link to emergency request `pk` if the reader may open it, else `label` as text."""
    allowed = _readable(context, "emergencies", lambda user: frozenset(
        selectors.emergency_list_for_viewer(viewer=user).values_list("pk", flat=True)))
    return _link(allowed, pk, reverse("committee:emergency-detail", args=[pk]), label, site)
