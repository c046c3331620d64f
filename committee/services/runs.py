"""Runs over several weeks, the committee's side (docs/multi-week-runs.md): when a week is published, its runs'
later weeks become commitments, and the commitments it carried in are settled on the evidence of the week before."""

from __future__ import annotations

from datetime import datetime

from django.contrib.auth.models import User

from allocations import selectors as allocation_selectors
from allocations.models import AllocationPlan, CommitmentState
from allocations.services import PlacedRun, commitment_settle, commitments_record
from committee import selectors
from committee.models import ReviewCycle
from committee.selectors.publishing import PublishPlacement
from committee.services.requests import actor_name
from core.locks import write_transaction


@write_transaction
def run_commitments_publish(
    *, actor: User, cycle: ReviewCycle, plan: AllocationPlan, placement: PublishPlacement, now: datetime
) -> None:
    """Inside a week's publish (`cycle_plan_place`), after its plan is written:

    - each commitment the week carried in that is not settled yet is settled as the placement saw it: confirmed
      (the run's measured utilization in the week before reached grants.continuation_utilization_pct, or the team
      gave a reason) or withheld (the committee decides at the review; it was not placed);
    - each run of this week the plan placed, granted for more than one week, gets a commitment for each later week
      it was granted (same pool and GPUs as its window here, the whole of each week); a run the new version no
      longer places has its commitments released (allocations.services.commitments_record).
    """
    for continuation in placement.continuations:
        commitment = continuation.commitment
        if commitment.state == CommitmentState.COMMITTED and commitment.settled_at is None:
            commitment_settle(
                commitment=commitment, state=continuation.state, utilization_pct=continuation.utilization_pct,
                threshold_pct=continuation.threshold_pct, by_name=actor_name(actor), now=now,
            )
    windows = {
        window.request_ref: window
        for window in allocation_selectors.plan_window_list(plan=plan)
        if window.request_ref is not None
    }
    runs = []
    for position, (demand, decision) in enumerate(placement.demands, start=1):
        weeks_granted = decision.weeks_granted
        window = windows.get(demand.ref)
        if weeks_granted > 1 and window is not None and window.week == cycle.week:
            runs.append(PlacedRun(
                window=window, run_weeks=weeks_granted, position=position,
                later_weeks=selectors.run_later_weeks(week=cycle.week, weeks_granted=weeks_granted),
            ))
    commitments_record(refs=[demand.ref for demand, _decision in placement.demands], runs=runs)
