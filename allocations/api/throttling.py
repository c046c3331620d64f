"""The schedulers' rate limit: counted per scheduler client (its token), API_RATE_SCHEDULER."""

from __future__ import annotations

from rest_framework.request import Request

from allocations.models import SchedulerClient
from core.throttling import CacheRateThrottle


class SchedulerRateThrottle(CacheRateThrottle):
    """Each scheduler client (token) counts alone; requests by people are left to PersonRateThrottle."""

    scope = "scheduler"

    def ident(self, request: Request) -> str | None:
        return str(request.auth.pk) if isinstance(request.auth, SchedulerClient) else None
