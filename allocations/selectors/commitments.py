"""Commitments of a week and the evidence their continuation is settled on (docs/multi-week-runs.md)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

from django.db.models import QuerySet

from allocations.commitments import CommittedWeek
from allocations.models import PLACED_STATES, Commitment, CommitmentState, UsageRecord


def commitment_list_for_week(*, week: str) -> QuerySet[Commitment]:
    """Every commitment of `week`, whatever its state, with its pool, cluster, team and first window. One query."""
    return (
        Commitment.objects.filter(week=week)
        .select_related("pool__cluster", "team", "first_window")
        .order_by("first_window__week", "position", "request_ref")
    )


def commitment_list_committed_by_week(*, week: str) -> QuerySet[Commitment]:
    """The later weeks committed by the runs whose first week is `week` (their first window is of that week), by
    run and week, whatever their state now. One query."""
    return (
        Commitment.objects.filter(first_window__week=week)
        .select_related("pool__cluster", "team")
        .order_by("position", "request_ref", "week")
    )


def commitment_list_for_weeks(*, weeks: list[str]) -> QuerySet[Commitment]:
    """Every commitment of these weeks, whatever its state, with its pool, cluster and first window (the policy
    lab's replay places them as the weeks did). One query."""
    return (
        Commitment.objects.filter(week__in=weeks)
        .select_related("pool__cluster", "first_window")
        .order_by("week", "first_window__week", "position", "request_ref")
    )


def commitment_list_for_runs(*, refs: list[int]) -> QuerySet[Commitment]:
    """The commitments of the runs of these requests, by week. One query."""
    return (
        Commitment.objects.filter(request_ref__in=refs).select_related("pool__cluster").order_by("request_ref", "week")
    )


def committed_week(*, commitment: Commitment) -> CommittedWeek:
    """The engine's view of one commitment (allocations.commitments). Uses its pool, cluster and first window."""
    return CommittedWeek(
        ref=commitment.request_ref,
        pool=commitment.pool.key,
        gpu_count=commitment.gpu_count,
        start=commitment.start,
        end=commitment.end,
        first_week=commitment.first_window.week,
        position=commitment.position,
    )


def run_utilization_pct(*, request_ref: int, week: str) -> Decimal | None:
    """The run's measured utilization in `week`: the mean of the usage reported against its windows of that week,
    weighted by each report's hours, to one decimal; None when nothing was reported. One query."""
    rows = UsageRecord.objects.filter(window__request_ref=request_ref, window__week=week).values_list(
        "period_start", "period_end", "mean_utilization_pct"
    )
    weighted = Decimal(0)
    hours = Decimal(0)
    for start, end, pct in rows:
        span = Decimal((end - start).total_seconds()) / 3600
        weighted += span * pct
        hours += span
    if not hours:
        return None
    return (weighted / hours).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)


@dataclass(frozen=True)
class Continuation:
    """Whether a commitment continues, on the evidence of the run's week before it.

    `state` is what settling it now gives: CONFIRMED when the utilization reached the threshold or the team gave a
    reason, WITHHELD otherwise (the committee decides); a commitment already settled keeps its state.
    """

    commitment: Commitment
    utilization_pct: Decimal | None
    threshold_pct: int
    state: str

    @property
    def placed(self) -> bool:
        return self.state in PLACED_STATES

    @property
    def state_label(self) -> str:
        return str(CommitmentState(self.state).label)

    @property
    def met(self) -> bool:
        return self.utilization_pct is not None and self.utilization_pct >= self.threshold_pct


def commitment_continuation(*, commitment: Commitment, previous_week: str, threshold_pct: int) -> Continuation:
    """The evidence for `commitment` (a week of a run) from the run's `previous_week`, against `threshold_pct`.
    One query (none for a commitment already settled)."""
    if commitment.settled_at is not None or commitment.state != CommitmentState.COMMITTED:
        return Continuation(commitment, commitment.utilization_pct, commitment.threshold_pct or threshold_pct,
                            commitment.state)
    utilization = run_utilization_pct(request_ref=commitment.request_ref, week=previous_week)
    met = utilization is not None and utilization >= threshold_pct
    state = CommitmentState.CONFIRMED if met or commitment.team_reason.strip() else CommitmentState.WITHHELD
    return Continuation(commitment, utilization, threshold_pct, state)


def commitment_gpu_hours_by_pool(*, week: str) -> dict[int, int]:
    """Pool id -> the GPU-hours the commitments of `week` that are placed first hold (committed or confirmed): what
    demand against capacity shows as already taken. One query."""
    held: dict[int, int] = {}
    for pool_id, gpus, start, end in Commitment.objects.filter(week=week, state__in=PLACED_STATES).values_list(
        "pool_id", "gpu_count", "start", "end"
    ):
        held[pool_id] = held.get(pool_id, 0) + gpus * int((end - start).total_seconds() // 3600)
    return held


def commitment_rows_for_cluster(
    *, cluster_id: int, week: str | None, ends_after: datetime, pool: str | None = None, team: str | None = None,
    department: str | None = None, active_at: datetime | None = None,
) -> list[tuple[Any, ...]]:
    """The cluster's commitments the windows API shows beside its windows (docs/scheduler-api.md): those of `week`,
    or without it those that have not ended by `ends_after`; every state, so a poller sees a release. Rows of
    `COMMITMENT_COLUMNS`, by id. One query."""
    rows = Commitment.objects.filter(pool__cluster_id=cluster_id)
    rows = rows.filter(week=week) if week is not None else rows.filter(end__gt=ends_after)
    if pool:
        rows = rows.filter(pool__slug=pool)
    if team:
        rows = rows.filter(team__slug=team)
    if department:
        rows = rows.filter(team__department__slug=department)
    if active_at is not None:
        rows = rows.filter(start__lte=active_at, end__gt=active_at)
    return list(rows.order_by("id").values_list(*COMMITMENT_COLUMNS))


# The columns of a commitment the windows API shows (allocations.api.serializers.CommitmentSerializer reads them).
COMMITMENT_COLUMNS = ("id", "week", "pool_id", "team_id", "gpu_count", "start", "end", "state", "request_ref",
                      "week_number", "run_weeks")


def commitment_fingerprint(rows: list[tuple[Any, ...]]) -> str:
    """Changes whenever anything the windows API shows of these commitments does (a state, a count)."""
    return hashlib.sha256(repr(rows).encode()).hexdigest()
