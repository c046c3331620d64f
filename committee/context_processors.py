from __future__ import annotations

from django.http import HttpRequest

from committee import selectors


def roles(request: HttpRequest) -> dict[str, object]:
    """What the navigation needs to know about who is looking."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"is_committee": False, "is_chair": False}
    return {
        "is_committee": selectors.user_is_committee(user=user),
        "is_chair": selectors.user_is_chair(user=user),
    }
