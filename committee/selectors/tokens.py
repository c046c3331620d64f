"""A person's API tokens, as their profile lists them."""

from __future__ import annotations

from committee.models import PersonalToken
from committee.selectors.people import Viewer


def personal_token_list(*, user: Viewer) -> list[PersonalToken]:
    """The person's own tokens, by name (never anyone else's)."""
    if not user.is_authenticated:
        return []
    return list(PersonalToken.objects.filter(user=user).order_by("name"))
