"""Reads, already scoped to who asks."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Prefetch, QuerySet
from django.http import Http404

from allocations.models import GpuPool, Team
from committee.models import (
    CommitteeSeat,
    CycleStatus,
    GpuRequest,
    ReviewCycle,
    SeatRole,
    TeamMembership,
)

User = AbstractBaseUser | AnonymousUser


def user_is_committee(*, user: User) -> bool:
    if not user.is_authenticated:
        return False
    return CommitteeSeat.objects.active().filter(user=user).exists()


def user_is_chair(*, user: User) -> bool:
    if not user.is_authenticated:
        return False
    return CommitteeSeat.objects.active().filter(user=user, role=SeatRole.CHAIR).exists()


def team_list_for_user(*, user: User) -> QuerySet[Team]:
    if not user.is_authenticated:
        return Team.objects.none()
    return Team.objects.filter(memberships__user=user).order_by("name")


def user_is_team_member(*, user: User, team: Team) -> bool:
    return user.is_authenticated and TeamMembership.objects.filter(user=user, team=team).exists()


def cycle_open_for_intake() -> ReviewCycle | None:
    """The cycle teams file into now: the earliest cycle still open."""
    return ReviewCycle.objects.filter(status=CycleStatus.OPEN).order_by("starts_at").first()


def pool_list() -> QuerySet[GpuPool]:
    return GpuPool.objects.select_related("cluster").order_by("cluster__name", "slug")


def _request_queryset() -> QuerySet[GpuRequest]:
    return GpuRequest.objects.select_related(
        "team", "cycle", "pool", "pool__cluster", "usage_report", "impact_forecast", "submitted_by", "created_by"
    ).prefetch_related(Prefetch("alternatives"))


def request_list_for_viewer(*, viewer: User) -> QuerySet[GpuRequest]:
    """Requests a person may read: their teams' requests, or all of them for the committee."""
    queryset = _request_queryset().order_by("-cycle__starts_at", "team__name", "id")
    if user_is_committee(user=viewer):
        return queryset
    return queryset.filter(team__memberships__user=viewer)


def request_get_for_viewer(*, viewer: User, pk: int) -> GpuRequest:
    """One request, or Http404 if it does not exist or is not the viewer's to read."""
    try:
        return request_list_for_viewer(viewer=viewer).prefetch_related("events").get(pk=pk)
    except GpuRequest.DoesNotExist:
        raise Http404("No such request") from None


def request_list_for_team_member(*, viewer: User) -> QuerySet[GpuRequest]:
    """The team portal: only the viewer's own teams, even for committee members."""
    return _request_queryset().filter(team__memberships__user=viewer).order_by("-cycle__starts_at", "team__name", "id")
