"""The review page's list of fast-lane grants, read by its own include (the review view stays as it is)."""

from __future__ import annotations

from django import template

from committee import selectors
from committee.models import FastLaneRequest, ReviewCycle

register = template.Library()


@register.simple_tag
def fast_lane_for_review(cycle: ReviewCycle) -> list[FastLaneRequest]:
    """The fast-lane grants this week's review lists (selectors.fast_lane_list_for_review)."""
    return selectors.fast_lane_list_for_review(cycle=cycle)
