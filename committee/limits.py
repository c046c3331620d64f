"""How much a team or a member may send: the one place forms, serializers, services and the schema read.

A request's alternatives and every free text have a ceiling. Without one, 10,000 alternatives
took 13-51 s to save and a 2 MB narrative made the review page 2.3 MB. The text columns stay
`text` in the database (the limit is a validator, so changing it needs no table rewrite).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.core.validators import MaxLengthValidator, ProhibitNullCharactersValidator
from django.db import models

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise

MAX_ALTERNATIVES = 20  # cheaper variants per request; the review page shows them all
MAX_POOL_OPTIONS = 3  # other pools a request may name ("either pool"); each is one more placement the engine tries

NARRATIVE_MAX_LENGTH = 5000  # the impact forecast's narrative
USAGE_NOTES_MAX_LENGTH = 2000  # notes on last week's usage
SLIP_CONSEQUENCE_MAX_LENGTH = 2000  # what slips if the deadline is missed
SCORE_NOTE_MAX_LENGTH = 2000  # a member's note on a score
RATIONALE_MAX_LENGTH = 5000  # a decision's rationale
GUIDANCE_MAX_LENGTH = 2000  # a criterion's guidance in the rubric
REASON_MAX_LENGTH = 5000  # why the rubric changes (also: why a decision is corrected, why an appeal is decided)
STATEMENT_MAX_LENGTH = 5000  # a team's appeal statement
JUSTIFICATION_MAX_LENGTH = 5000  # why an emergency request cannot wait for the weekly review
OUTCOME_NOTE_MAX_LENGTH = 2000  # the team's note on a grant's realized outcome


def length_errors(field: str, value: str, max_length: int) -> dict[str, list[ValidationError]]:
    """{field: [error]} when `value` is longer than `max_length` (the words of Django's MaxLengthValidator) or holds a
    NUL character, which PostgreSQL cannot store (Django's ProhibitNullCharactersValidator, as its form fields
    check), else {}: every free text a service takes without a form goes through here."""
    try:
        ProhibitNullCharactersValidator()(value)
        MaxLengthValidator(max_length)(value)
    except ValidationError as exc:
        return {field: exc.error_list}
    return {}


def bounded_text(verbose_name: StrOrPromise, *, max_length: int, blank: bool = False) -> models.TextField[Any, Any]:
    """A TextField of at most `max_length` characters: full_clean refuses more, forms and the schema show it.

    Django's TextField passes max_length to its form field and DRF to its serializer field, but does
    not check it itself; the validator does.
    """
    validators = [MaxLengthValidator(max_length)]
    return models.TextField(verbose_name, blank=blank, max_length=max_length, validators=validators)
