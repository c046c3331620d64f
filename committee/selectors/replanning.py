"""What a change to a published week's decisions does to its plan, before it is published.

A correction or an appeal's amendment in a published week publishes the next plan version
(committee.services.publishing.cycle_plan_place): the windows that have started stay, the rest is
placed again, and other teams' windows may move. `decision_change_preview` computes that next
version with publishing's own placement (`cycle_publish_placement`, the changed decision in place
of the stored one) and compares it, request by request, with the current plan: every window that
would appear, be withdrawn, move, shrink, grow or change tier. Nothing is written. `plan_changes`
is the same comparison between two stored versions (the teams' notices after publishing).
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from allocations import engine
from allocations import selectors as allocation_selectors
from allocations.explanations import placement_text
from allocations.models import AllocationPlan
from committee import weeks
from committee.models import Alternative, CycleStatus, Decision, GpuRequest, ReviewCycle
from committee.selectors.publishing import PublishPlacement, cycle_publish_placement, demand_priority
from committee.selectors.review import decision_list_for_cycle

# How a request's window changes from one plan version to the next, in the order a sentence lists them.
NEW, WITHDRAWN, MOVED, SHRUNK, GREW, TIER = "new", "withdrawn", "moved", "shrunk", "grew", "tier"
CHANGE_LABELS = {
    NEW: gettext_lazy("new window"),
    WITHDRAWN: gettext_lazy("withdrawn"),
    MOVED: gettext_lazy("moves"),
    SHRUNK: gettext_lazy("shrinks"),
    GREW: gettext_lazy("grows"),
    TIER: gettext_lazy("changes tier"),
}


@dataclass(frozen=True)
class PlacedSpan:
    """One request's window in a plan version, as the engine and the schedulers see it."""

    pool_key: str
    gpu_count: int
    start: datetime
    end: datetime
    tier: str


@dataclass(frozen=True)
class WindowChange:
    """One request whose window differs between two plan versions."""

    request_id: int
    title: str
    team_name: str
    kinds: tuple[str, ...]  # NEW, WITHDRAWN, MOVED, SHRUNK, GREW, TIER
    before: PlacedSpan | None
    after: PlacedSpan | None
    before_text: str  # "16 A100, Mon 00:00–Wed 00:00, standard", or ""
    after_text: str

    @property
    def labels(self) -> list[str]:
        return [str(CHANGE_LABELS[kind]) for kind in self.kinds]

    gpu_model: str = ""

    def as_params(self) -> dict[str, object]:
        """Codes and numbers for a notification, rendered in its reader's language by `window_change_text`."""

        def span(s: PlacedSpan | None) -> dict[str, object] | None:
            if s is None:
                return None
            return {"gpu_count": s.gpu_count, "start": engine.instant_param(s.start),
                    "end": engine.instant_param(s.end), "tier": s.tier}

        return {"kinds": list(self.kinds), "gpu_model": self.gpu_model, "before": span(self.before),
                "after": span(self.after)}


@dataclass(frozen=True)
class TeamChanges:
    team_name: str
    changes: tuple[WindowChange, ...]


@dataclass(frozen=True)
class PlanPreview:
    """The next plan version a change would publish, against the current one."""

    cycle: ReviewCycle
    version: int  # the version it would publish
    changes: tuple[WindowChange, ...]  # every request whose window changes, by team, then title
    digest: str  # what the chair confirms: publishing refuses when the placement no longer matches it
    keep_other_teams: bool = False  # other teams' windows that have not started stay as they are

    @property
    def teams(self) -> list[TeamChanges]:
        by_team: dict[str, list[WindowChange]] = {}
        for change in self.changes:
            by_team.setdefault(change.team_name, []).append(change)
        return [TeamChanges(team_name=name, changes=tuple(rows)) for name, rows in by_team.items()]


def placement_digest(placement: PublishPlacement) -> str:
    """A fingerprint of the windows a placement publishes (what the chair saw on the confirmation page)."""
    rows = sorted(
        (w.ref, w.pool, w.gpu_count, w.start.isoformat(), w.end.isoformat(), w.tier) for w in placement.result.windows
    )
    return hashlib.sha256(repr(rows).encode()).hexdigest()[:32]


def _spans(windows: Iterable[engine.EngineWindow]) -> dict[int, PlacedSpan]:
    return {
        w.ref: PlacedSpan(pool_key=w.pool, gpu_count=w.gpu_count, start=w.start, end=w.end, tier=w.tier)
        for w in windows
    }


def _plan_spans(plan: AllocationPlan | None) -> dict[int, PlacedSpan]:
    if plan is None:
        return {}
    windows = allocation_selectors.plan_window_list(plan=plan).select_related("pool__cluster")
    return {
        w.request_ref: PlacedSpan(pool_key=w.pool.key, gpu_count=w.gpu_count, start=w.start, end=w.end, tier=w.tier)
        for w in windows
        if w.request_ref is not None
    }


def _kinds(before: PlacedSpan | None, after: PlacedSpan | None) -> tuple[str, ...]:
    if before is None:
        return (NEW,) if after is not None else ()
    if after is None:
        return (WITHDRAWN,)
    kinds = []
    if (before.start, before.end) != (after.start, after.end) or before.pool_key != after.pool_key:
        kinds.append(MOVED)
    if after.gpu_count < before.gpu_count:
        kinds.append(SHRUNK)
    elif after.gpu_count > before.gpu_count:
        kinds.append(GREW)
    if after.tier != before.tier:
        kinds.append(TIER)
    return tuple(kinds)


