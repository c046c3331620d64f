"""Decided and placed: what the committee said about a request, what the published plan gives it, the difference.

One source for every surface (the request page, the team portal, the decision record, the digest and
the "decision published" notification, the dashboards, the API), so they all say the same thing in
the same words and numbers:

    decided   the outcome, the GPUs it grants, GPU-hours = GPUs × the request's duration
    placed    the windows of the week's current plan version for the request, each as
              `allocations.explanations.placement_text` names it, their GPU-hours, the engine's explanation
    status    placed as decided / shortened (N of M GPUs) / placed preemptible (demoted to the burst
              reserve) / not placed / not yet published, with the engine's reason
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import models
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from allocations import selectors as allocation_selectors
from allocations.explanations import explanation_text, placement_text
from allocations.models import AllocationWindow, Commitment
from committee.models import (
    PLACING_OUTCOMES,
    CycleStatus,
    Decision,
    DecisionOutcome,
    GpuRequest,
    LifecycleEvent,
    LifecycleEventType,
    RequestPoolOption,
    RequestStatus,
    ReviewCycle,
)
from committee.selectors.people import Viewer, viewer_roles
from committee.selectors.realized import overdue_block_reason  # outcomes against forecasts: the one block check
from core.numbers import format_gpu_hours

__all__ = [
    "DecidedPart",
    "PlacedPart",
    "PlacedWindow",
    "PlacementStatus",
    "RequestOutcome",
    "decided_label",
    "outcome_summary",
    "overdue_block_reason",
    "placement_label",
    "placement_params_text",
    "request_outcome_get",
    "request_outcome_map",
]

_GRANTS = PLACING_OUTCOMES


class PlacementStatus(models.TextChoices):
    """How a request's placement compares with its decision."""

    AS_DECIDED = "as_decided", gettext_lazy("placed as decided")
    SHORTENED = "shortened", gettext_lazy("shortened")
    # Placed as decided, then the team gave part of it back (committee/services/release.py): not a difference.
    GIVEN_BACK = "given_back", gettext_lazy("part given back by the team")
    PREEMPTIBLE = "preemptible", gettext_lazy("placed preemptible (demoted to the burst reserve)")
    NOT_PLACED = "not_placed", gettext_lazy("not placed")
    NOT_PUBLISHED = "not_published", gettext_lazy("not yet published")
    # The week is published but its plan holds no record of the request (plans published outside the
    # weekly cycle, such as the demo's history weeks, place demands that are not requests).
    NOT_RECORDED = "not_recorded", gettext_lazy("placement not recorded")
    NOT_GRANTED = "not_granted", gettext_lazy("nothing to place")
    UNDECIDED = "undecided", gettext_lazy("no decision yet")


# The placements that are not what the committee decided.
_DIFFERENCES = (PlacementStatus.SHORTENED, PlacementStatus.PREEMPTIBLE, PlacementStatus.NOT_PLACED)


@dataclass(frozen=True)
class DecidedPart:
    """The committee's decision in numbers. `gpu_count` and `gpu_hours` are None for a deferral or rejection."""

    outcome: str
    outcome_label: str
    requested_gpu_count: int
    gpu_count: int | None
    duration_hours: int
    rationale: str
    alternative_description: str = ""  # a grant of the cheaper alternative: what it is
    alternative_gpu_hours: int | None = None  # and the GPU-hours the team said it needs
    fast_lane: bool = False  # granted on submission in the fast lane (docs/fast-lane.md)

    @property
    def gpu_hours(self) -> int | None:
        return None if self.gpu_count is None else self.gpu_count * self.duration_hours

    @property
    def is_grant(self) -> bool:
        return self.outcome in _GRANTS


@dataclass(frozen=True)
class PlacedWindow:
    """One window of the current plan for the request, with the phrase every surface uses for it."""

    window: AllocationWindow
    text: str

    @property
    def gpu_hours(self) -> int:
        return round(self.window.gpu_hours)


@dataclass(frozen=True)
class PlacedPart:
    """What the week's current plan version gives the request (possibly no window) and the engine's words."""

    week: str
    version: int
    published_at: Any
    week_start: datetime
    windows: list[PlacedWindow]
    explanation: str
    reasons: list[dict[str, Any]]

    @property
    def gpu_count(self) -> int:
        """The most GPUs the request holds at once (0 when nothing was placed)."""
        return max((w.window.gpu_count for w in self.windows), default=0)

    @property
    def gpu_hours(self) -> int:
        return sum(w.gpu_hours for w in self.windows)

    @property
    def text(self) -> str:
        """The windows as one phrase ("16 A100, Wed 12:00–Fri 04:00, standard"), or "" when there is none."""
        return "; ".join(w.text for w in self.windows)


