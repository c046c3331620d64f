"""Who is asking: the viewer's roles (committee, chair, teams), read once per request."""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import QuerySet

from allocations.models import Team
from committee.models import (
    CommitteeSeat,
    MembershipRole,
    SeatRole,
    TeamFiling,
    TeamMembership,
)

Viewer = User | AnonymousUser


@dataclass(frozen=True)
class ViewerRoles:
    """Who a person is to Docket: a committee seat (and whether it is the chair's), and their teams."""

    committee: bool
    chair: bool
    team_ids: frozenset[int]
    finance: bool = False  # the finance seat: sets the departments' budgets


NO_ROLES = ViewerRoles(committee=False, chair=False, team_ids=frozenset())
_ROLES_ATTRIBUTE = "_docket_viewer_roles"


class _RequestSerial:
    """Counts requests (committee.apps connects `viewer_roles_new_request` to request_started).

    A kept answer is reused only within the request it was read in, even when one user instance
    is sent through many requests (DRF's force_authenticate in tests does this).
    """

    value = 0


def viewer_roles_new_request(**_kwargs: object) -> None:
    _RequestSerial.value += 1


def viewer_roles(*, user: Viewer) -> ViewerRoles:
    """The viewer's roles, read from the database once (two queries) and kept on the user instance.

    Every guard, selector, serializer and template of a request reads the same answer without
    asking again (as Django's ModelBackend keeps `_perm_cache` on the user). The answer is kept
    for one request; outside requests (commands, tasks) for the life of the instance, so code
    that changes a person's seats or teams and then asks again loads the user anew.
    """
    if not user.is_authenticated:
        return NO_ROLES
    cached = getattr(user, _ROLES_ATTRIBUTE, None)
    if isinstance(cached, tuple) and cached[0] == _RequestSerial.value:
        return cached[1]
    seats = set(CommitteeSeat.objects.active().filter(user=user).values_list("role", flat=True))
    roles = ViewerRoles(
        committee=bool(seats),
        chair=SeatRole.CHAIR in seats,
        finance=SeatRole.FINANCE in seats,
        team_ids=frozenset(TeamMembership.objects.filter(user=user).values_list("team_id", flat=True)),
    )
    setattr(user, _ROLES_ATTRIBUTE, (_RequestSerial.value, roles))
    return roles


def user_is_committee(*, user: Viewer) -> bool:
    return viewer_roles(user=user).committee


def user_is_chair(*, user: Viewer) -> bool:
    return viewer_roles(user=user).chair


def user_is_finance(*, user: Viewer) -> bool:
    return viewer_roles(user=user).finance


def team_list_for_user(*, user: Viewer) -> QuerySet[Team]:
    team_ids = viewer_roles(user=user).team_ids
    if not team_ids:
        return Team.objects.none()
    return Team.objects.filter(pk__in=team_ids).order_by("name")


def user_is_team_member(*, user: Viewer, team: Team) -> bool:
    return team.pk in viewer_roles(user=user).team_ids


def team_lead_ids(*, team: Team) -> list[int]:
    """The active users who lead `team`."""
    rows = TeamMembership.objects.filter(team=team, role=MembershipRole.LEAD, user__is_active=True)
    return sorted(rows.values_list("user_id", flat=True))


def user_is_team_lead(*, user: Viewer, team: Team) -> bool:
    if not user.is_authenticated:
        return False
    return TeamMembership.objects.filter(team=team, user=user, role=MembershipRole.LEAD).exists()


def team_lead_submits(*, team: Team) -> bool:
    """Whether `team` has chosen "members draft, the lead submits" (committee.models.TeamFiling)."""
    return TeamFiling.objects.filter(team=team, lead_submits=True).exists()


def team_filings_led_by(*, user: Viewer) -> list[tuple[Team, bool]]:
    """The teams `user` leads, each with whether its lead submits: the portal's setting."""
    if not user.is_authenticated:
        return []
    led = Team.objects.filter(memberships__user=user, memberships__role=MembershipRole.LEAD).order_by("name")
    on = set(TeamFiling.objects.filter(team__in=led, lead_submits=True).values_list("team_id", flat=True))
    return [(team, team.pk in on) for team in led]
