"""Emergency requests as each viewer may read them."""

from __future__ import annotations

from django.db.models import Q, QuerySet
from django.http import Http404

from committee.models import EmergencyRequest, ReviewCycle
from committee.selectors.people import Viewer, viewer_roles


def _emergencies() -> QuerySet[EmergencyRequest]:
    return EmergencyRequest.objects.select_related(
        "request", "request__team", "request__pool", "request__pool__cluster", "request__cycle", "plan",
        "request__decision",
    ).prefetch_related("approvals")


def emergency_list_for_viewer(*, viewer: Viewer) -> QuerySet[EmergencyRequest]:
    """The committee sees every emergency request; a team member those of their teams; others none."""
    roles = viewer_roles(user=viewer)
    if roles.committee:
        return _emergencies()
    return _emergencies().filter(request__team_id__in=roles.team_ids)


def emergency_get(*, viewer: Viewer, pk: int) -> EmergencyRequest:
    """One emergency request the viewer may read; Http404 otherwise (as for a request of another team)."""
    found = emergency_list_for_viewer(viewer=viewer).filter(pk=pk).first()
    if found is None:
        raise Http404("No such emergency request")
    return found


def emergency_list_for_review(*, cycle: ReviewCycle) -> list[EmergencyRequest]:
    """What a week's review decides after the fact: the emergencies filed for it, and older ones still open.

    An emergency filed when no review was coming (`review_cycle` empty) is listed at every later
    review until one decides on it.
    """
    return list(
        _emergencies()
        .filter(Q(review_cycle=cycle) | Q(review_cycle__isnull=True, request__cycle__starts_at__lt=cycle.starts_at,
                                          posthoc_outcome=""))
        .order_by("filed_at", "id")
    )