@dataclass(frozen=True)
class RequestOutcome:
    """A request's decision, its placement and how they differ, as the viewer may see them."""

    request_id: int
    decided: DecidedPart | None
    placed: PlacedPart | None
    status: PlacementStatus
    shortened: bool = False
    preemptible: bool = False
    # What the placement is held to when it is not the decision's own week: a run's later week is held to its
    # commitment (that week's GPUs over the whole week), not to the first week's decision.
    held_to: DecidedPart | None = None

    @property
    def differs(self) -> bool:
        """A grant the plan does not honour as decided (shortened, demoted or not placed)."""
        return self.status in _DIFFERENCES

    @property
    def reason(self) -> str:
        """The engine's explanation of the placement ("" before it is published)."""
        return self.placed.explanation if self.placed is not None else ""

    @property
    def status_label(self) -> str:
        """The difference in words: "shortened (24 of 32 GPUs)", "placed as decided", "not placed"…"""
        decided = self.held_to or self.decided
        return placement_label(
            status=self.status,
            decided_gpu_count=decided.gpu_count if decided else None,
            decided_gpu_hours=decided.gpu_hours if decided else None,
            placed_gpu_count=self.placed.gpu_count if self.placed else 0,
            placed_gpu_hours=self.placed.gpu_hours if self.placed else 0,
            preemptible=self.preemptible,
        )

    def as_params(self) -> dict[str, Any]:
        """The outcome as JSON-native values from which `placement_params_text` writes it again, in any language.

        What a notification stores: codes, numbers and the windows' data, not sentences.
        """
        decided, placed = self.decided, self.placed
        return {
            "placement": str(self.status),
            "decided_outcome": decided.outcome if decided else None,
            "decided_gpu_count": decided.gpu_count if decided else None,
            "requested_gpu_count": decided.requested_gpu_count if decided else None,
            "decided_gpu_hours": decided.gpu_hours if decided else None,
            "alternative_description": decided.alternative_description if decided else "",
            "alternative_gpu_hours": decided.alternative_gpu_hours if decided else None,
            "fast_lane": decided.fast_lane if decided else False,
            "placed_gpu_count": placed.gpu_count if placed else None,
            "placed_gpu_hours": placed.gpu_hours if placed else None,
            "preemptible": self.preemptible,
            "week_start": placed.week_start.isoformat() if placed else None,
            "windows": [
                {"gpu_count": w.window.gpu_count, "gpu_model": w.window.pool.gpu_model,
                 "start": w.window.start.isoformat(), "end": w.window.end.isoformat(), "tier": w.window.tier}
                for w in (placed.windows if placed else [])
            ],
            "reasons": placed.reasons if placed else [],
            "explanation": placed.explanation if placed else "",
        }

    @property
    def decided_text(self) -> str:
        """ "Grant, 32 GPUs (1,536 GPU-hours)", "Partial grant, 8 of 24 GPUs (384 GPU-hours)", "Defer", or "" without
        a decision the viewer may see."""
        if self.decided is None:
            return ""
        return decided_label(
            outcome=self.decided.outcome,
            gpu_count=self.decided.gpu_count,
            requested_gpu_count=self.decided.requested_gpu_count,
            gpu_hours=self.decided.gpu_hours,
            alternative_description=self.decided.alternative_description,
            alternative_gpu_hours=self.decided.alternative_gpu_hours,
            fast_lane=self.decided.fast_lane,
        )

    @property
    def placed_text(self) -> str:
        """ "16 A100, Wed 12:00–Fri 04:00, standard (768 GPU-hours)", "not placed", "not yet published", or ""."""
        if self.status == PlacementStatus.NOT_GRANTED or (self.status == PlacementStatus.UNDECIDED and not self.placed):
            return ""
        if self.placed is None or not self.placed.windows:
            return str(self.status.label)
        return _("%(windows)s (%(hours)s GPU-hours)") % {
            "windows": self.placed.text, "hours": format_gpu_hours(self.placed.gpu_hours)
        }

    @property
    def summary(self) -> str:
        """The short form for tables and subjects: "Grant 32 → placed 24 (shortened)", "Grant 32 → not placed"; a
        fast-lane grant says so."""
        summary = outcome_summary(
            outcome=self.decided.outcome if self.decided else None,
            gpu_count=self.decided.gpu_count if self.decided else None,
            status=self.status,
            placed_gpu_count=self.placed.gpu_count if self.placed is not None else None,
            shortened=self.shortened,
            preemptible=self.preemptible,
        )
        if self.decided is not None and self.decided.fast_lane and self.decided.is_grant:
            return _("%(summary)s, granted in the fast lane") % {"summary": summary}
        return summary


