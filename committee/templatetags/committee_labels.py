"""Labels of the committee's data in templates: a criterion's (committee.models.criterion_label), so a criterion
added to the one list (committee.scoring.CRITERIA) is named wherever a template names criteria."""

from __future__ import annotations

from django import template

from committee.models import criterion_label as label_of

register = template.Library()


@register.filter
def criterion_label(criterion: str) -> str:
    return label_of(str(criterion))
