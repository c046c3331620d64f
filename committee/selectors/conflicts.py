"""Conflicts of interest found from the organisation, not only declared (docs/conflicts.md).

A committee member is likely conflicted on a request, beside their own team (rule 2 of the decide guard) and a
conflict they declared (rule 3), when:

- they belong to a team of the request's department (`allocations.Department`, `Team.department`): "same department
  as Search (Consumer Products)";
- the manager chain links them to a lead of the requesting team: the lead reports to them, directly or up the chain,
  or they report to the lead. The chain is each person's `committee.ReportingLine` (the identity provider's manager
  claim or attribute, kept at sign-in, or set by hand); a chain that loops is followed once around.

A found conflict recuses the member like a declared one (committee.selectors.deciding) unless the chair waived it
for that member and request (`committee.ConflictWaiver`, in force). `found_conflicts_map` answers for any number of
requests and every seated member in five queries; the review page, the grid and the guard read it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from django.contrib.auth.models import User
from django.db.models import OuterRef, Subquery
from django.utils.translation import gettext as _

from committee.models import CommitteeSeat, ConflictWaiver, GpuRequest, MembershipRole, ReportingLine, TeamMembership
from core.audit import person_name

DEPARTMENT = "department"
MANAGER = "manager"


@dataclass(frozen=True)
class FoundConflict:
    """One member's likely conflict on one request: why (`text`, in the reader's language) and the waiver in force."""

    request_id: int
    member_id: int
    member_name: str
    kind: str  # DEPARTMENT or MANAGER
    text: str  # "same department as Search (Consumer Products)", "Ada Lead (lead of Search) reports to Tomás Tech"
    waiver_id: int | None = None
    waiver_reason: str = ""
    waived_by_name: str = ""

    @property
    def waived(self) -> bool:
        return self.waiver_id is not None


@dataclass
class RequestConflicts:
    """The likely conflicts found on one request, one per member (the first reason found), waived or not."""

    request_id: int
    by_member: dict[int, FoundConflict] = field(default_factory=dict)

    @property
    def recused_ids(self) -> frozenset[int]:
        """The members a found conflict keeps out: every one not waived."""
        return frozenset(m for m, c in self.by_member.items() if not c.waived)

    @property
    def conflicts(self) -> list[FoundConflict]:
        return sorted(self.by_member.values(), key=lambda c: (c.member_name.casefold(), c.member_id))


def manager_chains(*, lines: dict[int, int]) -> dict[int, list[int]]:
    """Each person's managers up the chain, nearest first (`lines`: person id -> manager id). A loop stops the walk
    where it closes (a person is never their own manager). Pure: no query."""
    chains: dict[int, list[int]] = {}
    for person in lines:
        seen = {person}
        chain: list[int] = []
        current = lines.get(person)
        while current is not None and current not in seen:
            chain.append(current)
            seen.add(current)
            current = lines.get(current)
        chains[person] = chain
    return chains


def _manager_text(*, member_is_above: bool, levels: int, member_name: str, lead_name: str, team_name: str) -> str:
    words = {"member": member_name, "lead": lead_name, "team": team_name, "levels": levels}
    if member_is_above:
        if levels == 1:
            return _("%(lead)s (lead of %(team)s) reports to %(member)s") % words
        return _("%(lead)s (lead of %(team)s) reports to %(member)s, %(levels)d levels down") % words
    if levels == 1:
        return _("%(member)s reports to %(lead)s, lead of %(team)s") % words
    return _("%(member)s reports to %(lead)s, lead of %(team)s, %(levels)d levels up") % words


def reporting_lines() -> dict[int, int]:
    """Every reporting line whose manager has an account: person id -> manager id (one query)."""
    manager = User.objects.filter(username=OuterRef("manager_username")).values("pk")[:1]
    return {
        person: manager_id
        for person, manager_id in ReportingLine.objects.annotate(manager_id=Subquery(manager)).values_list(
            "person_id", "manager_id"
        )
        if manager_id is not None and manager_id != person
    }


def found_conflicts_map(
    *, requests: Iterable[GpuRequest], member_ids: Iterable[int] | None = None, members: dict[int, str] | None = None
) -> dict[int, RequestConflicts]:
    """The likely conflicts found on each request for every seated committee member (or only the seated among
    `member_ids`, or exactly `members`: id -> name, for a viewer whose seat is known), with the waivers in force:
    five queries at most for any number of requests and members (four with `members`). The requests' teams are
    select_related by callers. A member of the requesting team is left out (rule 2 keeps them out)."""
    requests = list(requests)
    out = {r.pk: RequestConflicts(request_id=r.pk) for r in requests}
    if not requests:
        return out
    if members is None:
        seats = CommitteeSeat.objects.active().filter(user__is_active=True).select_related("user")
        if member_ids is not None:
            seats = seats.filter(user_id__in=[pk for pk in member_ids if pk is not None])
        members = {seat.user_id: person_name(seat.user) for seat in seats}
    if not members:
        return out
    # The members' teams, with their departments.
    teams_of: dict[int, set[int]] = {}
    in_department: dict[int, list[tuple[int, str, str]]] = {}  # department id -> (member, team name, department)
    for user_id, team_id, team_name, department_id, department_name in (
        TeamMembership.objects.filter(user_id__in=members).order_by("team__name", "pk").values_list(
            "user_id", "team_id", "team__name", "team__department_id", "team__department__name")
    ):
        teams_of.setdefault(user_id, set()).add(team_id)
        if department_id is not None:
            in_department.setdefault(department_id, []).append((user_id, team_name, department_name))
    # The manager chain, against the requesting teams' leads.
    lines = reporting_lines()
    chains = manager_chains(lines=lines)
    team_ids = {r.team_id for r in requests}
    leads: dict[int, list[tuple[int, str]]] = {}
    if lines:
        for team_id, user_id, first, last, username in TeamMembership.objects.filter(
            team_id__in=team_ids, role=MembershipRole.LEAD
        ).order_by("pk").values_list("team_id", "user_id", "user__first_name", "user__last_name", "user__username"):
            leads.setdefault(team_id, []).append((user_id, f"{first} {last}".strip() or username))
    for r in requests:
        found = out[r.pk].by_member
        for member_id in members:
            if r.team_id in teams_of.get(member_id, ()):
                continue  # their own team: rule 2
            for user_id, team_name, department_name in in_department.get(r.team.department_id or -1, ()):
                if user_id == member_id:
                    found[member_id] = FoundConflict(
                        request_id=r.pk, member_id=member_id, member_name=members[member_id], kind=DEPARTMENT,
                        text=_("same department as %(team)s (%(department)s)")
                        % {"team": team_name, "department": department_name},
                    )
                    break
            if member_id in found:
                continue
            for lead_id, lead_name in leads.get(r.team_id, ()):
                if lead_id == member_id:
                    continue
                up_from_lead = chains.get(lead_id, [])
                up_from_member = chains.get(member_id, [])
                if member_id in up_from_lead:
                    text = _manager_text(member_is_above=True, levels=up_from_lead.index(member_id) + 1,
                                         member_name=members[member_id], lead_name=lead_name, team_name=r.team.name)
                elif lead_id in up_from_member:
                    text = _manager_text(member_is_above=False, levels=up_from_member.index(lead_id) + 1,
                                         member_name=members[member_id], lead_name=lead_name, team_name=r.team.name)
                else:
                    continue
                found[member_id] = FoundConflict(request_id=r.pk, member_id=member_id,
                                                 member_name=members[member_id], kind=MANAGER, text=text)
                break
    if any(c.by_member for c in out.values()):
        for waiver in ConflictWaiver.objects.filter(request_id__in=out, withdrawn_at__isnull=True):
            conflict = out[waiver.request_id].by_member.get(waiver.member_id)
            if conflict is not None:
                out[waiver.request_id].by_member[waiver.member_id] = FoundConflict(
                    **{**conflict.__dict__, "waiver_id": waiver.pk, "waiver_reason": waiver.reason,
                       "waived_by_name": waiver.waived_by_name})
    return out


def found_conflict_get(*, gpu_request: GpuRequest, member: User) -> FoundConflict | None:
    """The member's likely conflict on the request, waived or not, or None (five queries at most)."""
    return found_conflicts_map(requests=[gpu_request], member_ids=[member.pk])[gpu_request.pk].by_member.get(member.pk)
