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

from allocations.models import Department, Team
from committee.models import (
    CommitteeSeat,
    GrantSource,
    MembershipRole,
    ReportingLine,
    SeatRole,
    SsoGroupMapping,
    TeamMembership,
)
from core.locks import write_transaction

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


@write_transaction
def sso_memberships_sync(*, user: User, groups: Iterable[str]) -> SsoSyncResult:
    """Make `user`'s single sign-on memberships and seats what `groups` give now; leave hand-made ones alone."""
    wanted_teams, wanted_seats = sso_grants_for_groups(groups=groups)
    result = SsoSyncResult()
    # Lock the person's rows: two sign-ins at once (two tabs) must not both add the same membership.
    User.objects.select_for_update(no_key=True).filter(pk=user.pk).first()

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


@write_transaction
def sso_manager_sync(*, user: User, manager: str | None) -> ReportingLine | None:
    """Keep `user`'s reporting line what the identity provider says at sign-in: `manager` is the manager's username,
    "" when the provider names none (a line single sign-on made is removed), None when it said nothing (left as it
    is). A line set by hand (source "manual") is never changed. Returns the line in force afterwards."""
    line = ReportingLine.objects.select_for_update(no_key=True).filter(person=user).first()
    if manager is None or (line is not None and line.source != GrantSource.SSO):
        return line
    if manager == "" or manager == user.get_username():
        if line is not None:
            line.delete()
            logger.info("sso reporting line of %s removed", user.username)
        return None
    if line is None:
        line = ReportingLine.objects.create(person=user, manager_username=manager, source=GrantSource.SSO)
    elif line.manager_username != manager:
        line.manager_username = manager
        line.changed_at = timezone.now()
        line.save(update_fields=["manager_username", "changed_at"])
    else:
        return line
    logger.info("sso reporting line of %s: reports to %s", user.username, manager)
    return line




@dataclass(frozen=True)
class GroupMapEntry:
    """One line of a group map file: a group and what it gives (a team with a role, a seat, or both), and for a team
    the department (cost centre) it belongs to, if the file says."""

    group: str
    team_slug: str | None
    team_role: str
    seat_role: str
    department_slug: str | None = None

    def key(self) -> tuple[str, str, str]:
        return ("team", self.group, self.team_slug or "") if self.team_slug else ("seat", self.group, self.seat_role)


@dataclass
class GroupMapResult:
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0


def sso_group_map_parse(data: object) -> list[GroupMapEntry]:
    """A group map as read from YAML or JSON (a list of {group, team, role, seat, department}); ValueError names every
    fault. `department` goes with `team`: the team's department (the org chart kept in the same file)."""
    if not isinstance(data, list):
        raise ValueError("the group map is a list of entries: - group: <name>, with team: <slug> and/or seat: <role>")
    known_teams = set(Team.objects.values_list("slug", flat=True))
    known_departments = set(Department.objects.values_list("slug", flat=True))
    errors: list[str] = []
    entries: list[GroupMapEntry] = []
    for number, item in enumerate(data, start=1):
        where = f"entry {number}"
        if not isinstance(item, dict):
            errors.append(f"{where}: not a mapping of group, team, role, seat")
            continue
        unknown = set(item) - {"group", "team", "role", "seat", "department"}
        group, team, role, seat, department = (item.get(k) for k in ("group", "team", "role", "seat", "department"))
        if unknown:
            errors.append(f"{where}: unknown keys {', '.join(sorted(map(str, unknown)))}")
        if not isinstance(group, str) or not group.strip() or len(group) > 200:
            errors.append(f"{where}: group must be a name of 1 to 200 characters")
            continue
        where = f"entry {number} ({group})"
        if team is None and seat is None:
            errors.append(f"{where}: gives nothing: set team, seat or both")
        if team is not None and team not in known_teams:
            errors.append(f"{where}: no team with the slug {team!r}")
        if role is not None and (team is None or role not in MembershipRole.values):
            errors.append(f"{where}: role is {' or '.join(MembershipRole.values)}, and only with a team")
        if seat is not None and seat not in SeatRole.values:
            errors.append(f"{where}: seat is one of {', '.join(SeatRole.values)}")
        if department is not None and (team is None or department not in known_departments):
            errors.append(f"{where}: department is the slug of a department, and only with a team")
        entries.append(GroupMapEntry(group=group.strip(), team_slug=team, team_role=role or MembershipRole.MEMBER,
                                     seat_role=seat or "", department_slug=department))
    # One mapping per group and team, and per group and seat (the table's unique constraints).
    given: set[tuple[str, str, str]] = set()
    for entry in entries:
        for kind, value in (("team", entry.team_slug or ""), ("seat", entry.seat_role)):
            if value and (kind, entry.group, value) in given:
                errors.append(f"{entry.group}: {kind} {value!r} is given twice")
            given.add((kind, entry.group, value))
    placed: dict[str, str] = {}
    for entry in entries:
        department = entry.department_slug
        if entry.team_slug and department and placed.setdefault(entry.team_slug, department) != department:
            errors.append(f"team {entry.team_slug!r} is put in two departments")
    if errors:
        raise ValueError("; ".join(errors))
    return entries


