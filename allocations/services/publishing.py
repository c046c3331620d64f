"""Publishing a plan: the engine's windows for a week become its next plan version."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

from allocations import selectors
from allocations.engine import EngineWindow, Explanation
from allocations.explanations import explanation_text, reasons_as_json
from allocations.models import (
    AllocationPlan,
    AllocationWindow,
    GpuPool,
    PlanExplanation,
    PlanSequence,
    Team,
    WindowTier,
    WindowWithdrawal,
)
from core.locks import write_transaction
from core.texts import text_render


def _window_key(
    *, pool_id: int, team_id: int, gpu_count: int, start: datetime, end: datetime, tier: str, request_ref: int | None
) -> tuple[Any, ...]:
    """What a scheduler sees of a window: equal keys in two versions are the same window."""
    return (pool_id, team_id, gpu_count, start, end, tier, request_ref)


@write_transaction
def plan_publish(
    *,
    week: str,
    week_starts_at: datetime,
    week_ends_at: datetime,
    source_ref: str,
    windows: Sequence[EngineWindow],
    explanations: Sequence[Explanation],
    pools: Mapping[str, GpuPool],
    teams: Mapping[int, Team],
    published_by_name: str,
    note: str = "",
    note_text: dict[str, Any] | None = None,
    refs_are_requests: bool = True,
    standby_gpus: Mapping[int, int] | None = None,
) -> AllocationPlan:
    """Publish the engine's result for `week` as its next plan version, in one transaction.

    `pools` maps the engine's pool keys to pools; `teams` maps each demand's ref (the request
    id) to its team. With `refs_are_requests=False` (a plan placed for no request, like the
    demo's history) the windows keep no request reference and `explanations` must be empty.
    Explanations' times are read on the grid of the week starting at `week_starts_at`. A note a
    person wrote is `note`; one Docket writes is `note_text` (core.texts.stored_text), shown in
    each reader's language and kept in `note` as written now. `standby_gpus` maps a demand's ref to how many GPUs of
    its preemptible window the chair let it take from the pool's cold standby (an emergency, docs/emergencies.md);
    a window carried over keeps what it was published with.

    Version n+1 supersedes n. A window of n that n+1 places identically (pool, team, GPUs,
    start, end, tier, request) is carried over, keeping its id; the other
    windows of n are withdrawn (a `WindowWithdrawal` at this plan's change sequence) and the
    new ones are created. No window row is ever updated.

    Invariants: publishes are serialized on the `PlanSequence` row, so `change_seq` grows in
    commit order and a poller reading in a snapshot sees all of a plan or none of it. Any
    error rolls the whole publish back: the previous version stays current.

    Raises ValidationError for a window outside the week or naming an unknown pool or
    request, and for an explanation naming an unknown request.
    """
    if not refs_are_requests and explanations:
        raise ValidationError(_("Explanations belong to requests; this plan places none."))
    standby_gpus = {ref: gpus for ref, gpus in (standby_gpus or {}).items() if gpus}
    _check_standby(windows=windows, standby_gpus=standby_gpus)
    _check_publishable(
        week_starts_at=week_starts_at,
        week_ends_at=week_ends_at,
        windows=windows,
        explanations=explanations,
        pools=pools,
        teams=teams,
    )
    sequence, _created = PlanSequence.objects.select_for_update(no_key=True).get_or_create(pk=1)
    sequence.value += 1
    sequence.save(update_fields=["value"])
    change_seq = sequence.value

    previous = selectors.plan_for_week(week=week)
    plan = AllocationPlan.objects.create(
        week=week,
        version=previous.version + 1 if previous else 1,
        change_seq=change_seq,
        week_starts_at=week_starts_at,
        week_ends_at=week_ends_at,
        source_ref=source_ref,
        published_by_name=published_by_name,
        supersedes=previous,
        # A note Docket writes is a code (core.texts) read in each reader's language; `note` keeps it as written now.
        note=note or text_render(note_text),
        note_text=note_text or {},
    )

    carried: dict[tuple[Any, ...], list[AllocationWindow]] = {}
    if previous is not None:
        for window in AllocationWindow.objects.filter(week=week, withdrawal__isnull=True).order_by("id"):
            key = _window_key(
                pool_id=window.pool_id,
                team_id=window.team_id,
                gpu_count=window.gpu_count,
                start=window.start,
                end=window.end,
                tier=window.tier,
                request_ref=window.request_ref,
            )
            carried.setdefault(key, []).append(window)

    # The text as published, in the active language: archived records keep it as it was.
    texts = {e.ref: explanation_text(e.reasons, week_start=week_starts_at) for e in explanations}
    new_windows = []
    for engine_window in windows:
        pool, team = pools[engine_window.pool], teams[engine_window.ref]
        key = _window_key(
            pool_id=pool.pk,
            team_id=team.pk,
            gpu_count=engine_window.gpu_count,
            start=engine_window.start,
            end=engine_window.end,
            tier=engine_window.tier,
            request_ref=engine_window.ref if refs_are_requests else None,
        )
        if carried.get(key):
            carried[key].pop(0)  # the same window, still placed: keep it
            continue
        new_windows.append(
            AllocationWindow(
                plan=plan,
                week=week,
                cluster_id=pool.cluster_id,
                pool=pool,
                team=team,
                gpu_count=engine_window.gpu_count,
                start=engine_window.start,
                end=engine_window.end,
                tier=engine_window.tier,
                request_ref=engine_window.ref if refs_are_requests else None,
                explanation=texts.get(engine_window.ref, ""),
                created_seq=change_seq,
                standby_gpu_count=standby_gpus.get(engine_window.ref, 0),
            )
        )
    AllocationWindow.objects.bulk_create(new_windows)
    WindowWithdrawal.objects.bulk_create(
        WindowWithdrawal(window=window, plan=plan, change_seq=change_seq)
        for leftovers in carried.values()
        for window in leftovers
    )
    PlanExplanation.objects.bulk_create(
        PlanExplanation(
            plan=plan,
            request_ref=explanation.ref,
            position=position,
            placed=explanation.placed,
            shortened=explanation.shortened,
            text=texts[explanation.ref],
            reasons=reasons_as_json(explanation.reasons),
        )
        for position, explanation in enumerate(explanations, start=1)
    )
    return plan


def _check_standby(*, windows: Sequence[EngineWindow], standby_gpus: Mapping[int, int]) -> None:
    """Only a preemptible window takes GPUs of the cold standby, at most its own GPUs, and one window a demand."""
    for ref, gpus in standby_gpus.items():
        held = [w for w in windows if w.ref == ref]
        if len(held) != 1 or held[0].tier != "preemptible" or not 0 < gpus <= held[0].gpu_count:
            raise ValidationError(
                _("The cold standby goes only to one preemptible window of a demand, at most its GPUs "
                  "(demand %(ref)s).")
                % {"ref": ref}
            )


def _check_publishable(
    *,
    week_starts_at: datetime,
    week_ends_at: datetime,
    windows: Sequence[EngineWindow],
    explanations: Sequence[Explanation],
    pools: Mapping[str, GpuPool],
    teams: Mapping[int, Team],
) -> None:
    errors: list[str] = []
    if week_ends_at <= week_starts_at:
        errors.append(_("The week must end after it starts."))
    tiers = {choice.value for choice in WindowTier}
    for window in windows:
        if window.pool not in pools:
            errors.append(_("Window for request %(ref)s names unknown pool %(pool)s.") % {"ref": window.ref,
                                                                                           "pool": window.pool})
        if window.ref not in teams:
            errors.append(_("Window names request %(ref)s, which has no team.") % {"ref": window.ref})
        if window.tier not in tiers:
            errors.append(_("Window for request %(ref)s has unknown tier %(tier)s.") % {"ref": window.ref,
                                                                                         "tier": window.tier})
        if not (week_starts_at <= window.start < window.end <= week_ends_at):
            errors.append(_("Window for request %(ref)s lies outside the week.") % {"ref": window.ref})
    refs = [explanation.ref for explanation in explanations]
    if len(set(refs)) != len(refs):
        errors.append(_("A request is explained twice."))
    if errors:
        raise ValidationError(errors)