def outcome_summary(
    *, outcome: str | None, gpu_count: int | None, status: str, placed_gpu_count: int | None, shortened: bool,
    preemptible: bool,
) -> str:
    """`RequestOutcome.summary` from plain values (stored ones too): "Grant 32 → placed 24 (shortened)"."""
    if outcome is None:
        return str(PlacementStatus.UNDECIDED.label)
    label = str(DecisionOutcome(outcome).label) if outcome in DecisionOutcome.values else outcome
    if outcome not in _GRANTS:
        return label
    decided = f"{label} {gpu_count}"
    if placed_gpu_count is None or status in (
        PlacementStatus.NOT_PLACED, PlacementStatus.NOT_PUBLISHED, PlacementStatus.NOT_RECORDED
    ):
        return _("%(decided)s → %(placed)s") % {"decided": decided, "placed": PlacementStatus(status).label}
    placed = _("placed %(gpus)d") % {"gpus": placed_gpu_count}
    if status == PlacementStatus.AS_DECIDED:
        return _("%(decided)s → %(placed)s") % {"decided": decided, "placed": placed}
    tags = []
    if shortened:
        tags.append(str(_("shortened")))
    if preemptible:
        tags.append(str(_("preemptible")))
    return _("%(decided)s → %(placed)s (%(difference)s)") % {
        "decided": decided, "placed": placed, "difference": ", ".join(tags)
    }


def placement_label(
    *,
    status: str,
    decided_gpu_count: int | None,
    decided_gpu_hours: int | None,
    placed_gpu_count: int,
    placed_gpu_hours: int,
    preemptible: bool,
) -> str:
    """A placement's difference from its decision in words, from plain values (stored ones too)."""
    if status == PlacementStatus.GIVEN_BACK:
        return _("part given back by the team (%(placed)s of %(decided)s GPU-hours kept)") % {
            "placed": format_gpu_hours(placed_gpu_hours), "decided": format_gpu_hours(decided_gpu_hours or 0)
        }
    if status != PlacementStatus.SHORTENED:
        return str(PlacementStatus(status).label)
    if placed_gpu_count < (decided_gpu_count or 0):
        text = _("shortened (%(placed)d of %(decided)d GPUs)") % {
            "placed": placed_gpu_count, "decided": decided_gpu_count or 0
        }
    else:
        text = _("shortened (%(placed)s of %(decided)s GPU-hours)") % {
            "placed": format_gpu_hours(placed_gpu_hours), "decided": format_gpu_hours(decided_gpu_hours or 0)
        }
    if preemptible:
        text = _("%(shortened)s, preemptible in the burst reserve") % {"shortened": text}
    return text


def decided_label(
    *,
    outcome: str,
    gpu_count: int | None,
    requested_gpu_count: int | None,
    gpu_hours: int | None,
    alternative_description: str = "",
    alternative_gpu_hours: int | None = None,
    fast_lane: bool = False,
) -> str:
    """A decision in words: "Grant, 32 GPUs (1,536 GPU-hours)", "Partial grant, 8 of 24 GPUs (384 GPU-hours)",
    "Granted the alternative: Distilled ranker (1,500 GPU-hours), 32 GPUs (1,536 GPU-hours)"; the numbers written
    as the reader's language writes them (core.numbers). A fast-lane grant says so: "Grant, 4 GPUs (96 GPU-hours),
    granted in the fast lane"."""
    if fast_lane and gpu_count is not None:
        return _("%(decided)s, granted in the fast lane") % {"decided": decided_label(
            outcome=outcome, gpu_count=gpu_count, requested_gpu_count=requested_gpu_count, gpu_hours=gpu_hours)}
    label = str(DecisionOutcome(outcome).label) if outcome in DecisionOutcome.values else outcome
    if gpu_count is None:
        return label
    if outcome == DecisionOutcome.ALTERNATIVE and alternative_description:
        text = _(
            "Granted the alternative: %(description)s (%(alt_hours)s GPU-hours), %(gpus)d GPUs (%(hours)s GPU-hours)"
        )
        return text % {
            "description": alternative_description,
            "alt_hours": format_gpu_hours(alternative_gpu_hours or 0),
            "gpus": gpu_count,
            "hours": format_gpu_hours(gpu_hours or 0),
        }
    if outcome == DecisionOutcome.PARTIAL and requested_gpu_count:
        return _("%(outcome)s, %(gpus)d of %(asked)d GPUs (%(hours)s GPU-hours)") % {
            "outcome": label, "gpus": gpu_count, "asked": requested_gpu_count,
            "hours": format_gpu_hours(gpu_hours or 0),
        }
    return _("%(outcome)s, %(gpus)d GPUs (%(hours)s GPU-hours)") % {
        "outcome": label, "gpus": gpu_count, "hours": format_gpu_hours(gpu_hours or 0)
    }


