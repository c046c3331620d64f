"""Runs over several weeks, the committee's side (docs/multi-week-runs.md): when a week is published, its runs'
later weeks become commitments, and the commitments it carried in are settled on the evidence of the week before."""

from __future__ import annotations

from datetime import datetime

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils.translation import gettext as _

from allocations import selectors as allocation_selectors
from allocations.commitments import run_week_gpu_counts
from allocations.models import AllocationPlan, Commitment, CommitmentState
from allocations.services import (
    PlacedRun,
    commitment_decide,
    commitment_reason_set,
    commitment_settle,
    commitments_record,
)
from committee import selectors
from committee.models import GpuRequest, ReviewCycle
from committee.selectors.publishing import PublishPlacement
from committee.services.events import continuation_event_record
from committee.services.requests import actor_name, request_event_record
from core.errors import StateConflict
from core.locks import write_transaction
from core.texts import stored_text


@write_transaction
def run_commitments_publish(
    *, actor: User, cycle: ReviewCycle, plan: AllocationPlan, placement: PublishPlacement, now: datetime
) -> None:
    """Inside a week's publish (`cycle_plan_place`), after its plan is written:

    - each commitment the week carried in that is not settled yet is settled as the placement saw it: confirmed
      (the run's measured utilization in the week before reached grants.continuation_utilization_pct, or the team
      gave a reason) or withheld (the committee decides at the review; it was not placed);
    - each run of this week the plan placed, granted for more than one week, gets a commitment for each later week
      it was granted (same pool as its window here, the whole of each week, with that week's GPUs:
      `allocations.commitments.run_week_gpu_counts`); a run the new version no
      longer places has its commitments released (allocations.services.commitments_record).

    Each settled continuation is told once (`grant.continuation_confirmed` / `grant.continuation_withheld`:
    the team's inbox, the chat, the webhooks; docs/events.md).
    """
    for continuation in placement.continuations:
        commitment = continuation.commitment
        if commitment.state == CommitmentState.COMMITTED and commitment.settled_at is None:
            settled = commitment_settle(
                commitment=commitment, state=continuation.state, utilization_pct=continuation.utilization_pct,
                threshold_pct=continuation.threshold_pct, by_name=actor_name(actor), now=now,
            )
            continuation_event_record(commitment=settled, now=now)
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
                gpu_counts=run_week_gpu_counts(asked=decision.request.run_gpu_counts, placed_first=window.gpu_count,
                                               weeks_granted=weeks_granted),
            ))
    commitments_record(refs=[demand.ref for demand, _decision in placement.demands], runs=runs)


@write_transaction
def run_continuation_explain(*, actor: User, gpu_request: GpuRequest, week: str, reason: str) -> Commitment:
    """A member of the run's team says why the run used less than the threshold in the week before `week`: the
    commitment for `week` is then confirmed when that week is published (docs/multi-week-runs.md). Recorded in the
    request's history. PermissionDenied for anyone outside the team; ValidationError (nothing written) for a week
    the run holds no commitment in or an empty reason; StateConflict once the week's commitment is settled.
    """
    if not selectors.user_is_team_member(user=actor, team=gpu_request.team):
        raise PermissionDenied(_("Only the run's team explains its use."))
    commitment = Commitment.objects.filter(request_ref=gpu_request.pk, week=week).first()
    if commitment is None:
        raise ValidationError({"week": _("The run holds no commitment in week %(week)s.") % {"week": week}})
    if commitment.state != CommitmentState.COMMITTED or commitment.settled_at is not None:
        raise StateConflict(
            _("Week %(week)s of the run is settled already (%(state)s): the committee decides at its review.")
            % {"week": week, "state": commitment.get_state_display()}
        )
    saved = commitment_reason_set(commitment=commitment, reason=reason)
    request_event_record(request=gpu_request, actor=actor, action="run explained",
                         detail=f"{week}: {saved.team_reason}",
                         detail_text=stored_text("run_explained", week=week, reason=saved.team_reason))
    return saved


@write_transaction
def run_continuation_decide(*, actor: User, commitment: Commitment, confirm: bool, now: datetime) -> Commitment:
    """The committee's decision on a run's continuation into a week that the evidence did not confirm: continue it
    (confirmed: placed first when the week is published, or by its next correction once it is) or release it.

    Who may: the review's decision (`decide_guard`, Act.DECIDE, on the run's request). Only a commitment that is
    withheld, or not settled yet (the review sees what settling would give), and whose week is not over
    (StateConflict otherwise). Recorded in the run's history.
    """
    gpu_request = GpuRequest.objects.select_related("team").get(pk=commitment.request_ref)
    selectors.decide_guard(actor=actor, gpu_request=gpu_request, act=selectors.Act.DECIDE)
    locked = Commitment.objects.select_for_update(no_key=True).get(pk=commitment.pk)
    open_state = locked.state == CommitmentState.WITHHELD or (
        locked.state == CommitmentState.COMMITTED and locked.settled_at is None)
    if not open_state or locked.end <= now:
        raise StateConflict(
            _("Week %(week)s of the run is %(state)s: the committee decides only on a withheld continuation of a "
              "week not over yet.") % {"week": locked.week, "state": locked.get_state_display()}
        )
    state = CommitmentState.CONFIRMED if confirm else CommitmentState.RELEASED
    decided = commitment_decide(commitment=locked, state=state, by_name=actor_name(actor), now=now)
    continuation_event_record(commitment=decided, now=now)
    request_event_record(request=gpu_request, actor=actor, action="run continued" if confirm else "run released",
                         detail=locked.week, detail_text=stored_text("run_week", week=locked.week))
    return decided
