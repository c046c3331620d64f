"""Template tags that let other apps' pages show what the published plan gives them."""

from __future__ import annotations

from django import template

from allocations import selectors

register = template.Library()


@register.simple_tag
def request_allocation(request_ref: int) -> selectors.RequestAllocation | None:
    """The current plan's windows and explanation for a request id (three queries), or None."""
    return selectors.request_allocation(request_ref=request_ref)
