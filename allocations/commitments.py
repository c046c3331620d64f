"""Commitments as placement constraints: a run's later weeks enter a week's engine run before its new requests.

Pure, no Django and no database (as `allocations.engine`). A commitment is the run's GPUs over the whole week it
continues in, so the engine is given it as a rigid demand (count = minimum, window = its hours exactly): it can only
be placed where it stands, from the week's first hour, continuing the window of the week before without a gap. The
engine's strict priority does the rest: commitments come first (among themselves, runs that began in an earlier
week first, then by their place in that week's priority order), so a new request, however high it ranks, never
takes their GPUs; one that no longer fits (the pool shrank) is "not placed" with the engine's reason. See
docs/multi-week-runs.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from allocations import engine

_HOUR = timedelta(hours=1)


@dataclass(frozen=True, slots=True)
class CommittedWeek:
    """One week of a run, as the engine's input needs it: GPUs of a pool over [start, end), on whole hours."""

    ref: int  # the run's request id
    pool: str  # GpuPool.key
    gpu_count: int
    start: datetime  # tz-aware
    end: datetime  # tz-aware
    first_week: str  # the ISO week the run began in
    position: int  # the run's place in that week's priority order


@dataclass(frozen=True, slots=True)
class RunWeek:
    """A later week of a run: its ISO week, its number in the run (2 for the second) and its bounds."""

    week: str
    week_number: int
    start: datetime
    end: datetime


def run_week_gpu_counts(*, asked: Sequence[int], placed_first: int, weeks_granted: int) -> list[int]:
    """The GPUs of each later week of a run (its weeks 2..`weeks_granted`), from what it asked per week (`asked`,
    its first week first) and the GPUs its first week was placed with. A run placed with fewer GPUs than it asked
    in its first week (down to its minimum) keeps at most those in each later week: the work was planned to the
    counts asked, and the committee's grant was sized by the first week. A week that asks fewer gets its own count.

    Raises ValueError when `asked` does not cover the weeks granted."""
    if len(asked) < weeks_granted:
        raise ValueError(f"{len(asked)} weekly counts for a run of {weeks_granted} weeks")
    short = placed_first < asked[0]
    return [min(count, placed_first) if short else count for count in asked[1:weeks_granted]]


def commitment_order(commitment: CommittedWeek) -> tuple[str, int, int]:
    """The order commitments hold among themselves: runs that began earlier first, then by priority there."""
    return (commitment.first_week, commitment.position, commitment.ref)


def commitment_demand(commitment: CommittedWeek) -> engine.Demand:
    """The rigid demand of one committed week: all its GPUs, exactly over its hours, never preemptible.

    Raises ValueError when the commitment does not span whole hours (a week's bounds always do)."""
    span = commitment.end - commitment.start
    if span <= timedelta(0) or span % _HOUR:
        raise ValueError(f"commitment {commitment.ref}: {commitment.start}–{commitment.end} is not whole hours")
    return engine.Demand(
        ref=commitment.ref,
        pool=commitment.pool,
        gpu_count=commitment.gpu_count,
        min_gpu_count=commitment.gpu_count,
        duration_hours=span // _HOUR,
        earliest_start=commitment.start,
        latest_end=commitment.end,
        preemptible_ok=False,
    )


def demands_with_commitments(
    *, commitments: Sequence[CommittedWeek], demands: Sequence[engine.Demand]
) -> list[engine.Demand]:
    """A week's demands for the engine: its commitments first (`commitment_order`), then its new requests in the
    order given. A ref both committed and requested anew is refused (ValueError): a run is one request."""
    committed = [commitment_demand(c) for c in sorted(commitments, key=commitment_order)]
    refs = {demand.ref for demand in committed}
    clash = sorted(refs & {demand.ref for demand in demands})
    if clash:
        raise ValueError(f"requests {clash} are both committed and requested in the week")
    return [*committed, *demands]


def week_hours_between(start: datetime, end: datetime) -> int:
    """Whole hours from `start` to `end` (a week has 167, 168 or 169 in the committee's zone)."""
    return (end - start) // _HOUR
