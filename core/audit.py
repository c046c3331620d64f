"""Names copied into audit columns (who scored, decided, finalized, published, changed the rubric).

Django's User allows a first and a last name of 150 characters each, so "first last" can be 301
long; the copied `*_name` columns hold 150. The copy is cut to fit (with an ellipsis) instead of
making the action fail (PostgreSQL refuses the row; full_clean refuses the change).
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

AUDIT_NAME_MAX_LENGTH = 150  # the max_length of every copied *_name column
ELLIPSIS = "…"


def fit(text: str, max_length: int = AUDIT_NAME_MAX_LENGTH) -> str:
    """`text` cut to `max_length` characters, ending in an ellipsis when it was cut."""
    if len(text) <= max_length:
        return text
    return text[: max_length - len(ELLIPSIS)].rstrip() + ELLIPSIS


def person_name(user: AbstractBaseUser | AnonymousUser) -> str:
    """The person's full name, else their username, cut to fit an audit column."""
    full = user.get_full_name() if hasattr(user, "get_full_name") else ""
    return fit(full.strip() or user.get_username())
