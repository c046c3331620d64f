"""Sign-in lockouts (django-axes' AXES_HANDLER): per username and address, and per address (docs/security.md).

`AXES_LOCKOUT_PARAMETERS` lists the username+address pair first and the address alone second, so axes
records each failure once and hands this handler both counts. Axes compares one number with one limit
(`AXES_FAILURE_LIMIT`, the pair's `LOGIN_FAILURE_LIMIT`); `get_failures` answers the larger of the
pair's count and the address's count less the difference of the two limits, so the pair is refused at
its limit and the address, whatever usernames it tries, at `LOGIN_ADDRESS_FAILURE_LIMIT`.
"""

from __future__ import annotations

from typing import Any

from axes.handlers.database import AxesDatabaseHandler
from django.conf import settings
from django.db.models import QuerySet, Sum
from django.http import HttpRequest


def _failures(attempts: QuerySet[Any]) -> int:
    return int(attempts.aggregate(total=Sum("failures_since_start"))["total"] or 0)


class LockoutHandler(AxesDatabaseHandler):
    def get_failures(self, request: HttpRequest, credentials: dict[str, Any] | None = None) -> int:
        pair_attempts, address_attempts = self.get_user_attempts(request, credentials)
        pair = _failures(pair_attempts)
        address = _failures(address_attempts)
        # Read by the lockout page (committee.views.auth.locked_out) to say which limit was reached.
        request.docket_address_locked = address >= settings.LOGIN_ADDRESS_FAILURE_LIMIT  # type: ignore[attr-defined]
        return max(pair, address - (settings.LOGIN_ADDRESS_FAILURE_LIMIT - settings.LOGIN_FAILURE_LIMIT))

    def reset_user_attempts(self, request: HttpRequest, credentials: dict[str, Any] | None = None) -> int:
        """A success clears its own pair only: a valid account of one's own buys no guesses at others."""
        pair_attempts = self.filter_user_attempts(request, credentials)[0]
        count, _ = pair_attempts.delete()
        return int(count)