def _label(group: str, team: str | None, role: str, seat: str) -> str:
    gives = [f"team {team} ({role})"] if team else []
    gives += [f"seat {seat}"] if seat else []
    return f"{group} → {', '.join(gives)}"


@write_transaction
def sso_group_map_apply(*, entries: Iterable[GroupMapEntry], prune: bool, dry_run: bool = False) -> GroupMapResult:
    """Make the single sign-on groups what `entries` say (for configuration kept in a file, not typed in the admin).

    An entry is matched to the mapping of the same group and team (or, without a team, the same group and seat)
    and updated in place; others are added. With `prune`, mappings the file does not name are removed. People's
    memberships follow at their next sign-in (or the next LDAP session check). With `dry_run`, nothing is saved.
    """
    result = GroupMapResult()
    teams = dict(Team.objects.values_list("slug", "id"))
    existing = {
        (("team", m.group, m.team.slug) if m.team is not None else ("seat", m.group, m.seat_role)): m
        for m in SsoGroupMapping.objects.select_for_update(of=("self",), no_key=True).select_related("team")
    }
    wanted = {entry.key(): entry for entry in entries}
    if prune:
        for key, mapping in existing.items():
            if key not in wanted:
                result.removed.append(_label(mapping.group, mapping.team.slug if mapping.team else None,
                                             mapping.team_role, mapping.seat_role))
                mapping.delete()
    for key, entry in wanted.items():
        label = _label(entry.group, entry.team_slug, entry.team_role, entry.seat_role)
        found = existing.get(key)
        if found is None:
            SsoGroupMapping.objects.create(group=entry.group, team_id=teams.get(entry.team_slug or ""),
                                           team_role=entry.team_role, seat_role=entry.seat_role)
            result.added.append(label)
        elif (found.team_role, found.seat_role) != (entry.team_role, entry.seat_role):
            found.team_role, found.seat_role = entry.team_role, entry.seat_role
            found.save(update_fields=["team_role", "seat_role"])
            result.changed.append(label)
        else:
            result.unchanged += 1
    _departments_apply(entries=wanted.values(), result=result)
    if dry_run:
        transaction.set_rollback(True)
    return result


def _departments_apply(*, entries: Iterable[GroupMapEntry], result: GroupMapResult) -> None:
    """Put each team an entry names with a department into it (the team's history keeps the file as the reason)."""
    wanted = {entry.team_slug: entry.department_slug for entry in entries if entry.team_slug and entry.department_slug}
    if not wanted:
        return
    departments = dict(Department.objects.filter(slug__in=set(wanted.values())).values_list("slug", "id"))
    for team in Team.objects.select_for_update(no_key=True).filter(slug__in=wanted).order_by("id"):
        department_id = departments[wanted[team.slug]]
        if team.department_id != department_id:
            team.department_id = department_id
            team._change_reason = "single sign-on group map file"  # type: ignore[attr-defined]
            team.save(update_fields=["department"])
            result.changed.append(f"team {team.slug} → department {wanted[team.slug]}")


def sso_group_map_rows() -> list[dict[str, str]]:
    """Every single sign-on group as a group map file's entries (what `sso_groups export` prints)."""
    rows: list[dict[str, str]] = []
    for mapping in (SsoGroupMapping.objects.select_related("team__department")
                    .order_by("group", "team__slug", "seat_role")):
        row = {"group": mapping.group}
        if mapping.team is not None:
            row |= {"team": mapping.team.slug, "role": mapping.team_role}
            if mapping.team.department is not None:
                row["department"] = mapping.team.department.slug
        if mapping.seat_role:
            row["seat"] = mapping.seat_role
        rows.append(row)
    return rows
