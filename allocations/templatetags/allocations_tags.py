"""Template tags that let other apps' pages show what the published plan gives them."""

from __future__ import annotations

from datetime import datetime

from django import template

from allocations import selectors
from allocations.explanations import placement_text
from allocations.models import AllocationWindow

register = template.Library()


@register.simple_tag
def request_allocation(request_ref: int) -> selectors.RequestAllocation | None:
    """The current plan's windows and explanation for a request id (three queries), or None.

    The request page now reads `committee.selectors.request_outcome_map` (decided and placed); this
    stays for other pages that show only the allocation."""
    return selectors.request_allocation(request_ref=request_ref)


@register.simple_tag
def window_placement(window: AllocationWindow, week_start: datetime) -> str:
    """A window as every surface names a placement: "16 A100, Wed 12:00–Fri 04:00, standard"."""
    return placement_text(
        gpu_count=window.gpu_count, gpu_model=window.pool.gpu_model, start=window.start, end=window.end,
        tier=window.tier, week_start=week_start,
    )
