from __future__ import annotations

from django.http import HttpRequest

from committee import selectors


def roles(request: HttpRequest) -> dict[str, object]:
    """What the navigation needs to know about who is looking."""
    user = getattr(request, "user", None)
    if user is None:
        return {"is_committee": False, "is_chair": False}
    roles = selectors.viewer_roles(user=user)
    return {"is_committee": roles.committee, "is_chair": roles.chair}
