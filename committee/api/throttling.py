"""People's rate limit: counted per user, whether they use a session or personal tokens (API_RATE_USER)."""

from __future__ import annotations

from rest_framework.request import Request

from core.throttling import CacheRateThrottle


class PersonRateThrottle(CacheRateThrottle):
    """All of a person's requests count together: several tokens do not buy a higher rate."""

    scope = "user"

    def ident(self, request: Request) -> str | None:
        user = getattr(request, "user", None)
        return str(user.pk) if user is not None and user.is_authenticated else None