def placement_params_text(params: dict[str, Any]) -> dict[str, Any]:
    """What `RequestOutcome.as_params` stored, in the active language: decided, placed, difference, summary, reason,
    and whether the placement `differs` from the decision and whether the grant has no window (`unplaced`)."""
    status = params.get("placement")
    if status not in PlacementStatus.values:
        return {}
    gpus, hours = params.get("decided_gpu_count"), params.get("decided_gpu_hours")
    decided = decided_label(
        outcome=str(params.get("decided_outcome") or ""), gpu_count=gpus,
        requested_gpu_count=params.get("requested_gpu_count"), gpu_hours=hours,
        alternative_description=str(params.get("alternative_description") or ""),
        alternative_gpu_hours=params.get("alternative_gpu_hours"), fast_lane=bool(params.get("fast_lane")),
    )
    week_start = params.get("week_start")
    windows = [
        placement_text(
            gpu_count=w["gpu_count"], gpu_model=w["gpu_model"], start=datetime.fromisoformat(w["start"]),
            end=datetime.fromisoformat(w["end"]), tier=w["tier"], week_start=datetime.fromisoformat(week_start),
        )
        for w in params.get("windows") or []
    ] if week_start else []
    reasons = params.get("reasons") or []
    if reasons and week_start:
        reason = explanation_text(reasons, week_start=datetime.fromisoformat(week_start))
    else:
        reason = str(params.get("explanation") or "")
    if status in (PlacementStatus.NOT_GRANTED, PlacementStatus.UNDECIDED):
        placed = ""
    elif windows:
        placed = _("%(windows)s (%(hours)s GPU-hours)") % {
            "windows": "; ".join(windows), "hours": format_gpu_hours(params.get("placed_gpu_hours") or 0)
        }
    else:
        placed = str(PlacementStatus(status).label)
    difference = placement_label(
        status=status,
        decided_gpu_count=gpus,
        decided_gpu_hours=hours,
        placed_gpu_count=params.get("placed_gpu_count") or 0,
        placed_gpu_hours=params.get("placed_gpu_hours") or 0,
        preemptible=bool(params.get("preemptible")),
    )
    summary = outcome_summary(
        outcome=params.get("decided_outcome"), gpu_count=gpus, status=status,
        placed_gpu_count=params.get("placed_gpu_count"), shortened=status == PlacementStatus.SHORTENED,
        preemptible=bool(params.get("preemptible")),
    )
    return {
        "decided": decided,
        "placed": placed,
        "difference": difference,
        "summary": summary,
        "reason": reason,
        "differs": status in _DIFFERENCES,
        "unplaced": status in (PlacementStatus.NOT_PLACED, PlacementStatus.NOT_PUBLISHED, PlacementStatus.NOT_RECORDED),
    }


def _decided(decision: Decision, gpu_request: GpuRequest) -> DecidedPart:
    return DecidedPart(
        outcome=decision.outcome,
        outcome_label=str(decision.get_outcome_display()),
        requested_gpu_count=decision.requested_gpu_count,
        gpu_count=(decision.granted_gpu_count or decision.requested_gpu_count) if decision.outcome in _GRANTS else None,
        duration_hours=gpu_request.duration_hours,
        rationale=decision.rationale_display,
        alternative_description=decision.alternative_description,
        alternative_gpu_hours=decision.alternative_gpu_hours,
        fast_lane=gpu_request.is_fast_lane,
    )


