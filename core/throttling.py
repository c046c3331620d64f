"""Rate limits on the API, counted in the cache (Redis in production, shared by every worker)."""

from __future__ import annotations

import logging
from typing import Any

from redis.exceptions import RedisError
from rest_framework.request import Request
from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle

from core import breaker

logger = logging.getLogger(__name__)


class CacheRateThrottle(SimpleRateThrottle):
    """DRF's SimpleRateThrottle with a subject chosen by `ident` (None: this throttle does not apply).

    A request over the rate answers 429 with Retry-After and a JSON `detail` (DRF's Throttled).
    When the cache cannot be reached the request is let through and a warning is logged: a
    rate limit is a guard against runaway scripts, not a reason to refuse a scheduler its windows.
    After such a failure the cache is not asked for a while (core.breaker.CACHE): a hung Redis costs
    one request its socket timeout, not every request.
    """

    def ident(self, request: Request) -> str | None:
        """Whose requests count together (a token, a person), or None; each subclass says (allocations, committee)."""
        raise NotImplementedError(f"{type(self).__name__} must say whose requests it counts")

    def get_rate(self) -> str | None:
        # Read when used, not when the class is defined (DRF's default), so a changed setting applies.
        rate = api_settings.DEFAULT_THROTTLE_RATES.get(str(self.scope))
        return None if rate is None else str(rate)

    def get_cache_key(self, request: Request, view: Any) -> str | None:
        subject = self.ident(request)
        if subject is None:
            return None
        return self.cache_format % {"scope": self.scope, "ident": subject}

    def allow_request(self, request: Request, view: Any) -> bool:
        if not breaker.CACHE.allows():
            return True
        try:
            allowed = super().allow_request(request, view)
        except (RedisError, OSError) as exc:
            logger.warning("API rate limit %s not applied: the cache did not answer (%s)", self.scope, exc)
            breaker.CACHE.failed(exc)
            return True
        breaker.CACHE.succeeded()
        return allowed
