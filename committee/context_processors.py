from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from django.http import HttpRequest
from django.utils import timezone

from committee import selectors
from committee.models import RequestStatus

# The banner shows while a week's intake closes within this many hours.
INTAKE_BANNER_HOURS = 48


def roles(request: HttpRequest) -> dict[str, object]:
    """What the navigation needs to know about who is looking."""
    user = getattr(request, "user", None)
    if user is None:
        return {"is_committee": False, "is_chair": False}
    roles = selectors.viewer_roles(user=user)
    return {"is_committee": roles.committee, "is_chair": roles.chair}


def _once(compute: Callable[[], Any]) -> Callable[[], Any]:
    """A value the template reads only where it is shown, computed at most once per request."""
    cache: list[Any] = []

    def value() -> Any:
        if not cache:
            cache.append(compute())
        return cache[0]

    return value


def inbox_and_intake(request: HttpRequest) -> dict[str, object]:
    """The inbox badge's count and the intake banner, each read only if the page shows it (one query each)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {
        "inbox_unread": _once(lambda: selectors.inbox_unread_count(user=user)),
        "intake_banner": _once(lambda: intake_banner(user=user)),
    }


def intake_banner(*, user: Any) -> dict[str, Any] | None:
    """For a team member while the open week's intake closes within INTAKE_BANNER_HOURS: when, and what each of
    their teams still has to do (no request submitted, drafts not submitted). None otherwise."""
    team_ids = selectors.viewer_roles(user=user).team_ids
    if not team_ids:
        return None
    cycle = selectors.cycle_open_for_intake()
    now = timezone.now()
    if cycle is None or not cycle.intake_open or cycle.intake_closes_at - now > timedelta(hours=INTAKE_BANNER_HOURS):
        return None
    teams = list(selectors.team_list_for_user(user=user))
    statuses: dict[int, list[str]] = {}
    for team_id, status in cycle.requests.filter(team_id__in=team_ids).values_list("team_id", "status"):
        statuses.setdefault(team_id, []).append(status)
    unfiled = [t.name for t in teams if RequestStatus.SUBMITTED not in statuses.get(t.pk, [])]
    drafts = sum(s.count(RequestStatus.DRAFT) for s in statuses.values())
    return {
        "cycle": cycle,
        "hours_left": max(1, int((cycle.intake_closes_at - now).total_seconds() // 3600)),
        "unfiled": unfiled,
        "drafts": drafts,
    }
