"""Single sign-on's side of memberships: a person's groups at the identity provider, kept in step at every sign-in.

The provider (OpenID Connect or LDAP, see the `sso` package) says which groups a person is in;
`SsoGroupMapping` rows say what each group gives. `sso_memberships_sync` makes the person's
memberships and seats that came from single sign-on (source "sso") equal to what their groups
give now. Rows made by hand (source "manual") are never changed or removed: a hand-made
membership in a team the groups also give stays as it is.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import timedelta

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from committee.models import (
    CommitteeSeat,
    GrantSource,
    MembershipRole,
    SeatRole,
    SsoGroupMapping,
    TeamMembership,
)

logger = logging.getLogger(__name__)

_ROLE_RANK = {MembershipRole.MEMBER: 0, MembershipRole.LEAD: 1}


@dataclass
class SsoSyncResult:
    """What a sync changed, by team slug and seat role (for the log line and the tests)."""

    teams_added: list[str] = field(default_factory=list)
    teams_changed: list[str] = field(default_factory=list)
    teams_removed: list[str] = field(default_factory=list)
    seats_opened: list[str] = field(default_factory=list)
    seats_ended: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return any((self.teams_added, self.teams_changed, self.teams_removed, self.seats_opened, self.seats_ended))


def sso_grants_for_groups(*, groups: Iterable[str]) -> tuple[dict[int, str], set[str]]:
    """What `groups` give: {team id: membership role} (the highest role any group gives) and the seat roles."""
    names = {name for name in groups if isinstance(name, str) and name}
    teams: dict[int, str] = {}
    seats: set[str] = set()
    for mapping in SsoGroupMapping.objects.filter(group__in=names):
        if mapping.team_id is not None:
            current = teams.get(mapping.team_id)
            if current is None or _ROLE_RANK[MembershipRole(mapping.team_role)] > _ROLE_RANK[MembershipRole(current)]:
                teams[mapping.team_id] = mapping.team_role
        if mapping.seat_role:
            seats.add(mapping.seat_role)
    return teams, seats


@transaction.atomic
def sso_memberships_sync(*, user: User, groups: Iterable[str]) -> SsoSyncResult:
    """Make `user`'s single sign-on memberships and seats what `groups` give now; leave hand-made ones alone."""
    wanted_teams, wanted_seats = sso_grants_for_groups(groups=groups)
    result = SsoSyncResult()
    # Lock the person's rows: two sign-ins at once (two tabs) must not both add the same membership.
    User.objects.select_for_update().filter(pk=user.pk).first()

    memberships = {m.team_id: m for m in TeamMembership.objects.select_related("team").filter(user=user)}
    for team_id, membership in memberships.items():
        if membership.source != GrantSource.SSO:
            continue
        if team_id not in wanted_teams:
            membership.delete()
            result.teams_removed.append(membership.team.slug)
        elif membership.role != wanted_teams[team_id]:
            membership.role = wanted_teams[team_id]
            membership.save(update_fields=["role"])
            result.teams_changed.append(membership.team.slug)
    for team_id, role in wanted_teams.items():
        if team_id not in memberships:
            created = TeamMembership.objects.create(user=user, team_id=team_id, role=role, source=GrantSource.SSO)
            result.teams_added.append(created.team.slug)

    today = timezone.localdate()
    active = list(CommitteeSeat.objects.active(today).filter(user=user))
    held = {seat.role for seat in active}
    for seat in active:
        if seat.source != GrantSource.SSO or seat.role in wanted_seats:
            continue
        if seat.active_from >= today:  # opened today: it never served a full day, so it goes
            seat.delete()
        else:
            seat.active_to = today - timedelta(days=1)
            seat.save(update_fields=["active_to"])
        held.discard(seat.role)
        result.seats_ended.append(seat.role)
    for role in sorted(wanted_seats - held):
        CommitteeSeat.objects.create(user=user, role=SeatRole(role), active_from=today, source=GrantSource.SSO)
        result.seats_opened.append(role)

    if result.changed:
        logger.info("sso memberships of %s: %s", user.username, result)
    return result


