"""Requests and pools as the viewer may see them."""

from __future__ import annotations

from django.db.models import Prefetch, QuerySet
from django.http import Http404

from allocations.models import GpuPool
from committee.models import (
    CycleStatus,
    GpuRequest,
    ReviewCycle,
)
from committee.selectors.people import Viewer, viewer_roles


def cycle_open_for_intake() -> ReviewCycle | None:
    """The cycle teams file into now: the earliest cycle still open."""
    return ReviewCycle.objects.filter(status=CycleStatus.OPEN).order_by("starts_at").first()


def pool_list() -> QuerySet[GpuPool]:
    return GpuPool.objects.select_related("cluster").order_by("cluster__name", "slug")


def _request_queryset() -> QuerySet[GpuRequest]:
    return GpuRequest.objects.select_related(
        "team", "cycle", "pool", "pool__cluster", "usage_report", "impact_forecast", "submitted_by", "created_by"
    ).prefetch_related(Prefetch("alternatives"))


def request_list_for_viewer(*, viewer: Viewer) -> QuerySet[GpuRequest]:
    """Requests a person may read: their teams' requests, or all of them for the committee."""
    if not viewer.is_authenticated:
        return GpuRequest.objects.none()
    queryset = _request_queryset().order_by("-cycle__starts_at", "team__name", "id")
    roles = viewer_roles(user=viewer)
    if roles.committee:
        return queryset
    return queryset.filter(team_id__in=roles.team_ids)


def request_get_for_viewer(*, viewer: Viewer, pk: int) -> GpuRequest:
    """One request, or Http404 if it does not exist or is not the viewer's to read."""
    try:
        return request_list_for_viewer(viewer=viewer).prefetch_related("events").get(pk=pk)
    except GpuRequest.DoesNotExist:
        raise Http404("No such request") from None


def cycle_list_for_team_member(*, viewer: Viewer) -> QuerySet[ReviewCycle]:
    """The weeks the viewer's teams filed in, newest first: what the portal pages through."""
    if not viewer.is_authenticated:
        return ReviewCycle.objects.none()
    team_ids = viewer_roles(user=viewer).team_ids
    return ReviewCycle.objects.filter(requests__team_id__in=team_ids).distinct().order_by("-starts_at", "-id")


def request_list_for_team_member(*, viewer: Viewer) -> QuerySet[GpuRequest]:
    """The team portal: only the viewer's own teams, even for committee members."""
    if not viewer.is_authenticated:
        return GpuRequest.objects.none()
    team_ids = viewer_roles(user=viewer).team_ids
    return _request_queryset().filter(team_id__in=team_ids).order_by("-cycle__starts_at", "team__name", "id")
