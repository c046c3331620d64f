"""Publishing a finalized week: decisions become engine demands, the engine's windows a plan version.

The committee's side of the seam with allocations/: this module knows decisions and requests;
`allocations.services.plan_publish` knows only pools, teams, windows and plain request ids.
What the engine is given (the demands, the windows already started) is read by
`committee.selectors.cycle_demands` and `started_windows`; this module writes the plan.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone
from django.utils.translation import gettext as _

from allocations import engine
from allocations.explanations import reasons_as_json
from allocations.models import AllocationPlan
from allocations.services import plan_publish
from committee import selectors
from committee.models import CycleStatus, GpuRequest, NotificationKind, ReviewCycle
from committee.quarters import quarters_of_span
from committee.services.notifications import notification_enqueue
from committee.services.requests import actor_name, request_events_record
from committee.services.review import cycle_transition_record
from committee.services.runs import run_commitments_publish
from core.errors import StateConflict
from core.locks import write_transaction
from core.texts import stored_text


@write_transaction
def cycle_publish(
    *, actor: User, cycle: ReviewCycle, reason: str = "", now: datetime | None = None
) -> AllocationPlan:
    """Place a finalized week's grants with the engine and publish them as the week's next plan version.

    Only the chair. The cycle must be finalized (first publish, version 1) or published
    (a correction: version n+1 supersedes n, and `reason` is required). The engine runs on
    every pool's capacity over the cycle's week, with the grants in priority order; in a
    correction the windows that have started by `now` are kept as they are. In one
    transaction: the plan and its windows (allocations.services.plan_publish), a
    "published" event on each placed request with the engine's explanation, and the cycle's
    status set to published; the week's runs' later weeks as commitments and the commitments it carried in settled
    on their evidence (committee.services.runs); an outbox message for the teams' "decision published" notifications;
    and one for the week's decision record with the plan, which the archive writes after commit
    (`cycle_transition`): if the archive can tell it cannot write it, nothing is published.

    Raises PermissionDenied for anyone but the chair, ValidationError (nothing written) for
    a cycle in another state, a correction without a reason, or a record the archive refused.
    """
    if not selectors.user_is_chair(user=actor):
        raise PermissionDenied(_("Only the chair publishes the allocation."))
    return cycle_plan_place(actor=actor, cycle=cycle, reason=reason, now=now)


@write_transaction
def cycle_plan_place(
    *,
    actor: User,
    cycle: ReviewCycle,
    reason: str = "",
    reason_text: dict[str, Any] | None = None,
    now: datetime | None = None,
    expect_digest: str | None = None,
    keep: Collection[int] = (),
    replace: Mapping[int, Sequence[engine.EngineWindow]] | None = None,
    replace_explanations: Sequence[engine.Explanation] = (),
) -> AllocationPlan:
    """`cycle_publish` without its check of who may publish, for callers that made their own check
    inside their own transaction: a decision's correction by the chair, an appeal's amendment by a
    committee member (committee/services/corrections.py). Everything else is the same.

    `expect_digest` is the placement the chair confirmed (`selectors.decision_change_preview(...).digest`):
    when the placement at `now` differs from it (a window started, another change was published meanwhile),
    StateConflict and nothing is written. `keep`: requests whose current windows stay as they are although they
    have not started (a correction that leaves other teams' windows in place). `replace`: requests whose windows
    take the shape given, fixed, explained by `replace_explanations` (a release, committee/services/release.py).
    """
    locked = ReviewCycle.objects.select_for_update(no_key=True).get(pk=cycle.pk)
    if locked.status not in (CycleStatus.FINALIZED, CycleStatus.PUBLISHED):
        raise StateConflict(
            _("Cannot publish week %(week)s: it is %(status)s; finalize it first.")
            % {"week": locked.week, "status": locked.get_status_display().lower()}
        )
    reason = reason.strip()
    correction = locked.status == CycleStatus.PUBLISHED
    if correction and not reason:
        raise ValidationError({"reason": _("Say why the published plan is corrected.")}, code="reason_required")

    now = now or timezone.now()
    placement = selectors.cycle_publish_placement(cycle=locked, now=now, keep=keep, replace=replace)
    if expect_digest is not None and selectors.placement_digest(placement) != expect_digest:
        raise StateConflict(
            _("The plan this would publish is no longer the one you confirmed (a window has started or the week "
              "changed meanwhile): nothing was published. Look at what would move again and confirm.")
        )
    pools, demands, started, result = placement.pools, placement.demands, placement.started, placement.result
    kept = [window for window in started if window.ref not in placement.replaced]
    explanations = [
        *selectors.kept_explanations(kept, now=now, left=placement.left), *replace_explanations, *result.explanations,
    ]
    requests = {decision.request.pk: decision.request for _demand, decision in demands}
    # A started window is kept even when its request is no longer granted (a correction to defer); a commitment
    # placed first is the week of a run whose request belongs to an earlier week.
    kept_refs = {window.ref for window in started} | placement.replaced | placement.committed_refs
    requests.update(GpuRequest.objects.select_related("team").in_bulk(kept_refs - set(requests)))
    plan = plan_publish(
        week=locked.week,
        week_starts_at=locked.starts_at,
        week_ends_at=locked.ends_at,
        source_ref=f"review-cycle:{locked.pk}",
        windows=result.windows,
        explanations=explanations,
        pools=pools,
        teams={ref: request.team for ref, request in requests.items()},
        published_by_name=actor_name(actor),
        note=reason,
        note_text=reason_text,
    )
    request_events_record(
        details=[
            (requests[explanation.ref], stored_text("request_placed", version=plan.version,
                                                    reasons=reasons_as_json(explanation.reasons),
                                                    week_start=locked.starts_at.isoformat()))
            for explanation in explanations
        ],
        actor=actor,
        action="published",
    )
    run_commitments_publish(actor=actor, cycle=locked, plan=plan, placement=placement, now=now)
    locked.status = CycleStatus.PUBLISHED
    locked.save(update_fields=["status"])
    notification_enqueue(kind=NotificationKind.DECISION_PUBLISHED, cycle=locked, plan=plan)
    # The plan's windows charge their departments: tell the committee of a budget reaching 80 % or 100 %.
    quarters = quarters_of_span(locked.starts_at, locked.ends_at)
    notification_enqueue(kind=NotificationKind.BUDGET_ALERT, quarters=quarters, ref=f"{locked.week}:v{plan.version}")
    cycle_transition_record(
        cycle=locked,
        actor=actor,
        plan=plan,
        reason=reason,
        refused=_("Week %(week)s is not published and nothing was saved: its decision record could not be "
                  "written to the archive. %(reason)s"),
    )
    return plan