def _text(span: PlacedSpan | None, request: GpuRequest, week_start: datetime) -> str:
    if span is None:
        return ""
    return placement_text(gpu_count=span.gpu_count, gpu_model=request.pool.gpu_model, start=span.start,
                          end=span.end, tier=span.tier, week_start=week_start)


def spans_compare(
    *, cycle: ReviewCycle, before: dict[int, PlacedSpan], after: dict[int, PlacedSpan]
) -> tuple[WindowChange, ...]:
    """Every request whose window differs between `before` and `after`, by team name, then title. One query."""
    refs = [ref for ref in set(before) | set(after) if _kinds(before.get(ref), after.get(ref))]
    requests = GpuRequest.objects.select_related("team", "pool").in_bulk(refs)
    changes = [
        WindowChange(
            request_id=ref,
            title=requests[ref].title,
            team_name=requests[ref].team.name,
            kinds=_kinds(before.get(ref), after.get(ref)),
            before=before.get(ref),
            after=after.get(ref),
            before_text=_text(before.get(ref), requests[ref], cycle.starts_at),
            after_text=_text(after.get(ref), requests[ref], cycle.starts_at),
            gpu_model=requests[ref].pool.gpu_model,
        )
        for ref in refs
        if ref in requests
    ]
    return tuple(sorted(changes, key=lambda c: (c.team_name, c.title, c.request_id)))


def plan_changes(*, cycle: ReviewCycle, plan: AllocationPlan) -> tuple[WindowChange, ...]:
    """What changed for each request from the plan version before `plan` to `plan` (empty for version 1)."""
    if plan.version <= 1:
        return ()
    previous = allocation_selectors.plan_for_week(week=plan.week, version=plan.version - 1)
    return spans_compare(cycle=cycle, before=_plan_spans(previous), after=_plan_spans(plan))


def other_teams_refs(*, gpu_request: GpuRequest) -> frozenset[int]:
    """The requests of other teams than `gpu_request`'s with a window in its week's current plan: what a
    correction keeps in place when the policy (DOCKET_CORRECTIONS_KEEP_OTHER_TEAMS) or the chair says so."""
    plan = allocation_selectors.plan_for_week(week=gpu_request.cycle.week)
    if plan is None:
        return frozenset()
    windows = allocation_selectors.plan_window_list(plan=plan).exclude(team_id=gpu_request.team_id)
    return frozenset(ref for ref in windows.values_list("request_ref", flat=True) if ref is not None)


def decision_change_preview(
    *,
    gpu_request: GpuRequest,
    outcome: str,
    granted_gpu_count: int | None,
    alternative: Alternative | None,
    now: datetime,
    keep_other_teams: bool = False,
) -> PlanPreview:
    """The plan version a correction (or amendment) of `gpu_request`'s decision would publish at `now`.

    The decision is changed in memory only; the week's other decisions are read as stored, in the
    order publishing gives them. With `keep_other_teams`, other teams' windows stay as they are even
    when they have not started. For a week not yet published there is no plan to change: no changes.
    """
    cycle = gpu_request.cycle
    current = allocation_selectors.plan_for_week(week=cycle.week)
    version = (current.version + 1) if current is not None else 1
    if cycle.status != CycleStatus.PUBLISHED:
        return PlanPreview(cycle=cycle, version=version, changes=(), digest="")
    decisions: Sequence[Decision] = sorted(
        decision_list_for_cycle(cycle=cycle), key=lambda d: demand_priority(rank=d.priority_rank, decision=d)
    )
    changed: list[Decision] = []
    for decision in decisions:
        if decision.request_id == gpu_request.pk:
            decision = copy.copy(decision)
            decision.outcome = outcome
            decision.granted_gpu_count = granted_gpu_count
            decision.alternative = alternative
        changed.append(decision)
    keep = other_teams_refs(gpu_request=gpu_request) if keep_other_teams else frozenset()
    placement = cycle_publish_placement(cycle=cycle, now=now, decisions=changed, keep=keep)
    changes = spans_compare(cycle=cycle, before=_plan_spans(current), after=_spans(placement.result.windows))
    return PlanPreview(cycle=cycle, version=version, changes=changes, digest=placement_digest(placement),
                       keep_other_teams=keep_other_teams)


def window_change_text(params: Mapping[str, Any], *, week: str) -> str:
    """A notification's window change (`WindowChange.as_params`) in the reader's language:
    "moves, shrinks: 16 A100, Mon 00:00–Wed 00:00, standard → 14 A100, Thu 00:00–Sat 00:00, standard"."""
    week_start = weeks.week_bounds(week)[0]

    def text(span: Mapping[str, Any] | None) -> str:
        if not span:
            return "—"
        return placement_text(
            gpu_count=int(span["gpu_count"]), gpu_model=str(params.get("gpu_model") or ""),
            start=datetime.fromisoformat(str(span["start"]).replace("Z", "+00:00")),
            end=datetime.fromisoformat(str(span["end"]).replace("Z", "+00:00")), tier=str(span["tier"]),
            week_start=week_start,
        )

    labels = ", ".join(str(CHANGE_LABELS[k]) for k in params.get("kinds") or () if k in CHANGE_LABELS)
    return _("%(changes)s: %(before)s → %(after)s") % {
        "changes": labels, "before": text(params.get("before")), "after": text(params.get("after")),
    }
