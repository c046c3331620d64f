"""Reads of corrections and appeals: a week's history of them, and what a viewer may do on a request."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import QuerySet
from django.utils import timezone

from allocations import selectors as allocation_selectors
from committee.models import Appeal, AppealStatus, CycleStatus, DecisionCorrection, GpuRequest, ReviewCycle
from committee.selectors.deciding import Act, decide_refusal, parties_map
from committee.selectors.people import Viewer, viewer_roles


def correction_list_for_cycle(*, cycle: ReviewCycle) -> QuerySet[DecisionCorrection]:
    """A week's corrections, oldest first (the record lists them in the order they were made)."""
    return DecisionCorrection.objects.filter(cycle=cycle).select_related("decision").order_by("corrected_at", "id")


def appeal_list_for_cycle(*, cycle: ReviewCycle) -> QuerySet[Appeal]:
    """A week's appeals, oldest first, with the request and the correction an amendment made."""
    return (
        Appeal.objects.filter(cycle=cycle)
        .select_related("request__team", "request__pool", "request__decision", "correction")
        .order_by("filed_at", "id")
    )


def appeal_window_for_cycle(*, cycle: ReviewCycle) -> tuple[datetime, datetime] | None:
    """(opened, closes) of the week's appeal window: from its plan's first publication for
    DOCKET_APPEAL_WINDOW_HOURS; None while nothing is published."""
    first = allocation_selectors.plan_for_week(week=cycle.week, version=1)
    if first is None:
        return None
    return first.published_at, first.published_at + timedelta(hours=settings.DOCKET_APPEAL_WINDOW_HOURS)


@dataclass(frozen=True)
class RequestCorrections:
    """What the request page shows of a request's corrections and appeals, and which forms it offers the viewer."""

    corrections: list[DecisionCorrection]
    appeals: list[Appeal]
    open_appeal: Appeal | None
    window_closes_at: datetime | None
    window_open: bool
    can_correct: bool  # the decide guard's Act.CORRECT, in a finalized or published week
    can_appeal: bool  # a member of the team, in the window, without an open appeal
    can_decide_appeal: bool  # the decide guard's Act.ANSWER_APPEAL, with an open appeal
    is_team_member: bool
    published: bool
    decided: bool = field(default=False)
    can_amend: bool = field(default=False)  # the decide guard's Act.AMEND, with an open appeal
    states_exceptions: bool = field(default=False)  # the chair: may grant an unranked request as an exception


def request_corrections_for_viewer(*, viewer: Viewer, gpu_request: GpuRequest, now: datetime | None = None
                                   ) -> RequestCorrections:
    """The request page's block on corrections and appeals, for `viewer` at `now`. A constant number of queries."""
    now = now or timezone.now()
    roles = viewer_roles(user=viewer)
    cycle = gpu_request.cycle
    decision = getattr(gpu_request, "decision", None)
    corrections = list(
        DecisionCorrection.objects.filter(decision__request=gpu_request).order_by("corrected_at", "id")
    ) if decision is not None else []
    appeals = list(Appeal.objects.filter(request=gpu_request).order_by("filed_at", "id"))
    open_appeal = next((a for a in appeals if a.status == AppealStatus.OPEN), None)
    published = cycle.status == CycleStatus.PUBLISHED
    window = appeal_window_for_cycle(cycle=cycle) if published else None
    window_open = window is not None and now <= window[1]
    team_member = gpu_request.team_id in roles.team_ids
    finalized = cycle.status in (CycleStatus.FINALIZED, CycleStatus.PUBLISHED)
    parties = parties_map(requests=[gpu_request])[gpu_request.pk] if roles.committee else None

    def may(act: Act) -> bool:
        return parties is not None and decide_refusal(actor=viewer, parties=parties, act=act) is None

    return RequestCorrections(
        corrections=corrections,
        appeals=appeals,
        open_appeal=open_appeal,
        window_closes_at=window[1] if window else None,
        window_open=window_open,
        can_correct=finalized and decision is not None and may(Act.CORRECT),
        can_appeal=team_member and published and window_open and open_appeal is None and decision is not None,
        can_decide_appeal=open_appeal is not None and may(Act.ANSWER_APPEAL),
        can_amend=open_appeal is not None and may(Act.AMEND),
        states_exceptions=roles.chair,
        is_team_member=team_member,
        published=published,
        decided=decision is not None and finalized,
    )