def _placed(allocation: allocation_selectors.RequestAllocation) -> PlacedPart:
    plan = allocation.plan
    windows = [
        PlacedWindow(
            window=w,
            text=placement_text(
                gpu_count=w.gpu_count, gpu_model=w.pool.gpu_model, start=w.start, end=w.end, tier=w.tier,
                week_start=plan.week_starts_at,
            ),
        )
        for w in allocation.windows
    ]
    explanation = allocation.explanation
    return PlacedPart(
        week=plan.week,
        version=plan.version,
        published_at=plan.published_at,
        week_start=plan.week_starts_at,
        windows=windows,
        explanation=explanation.display_text() if explanation is not None else "",
        reasons=list(explanation.reasons) if explanation is not None else [],
    )


def _status(
    decided: DecidedPart, allocation: allocation_selectors.RequestAllocation | None, cycle_status: str | None
) -> tuple[PlacementStatus, bool, bool]:
    if not decided.is_grant:
        return PlacementStatus.NOT_GRANTED, False, False
    if allocation is None or allocation.explanation is None:
        if cycle_status == CycleStatus.PUBLISHED:
            return PlacementStatus.NOT_RECORDED, False, False
        return PlacementStatus.NOT_PUBLISHED, False, False
    windows = allocation.windows
    if not windows:
        return PlacementStatus.NOT_PLACED, False, False
    gpu_count = max(w.gpu_count for w in windows)
    gpu_hours = round(sum(w.gpu_hours for w in windows))
    shortened = gpu_count < (decided.gpu_count or 0) or gpu_hours < (decided.gpu_hours or 0)
    preemptible = any(w.tier == "preemptible" for w in windows)
    if shortened:
        return PlacementStatus.SHORTENED, True, preemptible
    if preemptible:
        return PlacementStatus.PREEMPTIBLE, False, True
    return PlacementStatus.AS_DECIDED, False, False


def _placed_elsewhere(
    *, rows: Sequence[GpuRequest], allocations: Mapping[int, allocation_selectors.RequestAllocation]
) -> dict[int, RequestPoolOption]:
    """The other pool each request's windows are on, where it named it (one query, none when every window is on its
    request's own pool)."""
    pools = {r.pk: {w.pool_id for w in allocations[r.pk].windows} - {r.pool_id} for r in rows if r.pk in allocations}
    wanted = {pk: other.pop() for pk, other in pools.items() if len(other) == 1}
    if not wanted:
        return {}
    options = RequestPoolOption.objects.filter(request_id__in=wanted).select_related("request")
    return {o.request_id: o for o in options if wanted[o.request_id] == o.pool_id}


