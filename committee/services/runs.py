"""Runs over several weeks, the committee's side (docs/multi-week-runs.md): when a week is published, its runs'
later weeks become commitments, and the commitments it carried in are settled on the evidence of the week before."""

from __future__ import annotations

from datetime import datetime

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils.translation import gettext as _

from allocations import selectors as allocation_selectors
from allocations.commitments import run_week_gpu_counts
from allocations.models import PLACED_STATES, AllocationPlan, Commitment, CommitmentState
from allocations.services import (
    PlacedRun,
    commitment_decide,
    commitment_reason_set,
    commitment_settle,
    commitments_record,
)
from committee import selectors
from committee.models import GpuRequest, LifecycleEventType, RequestStatus, ReviewCycle
from committee.selectors.publishing import PublishPlacement
from committee.services.events import continuation_event_record, lifecycle_event_record, window_event_data
from committee.services.requests import actor_name, request_create, request_event_record, request_submit
from core.errors import StateConflict
from core.locks import write_transaction
from core.texts import stored_text, text_render


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
      `allocations.commitments.run_week_gpu_counts`; its last window: a release may have split it); a run the new
      version no longer places has its commitments released (allocations.services.commitments_record). What a run's
      team gives back is carried into its later weeks by the release (allocations.services.commitments_give_back).

    Each settled continuation is told once (`grant.continuation_confirmed` / `grant.continuation_withheld`:
    the team's inbox, the chat, the webhooks; docs/events.md), and so is each run extended by weeks whose continuing
    request this plan places (`grant.extended`, about the run it continues, once whatever the plan version).
    """
    for continuation in placement.continuations:
        commitment = continuation.commitment
        if commitment.state == CommitmentState.COMMITTED and commitment.settled_at is None:
            settled = commitment_settle(
                commitment=commitment, state=continuation.state, utilization_pct=continuation.utilization_pct,
                threshold_pct=continuation.threshold_pct, by_name=actor_name(actor), now=now,
            )
            continuation_event_record(commitment=settled, now=now)
    # Only a run or an extension of one needs its window read back (its last: a release may have split it).
    run_refs = [demand.ref for demand, decision in placement.demands
                if decision.weeks_granted > 1 or decision.request.extends_run_id is not None]
    windows = allocation_selectors.plan_last_windows(plan=plan, refs=run_refs) if run_refs else {}
    runs = []
    for position, (demand, decision) in enumerate(placement.demands, start=1):
        weeks_granted = decision.weeks_granted
        window = windows.get(demand.ref)
        extended = decision.request.extends_run_id
        if extended is not None and window is not None and window.week == cycle.week:
            lifecycle_event_record(
                type=LifecycleEventType.GRANT_EXTENDED, key=f"grant.extended:run:{demand.ref}",
                team_id=window.team_id, cluster_id=window.cluster_id, request_ref=extended, occurred_at=now,
                data=window_event_data(window, request_id=extended, extension_request_id=demand.ref,
                                       weeks=max(weeks_granted, 1), plan_version=plan.version),
            )
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
    evidence = allocation_selectors.commitment_continuation(  # what the review showed, kept with the decision
        commitment=locked, previous_week=selectors.previous_week(locked.week),
        threshold_pct=selectors.continuation_threshold_pct(week=locked.week))
    decided = commitment_decide(commitment=locked, state=state, by_name=actor_name(actor), now=now,
                                utilization_pct=evidence.utilization_pct, threshold_pct=evidence.threshold_pct)
    continuation_event_record(commitment=decided, now=now)
    request_event_record(request=gpu_request, actor=actor, action="run continued" if confirm else "run released",
                         detail=locked.week, detail_text=stored_text("run_week", week=locked.week))
    return decided


RUN_EXTENSION_REASON_MAX_LENGTH = 2000


@write_transaction
def run_extension_file(
    *, actor: User, gpu_request: GpuRequest, weeks: object, reason: str, now: datetime
) -> GpuRequest:
    """A lead of the run's team asks to extend a running grant over several weeks by `weeks` more weeks
    (docs/multi-week-runs.md): a continuing request of the week right after the run's last held week, filed and
    submitted into that week's review. It asks for the GPUs of the run's last week over that whole week (Monday 00:00
    to Monday 00:00, so it continues the run without a gap when placed) and `weeks` weeks in all; it carries the
    run's evidence and links back to it (`extends_run`, shown on its page and review row). Granted and placed, its
    later weeks become commitments as any run's. Written in both requests' histories.

    Refused, nothing written: PermissionDenied for anyone but a lead of the team; StateConflict when the request is
    not a run the week holds (granted over several weeks or itself an extension, and its last held week not over),
    when that next week's intake is not open, or when the run already has an extension there; ValidationError for
    the weeks (1 to grants.max_weeks) or an empty or too long reason.
    """
    if not selectors.user_is_team_lead(user=actor, team=gpu_request.team):
        raise PermissionDenied(_("Only a lead of %(team)s extends its runs.") % {"team": gpu_request.team.name})
    run = GpuRequest.objects.select_for_update(no_key=True).select_related("team", "cycle", "pool").get(
        pk=gpu_request.pk)
    decision = getattr(run, "decision", None)
    is_run = decision is not None and decision.weeks_granted >= 1 and (
        decision.weeks_granted > 1 or run.extends_run_id is not None)
    held = list(allocation_selectors.commitment_list_for_runs(refs=[run.pk]))
    last = max((c for c in held if c.state in PLACED_STATES), key=lambda c: c.week, default=None)
    plan = allocation_selectors.plan_for_week(week=run.cycle.week)
    # Its last window of the week (a part given back splits a window at the hour: the part kept runs to the end).
    window = allocation_selectors.plan_last_windows(plan=plan, refs=[run.pk]).get(run.pk) if plan is not None else None
    last_end = last.end if last is not None else (window.end if window is not None else None)
    if not is_run or window is None or last_end is None or last_end <= now:
        raise StateConflict(_("Only a run over several weeks that is granted, placed and not over can be extended."))
    if last is None and window.end < run.cycle.ends_at:
        raise StateConflict(_("The run's team gave its GPUs back before the end of week %(week)s: there is no run "
                              "to continue.") % {"week": run.cycle.week})
    last_week = last.week if last is not None else run.cycle.week
    next_label = selectors.next_week(last_week)
    cycle = ReviewCycle.objects.filter(week=next_label).first()
    if cycle is None or not cycle.intake_open:
        raise StateConflict(
            _("The run holds its GPUs until the end of week %(last)s: ask for more weeks while week %(next)s takes "
              "requests.") % {"last": last_week, "next": next_label}
        )
    if run.run_extensions.filter(cycle=cycle).exclude(status=RequestStatus.WITHDRAWN).exists():
        raise StateConflict(_("The run already asks for more weeks in week %(week)s.") % {"week": next_label})
    errors = selectors.run_weeks_problems(cycle=cycle, run_weeks=weeks, latest_end=cycle.ends_at)
    if not isinstance(weeks, int) or isinstance(weeks, bool):
        errors = {"weeks": [_("Give the number of weeks as a whole number.")]}
    elif "run_weeks" in errors:
        errors = {"weeks": errors.pop("run_weeks")}
    reason = reason.strip()
    if not reason:
        errors["reason"] = [_("Say why the run needs more weeks.")]
    elif len(reason) > RUN_EXTENSION_REASON_MAX_LENGTH:
        errors["reason"] = [_("At most %(n)d characters.") % {"n": RUN_EXTENSION_REASON_MAX_LENGTH}]
    if errors:
        raise ValidationError(errors)
    assert isinstance(weeks, int)
    gpu_count = last.gpu_count if last is not None else window.gpu_count
    copy = selectors.request_copy(source=run, cycle=cycle)
    fields = {
        **copy.fields, "title": _("%(title)s (more weeks)") % {"title": run.title}, "gpu_count": gpu_count,
        "min_gpu_count": gpu_count, "duration_hours": cycle.hours, "earliest_start": cycle.starts_at,
        "latest_end": cycle.ends_at, "run_weeks": weeks, "weekly_gpu_counts": [], "preemptible_ok": False,
    }
    told = stored_text("run_extension", weeks=weeks, week=next_label, ref=run.pk, reason=reason)
    try:
        extension = request_create(
            actor=actor, team=run.team, cycle=cycle, fields=fields, usage=copy.usage, forecast=copy.forecast,
            alternatives=copy.alternatives, extends_run=run, detail=text_render(told), detail_text=told,
        )
    except ValidationError as exc:
        if hasattr(exc, "error_dict") and "pool" in exc.error_dict:
            raise StateConflict(exc.error_dict["pool"]) from None
        raise
    extension = request_submit(actor=actor, gpu_request=extension)
    request_event_record(request=run, actor=actor, action="run extension", detail=text_render(told),
                         detail_text=told)
    return extension
