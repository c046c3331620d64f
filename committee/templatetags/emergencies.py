"""The review page's list of emergency requests, read by its own include (the review view stays as it is)."""

from __future__ import annotations

from django import template

from committee import selectors
from committee.models import EmergencyRequest, ReviewCycle

register = template.Library()


@register.simple_tag
def emergencies_for_review(cycle: ReviewCycle) -> list[EmergencyRequest]:
    """The emergencies this week's review decides on after the fact (selectors.emergency_list_for_review)."""
    return selectors.emergency_list_for_review(cycle=cycle)
