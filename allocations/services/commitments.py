"""Writes of commitments: a run's later weeks recorded when its first week is placed, their continuation
settled on evidence, and what its team gives back carried into them (docs/multi-week-runs.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _

from allocations.commitments import RunWeek
from allocations.models import AllocationPlan, AllocationWindow, Commitment, CommitmentState
from core.locks import write_transaction


@dataclass(frozen=True)
class PlacedRun:
    """A run whose first week a plan placed: the window it continues, its weeks after the first, its place in the
    week's priority order."""

    window: AllocationWindow
    run_weeks: int
    later_weeks: Sequence[RunWeek]
    position: int
    # The GPUs of each of `later_weeks` (allocations.commitments.run_week_gpu_counts); empty: the window's in each.
    gpu_counts: Sequence[int] = ()

    def gpu_count(self, index: int) -> int:
        """The GPUs of the run's `index`th later week (0 for its second week)."""
        return self.gpu_counts[index] if self.gpu_counts else self.window.gpu_count


@write_transaction
def commitments_record(*, refs: Sequence[int], runs: Sequence[PlacedRun]) -> list[Commitment]:
    """Make the commitments of the runs a week's plan placed, and release those it no longer places.

    `refs` are every request of the week (placed or not); `runs` the runs among them the plan placed. A run's
    commitment for a later week is created (state committed) or, still unsettled, follows the plan's window (the
    run's GPUs for that week, its first window); one of a request in `refs` that no run asks for any more is
    released. A commitment already settled (confirmed, withheld, or decided by the committee) keeps its state and
    GPUs. Returns the run's commitments as they stand.
    """
    wanted = {(run.window.request_ref, week.week) for run in runs for week in run.later_weeks}
    existing = {
        (c.request_ref, c.week): c
        for c in Commitment.objects.select_for_update(no_key=True).filter(request_ref__in=list(refs)).order_by("id")
    }
    for key, held in existing.items():
        if key not in wanted and held.state != CommitmentState.RELEASED:
            held.state = CommitmentState.RELEASED
            held.save(update_fields=["state"])
    kept: list[Commitment] = []
    for run in runs:
        window = run.window
        assert window.request_ref is not None
        for index, week in enumerate(run.later_weeks):
            gpu_count = run.gpu_count(index)
            found = existing.get((window.request_ref, week.week))
            if found is None:
                commitment = Commitment.objects.create(
                    request_ref=window.request_ref, team=window.team, pool=window.pool, week=week.week,
                    week_number=week.week_number, run_weeks=run.run_weeks, gpu_count=gpu_count,
                    position=run.position, start=week.start, end=week.end, first_window=window,
                )
            else:
                commitment = found
            # Unsettled (a release by a correction is not a decision): it follows the plan's window again.
            if found is not None and commitment.settled_at is None and commitment.state in (
                    CommitmentState.COMMITTED, CommitmentState.RELEASED):
                commitment.state = CommitmentState.COMMITTED
                commitment.gpu_count, commitment.first_window, commitment.position = (
                    gpu_count, window, run.position)
                commitment.save(update_fields=["state", "gpu_count", "first_window", "position"])
            kept.append(commitment)
    return kept


@write_transaction
def commitment_settle(
    *, commitment: Commitment, state: str, utilization_pct: Decimal | None, threshold_pct: int, by_name: str,
    now: datetime,
) -> Commitment:
    """Settle a commitment's continuation as its week is published: confirmed or withheld, with the evidence.
    A commitment already released stays as it is."""
    locked = Commitment.objects.select_for_update(no_key=True).get(pk=commitment.pk)
    if locked.state == CommitmentState.RELEASED:
        return locked
    if state not in (CommitmentState.CONFIRMED, CommitmentState.WITHHELD):
        raise ValidationError({"state": _("A commitment is settled as confirmed or withheld.")})
    locked.state = state
    locked.utilization_pct = utilization_pct
    locked.threshold_pct = threshold_pct
    locked.settled_by_name = by_name
    locked.settled_at = now
    locked.save(update_fields=["state", "utilization_pct", "threshold_pct", "settled_by_name", "settled_at"])
    return locked


COMMITMENT_REASON_MAX_LENGTH = 2000


@write_transaction
def commitment_reason_set(*, commitment: Commitment, reason: str) -> Commitment:
    """The team's reason why its run used less than the threshold in the week before `commitment`: with it the
    commitment is confirmed when its week is settled. Only while it is committed and not settled (StateConflict,
    from the caller's check, otherwise); a reason is required and at most 2,000 characters (ValidationError)."""
    reason = reason.strip()
    if not reason:
        raise ValidationError({"reason": _("Say why the run used less than the threshold.")})
    if len(reason) > COMMITMENT_REASON_MAX_LENGTH:
        raise ValidationError({"reason": _("At most %(n)d characters.") % {"n": COMMITMENT_REASON_MAX_LENGTH}})
    locked = Commitment.objects.select_for_update(no_key=True).get(pk=commitment.pk)
    locked.team_reason = reason
    locked.save(update_fields=["team_reason"])
    return locked


@write_transaction
def commitment_decide(
    *, commitment: Commitment, state: str, by_name: str, now: datetime, utilization_pct: Decimal | None,
    threshold_pct: int,
) -> Commitment:
    """The committee's decision on a commitment's continuation: confirmed or released, by whom and when. The
    caller checked who may and that it is open (committee.services.runs.run_continuation_decide). One not settled
    yet keeps the evidence the committee decided on (`utilization_pct` against `threshold_pct`), as a settled one
    keeps its own."""
    if state not in (CommitmentState.CONFIRMED, CommitmentState.RELEASED):
        raise ValidationError({"state": _("The committee continues a run or releases it.")})
    locked = Commitment.objects.select_for_update(no_key=True).get(pk=commitment.pk)
    fields = ["state", "settled_by_name", "settled_at"]
    if locked.settled_at is None:
        locked.utilization_pct, locked.threshold_pct = utilization_pct, threshold_pct
        fields += ["utilization_pct", "threshold_pct"]
    locked.state, locked.settled_by_name, locked.settled_at = state, by_name, now
    locked.save(update_fields=fields)
    return locked


@write_transaction
def commitments_give_back(
    *, request_ref: int, after_week: str, gpu_count: int, by_name: str, now: datetime
) -> list[Commitment]:
    """A run's team gave back GPUs of its window in `after_week` through to that week's end, keeping `gpu_count`:
    each of the run's later weeks that has no plan yet then holds at most `gpu_count` GPUs or, keeping none, is
    released, settled by `by_name` at `now` (so no correction of an earlier week commits it again). A week already
    published, or released or withheld before, stays as it is. Returns the commitments changed."""
    published = set(AllocationPlan.objects.filter(week__gt=after_week).values_list("week", flat=True).distinct())
    changed = []
    for commitment in Commitment.objects.select_for_update(no_key=True).filter(
            request_ref=request_ref, week__gt=after_week,
            state__in=(CommitmentState.COMMITTED, CommitmentState.CONFIRMED)).order_by("week"):
        if commitment.week in published:
            continue
        if gpu_count <= 0:
            commitment.state, commitment.settled_by_name, commitment.settled_at = (
                CommitmentState.RELEASED, by_name, now)
            commitment.save(update_fields=["state", "settled_by_name", "settled_at"])
        elif commitment.gpu_count > gpu_count:
            commitment.gpu_count = gpu_count
            commitment.save(update_fields=["gpu_count"])
        else:
            continue
        changed.append(commitment)
    return changed