def _converted(decided: DecidedPart, request: GpuRequest, option: RequestPoolOption) -> DecidedPart:
    """The decision as converted for another pool the request named: its GPUs scaled as the engine's demand scales
    them (committee.selectors.publishing.pool_options_demanded), the hours there."""
    if decided.gpu_count is None:
        return decided
    gpus = max(1, min(option.gpu_count, -(-option.gpu_count * decided.gpu_count // request.gpu_count)))
    return dataclasses.replace(decided, gpu_count=gpus, duration_hours=option.duration_hours)


def request_outcome_map(
    *, requests: Iterable[GpuRequest], viewer: Viewer | None = None
) -> dict[int, RequestOutcome]:
    """Request id -> its decision, its placement and their difference, for every request given.

    With a `viewer`, a team member sees the decision and the placement of their team's requests once
    the week is finalized (the request is "decided"), as `decision_visible_to` says; the committee sees
    them as they are entered. Without one (the archive, the digest, the notifications) everything is
    read. A request placed before its decision (an out-of-cycle plan) has `placed` and the status
    "undecided"; a grant holding less because its team gave GPUs back is "given_back", not "shortened". The caller
    scopes `requests` to what the viewer may read. Five queries, however many requests: the decisions, the cycles'
    statuses and `allocations.selectors.request_allocation_map`'s three; one more when a grant holds less than decided
    (`requests_given_back`), and one when a run is placed in a later week than its own (held to that week's
    commitment: its GPUs over the whole week, `held_to`).
    """
    rows = list(requests)
    if not rows:
        return {}
    ids = [r.pk for r in rows]
    decisions = {d.request_id: d for d in Decision.objects.filter(request_id__in=ids)}
    cycles = {pk: (status, week) for pk, status, week in ReviewCycle.objects.filter(
        pk__in={r.cycle_id for r in rows}).order_by().values_list("pk", "status", "week")}
    statuses = {pk: status for pk, (status, _week) in cycles.items()}
    roles = viewer_roles(user=viewer) if viewer is not None else None
    shown = [
        r for r in rows
        if r.pk in decisions
        and (roles is None or roles.committee or (r.status == RequestStatus.DECIDED and r.team_id in roles.team_ids))
    ]
    shown_ids = {r.pk for r in shown}
    # Grants, and requests without a decision the viewer may see: a plan can place a request before the
    # weekly decision (an out-of-cycle emergency), and published windows are no secret (/windows/).
    allocations = allocation_selectors.request_allocation_map(
        request_refs=[r.pk for r in rows if r.pk not in shown_ids or decisions[r.pk].outcome in _GRANTS]
    )
    result = {
        r.pk: RequestOutcome(
            request_id=r.pk,
            decided=None,
            placed=_placed(allocations[r.pk]) if r.pk in allocations else None,
            status=PlacementStatus.UNDECIDED,
        )
        for r in rows
    }
    statuses_of = {}
    elsewhere = _placed_elsewhere(rows=shown, allocations=allocations)
    run_weeks = _run_weeks_held(rows=shown, allocations=allocations, cycles=cycles)
    held_to: dict[int, DecidedPart] = {}
    for r in shown:
        decided = _decided(decisions[r.pk], r)
        # A grant placed on another pool it named ("either pool") is held to its conversion there, a run's later week
        # to its commitment.
        asked = _converted(decided, r, elsewhere[r.pk]) if r.pk in elsewhere else decided
        if r.pk in run_weeks and decided.is_grant:
            asked = held_to[r.pk] = dataclasses.replace(
                asked, gpu_count=run_weeks[r.pk].gpu_count,
                duration_hours=int((run_weeks[r.pk].end - run_weeks[r.pk].start).total_seconds() // 3600))
        statuses_of[r.pk] = (decided, *_status(asked, allocations.get(r.pk), statuses.get(r.cycle_id)))
    given_back = requests_given_back(
        refs=[pk for pk, (_d, status, _s, _p) in statuses_of.items() if status == PlacementStatus.SHORTENED])
    for r in shown:
        decided, status, shortened, preemptible = statuses_of[r.pk]
        allocation = allocations.get(r.pk)
        if r.pk in given_back:  # fewer GPU-hours because the team gave them back, not because the plan shortened it
            status, shortened = PlacementStatus.GIVEN_BACK, False
        result[r.pk] = RequestOutcome(
            request_id=r.pk,
            decided=decided,
            placed=_placed(allocation) if allocation is not None and decided.is_grant else None,
            status=status,
            shortened=shortened,
            preemptible=preemptible,
            held_to=held_to.get(r.pk),
        )
    return result


def _run_weeks_held(
    *, rows: Sequence[GpuRequest], allocations: Mapping[int, allocation_selectors.RequestAllocation],
    cycles: Mapping[int, tuple[str, str]],
) -> dict[int, Commitment]:
    """Request id -> the commitment of the week its current allocation is in, for the runs placed in a later week
    than their own (one query, none when every allocation is in its request's week)."""
    later = {r.pk: allocations[r.pk].plan.week for r in rows
             if r.pk in allocations and r.cycle_id in cycles and allocations[r.pk].plan.week != cycles[r.cycle_id][1]}
    if not later:
        return {}
    found = Commitment.objects.filter(request_ref__in=list(later), week__in=set(later.values()))
    return {c.request_ref: c for c in found if later.get(c.request_ref) == c.week}


def requests_given_back(*, refs: Iterable[int]) -> set[int]:
    """Which of the requests `refs` gave GPUs of their windows back (a `window.released` event of theirs). One query,
    none without refs."""
    refs = list(refs)
    if not refs:
        return set()
    given = LifecycleEvent.objects.filter(type=LifecycleEventType.WINDOW_RELEASED, request_ref__in=refs)
    return {ref for ref in given.values_list("request_ref", flat=True) if ref is not None}


def request_outcome_get(*, gpu_request: GpuRequest, viewer: Viewer | None = None) -> RequestOutcome:
    """`request_outcome_map` for one request."""
    return request_outcome_map(requests=[gpu_request], viewer=viewer)[gpu_request.pk]
