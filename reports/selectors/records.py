"""The structured data of generated pages: a week's decision record and a rubric version's policy page.

Everything is copied into JSON-native values (numbers, strings, labels already formatted), so
the snapshot reads the same forever and hashes the same on every database.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.utils import timezone, translation

from allocations import selectors as allocation_selectors
from allocations.elastic import selectors as elastic_selectors
from allocations.models import AgentAction, AllocationWindow
from committee import scoring
from committee import selectors as committee_selectors
from committee.models import DecisionOutcome, GpuRequest, ReviewCycle, criterion_label
from committee.texts import outcome_label
from policy import selectors as policy_selectors
from policy.models import Proposal
from reports import chain
from reports.models import Page
from reports.snapshot import (
    AgentActionSnapshot,
    AppealSnapshot,
    ContinuationSnapshot,
    CorrectionSnapshot,
    CriterionSnapshot,
    CycleSnapshot,
    DecisionRecordSnapshot,
    GrantChangeSnapshot,
    ParticipantSnapshot,
    PlanChangesSnapshot,
    PlanSnapshot,
    PolicyChangeSnapshot,
    PoolCapacitySnapshot,
    RankingRowSnapshot,
    RecusalSnapshot,
    RubricSnapshot,
    RunCommittedSnapshot,
    WaiverSnapshot,
    WindowSnapshot,
)


def _when(value: datetime | None) -> str:
    if value is None:
        return "—"
    return timezone.localtime(value).strftime("%Y-%m-%d %H:%M ") + str(timezone.get_current_timezone_name())


def _iso(value: datetime | None) -> str | None:
    return chain.timestamp(value) if value is not None else None


def _num(value: Decimal | float | int | None) -> float | int | None:
    if value is None:
        return None
    if isinstance(value, int):
        return value
    return float(round(Decimal(str(value)), 2))


def _window(window: AllocationWindow) -> WindowSnapshot:
    return {
        "id": window.pk,
        "cluster": window.cluster.slug,
        "pool": window.pool.slug,
        "team": window.team.name,
        "gpu_count": window.gpu_count,
        "start": _iso(window.start),
        "end": _iso(window.end),
        "start_label": _when(window.start),
        "end_label": _when(window.end),
        "tier": window.tier,
        "tier_label": str(window.get_tier_display()),
        "request_id": window.request_ref,
    }


def _plan_data(*, week: str) -> tuple[PlanSnapshot | None, PlanChangesSnapshot | None]:
    plan = allocation_selectors.plan_for_week(week=week)
    if plan is None:
        return None, None
    windows = list(allocation_selectors.plan_window_list(plan=plan))
    plan_data: PlanSnapshot = {
        "version": plan.version,
        "published_at": _iso(plan.published_at),
        "published_label": _when(plan.published_at),
        "published_by": plan.published_by_name,
        "note": plan.note,
        "windows": [_window(w) for w in windows],
    }
    if plan.note_text:  # a note Docket wrote, as a code (core.texts): the record renders it in the reader's language
        plan_data["note_text"] = plan.note_text
    if plan.supersedes_id is None:
        return plan_data, None
    added = [w for w in windows if w.created_seq == plan.change_seq]
    withdrawn = list(allocation_selectors.plan_withdrawn_list(plan=plan))
    changes: PlanChangesSnapshot = {
        "from_version": plan.version - 1,
        "added": [_window(w) for w in added],
        "withdrawn": [_window(w) for w in withdrawn],
        "carried": len(windows) - len(added),
    }
    return plan_data, changes


def _corrections_data(*, cycle: ReviewCycle) -> tuple[list[CorrectionSnapshot], list[AppealSnapshot]]:
    corrections: list[CorrectionSnapshot] = [
        {
            "request_id": c.decision.request_id,
            "title": c.request_title,
            "team": c.team_name,
            "previous_label": outcome_label(c.previous_outcome, c.previous_granted_gpu_count),
            "new_label": outcome_label(c.outcome, c.granted_gpu_count),
            # The codes the labels are written from, so the record reads in any language (reports.records.language).
            "previous_outcome": c.previous_outcome,
            "previous_granted_gpu_count": c.previous_granted_gpu_count,
            "outcome": c.outcome,
            "granted_gpu_count": c.granted_gpu_count,
            "previous_rationale": c.previous_rationale,
            "rationale": c.rationale,
            "reason": c.reason,
            "by": c.corrected_by_name,
            "at": _iso(c.corrected_at),
            "at_label": _when(c.corrected_at),
            "plan_version": c.plan_version,
            "from_appeal": c.appeal_id is not None,
            **({"exception": c.exception_reason} if c.exception_reason else {}),  # type: ignore[typeddict-item]
        }
        for c in committee_selectors.correction_list_for_cycle(cycle=cycle)
    ]
    appeals: list[AppealSnapshot] = []
    for a in committee_selectors.appeal_list_for_cycle(cycle=cycle):
        correction = getattr(a, "correction", None)
        appeals.append(
            {
                "request_id": a.request_id,
                "title": a.request_title,
                "team": a.team_name,
                "filed_by": a.filed_by_name,
                "filed_at": _iso(a.filed_at),
                "filed_label": _when(a.filed_at),
                "statement": a.statement,
                "status": a.status,
                "status_label": str(a.get_status_display()),
                "decided_by": a.decided_by_name,
                "decided_label": _when(a.decided_at) if a.decided_at else "",
                "reason": a.decision_reason,
                "plan_version": correction.plan_version if correction is not None else None,
            }
        )
    return corrections, appeals


def decision_record_data(*, cycle: ReviewCycle) -> DecisionRecordSnapshot:
    """A week's decision record as structured data: rubric, participants, ranking with every criterion's
    score, decisions with rationale, demand against capacity, and the published plan with its changes.

    One builder per section below. Reads through the committee's and allocations' selectors; a constant number
    of queries.
    """
    # The review page's selector, for no particular viewer: rows, scores and pool loads.
    review = committee_selectors.cycle_review(cycle=cycle, viewer=AnonymousUser())
    ranking = _ranking_data(review)
    plan, changes = _plan_data(week=cycle.week)
    previous = (
        ReviewCycle.objects.filter(starts_at__lt=cycle.starts_at).order_by("-starts_at")
        .values("week", "intake_closed_at", "starts_at").first()
    )
    previous_slug = _previous_record_slug(previous)
    policy_changes = committee_selectors.policy_history(
        after=(previous["intake_closed_at"] or previous["starts_at"]) if previous else None,
        until=cycle.intake_closed_at or timezone.now(),
    )
    corrections, appeals = _corrections_data(cycle=cycle)
    data: DecisionRecordSnapshot = {
        "schema": 1,
        "language": translation.get_language() or settings.LANGUAGE_CODE,
        "cycle": _cycle_data(cycle),
        "rubric": _rubric_data(review),
        "quorum": review.quorum,
        "participants": _participants_data(review),
        "outcome_counts": _outcome_counts(review),
        "outcome_labels": [[value, str(label)] for value, label in DecisionOutcome.choices],
        "ranking": ranking,
        "capacity": _capacity_data(review),
        "plan": plan,
        "plan_changes": changes,
        "previous_record": previous_slug,
    }
    # Only when there are some: the records of weeks without any keep the data they always had.
    if corrections:
        data["corrections"] = corrections
    if appeals:
        data["appeals"] = appeals
    if policy_changes:
        data["policy_changes"] = [_policy_change(change) for change in policy_changes[:RECORD_POLICY_CHANGES]]
        if len(policy_changes) > RECORD_POLICY_CHANGES:
            data["policy_changes_more"] = len(policy_changes) - RECORD_POLICY_CHANGES
    recusals = _recusals_data(cycle=cycle)
    if recusals:
        data["recusals"] = recusals
    waivers = _waivers_data(cycle=cycle)
    if waivers:
        data["waivers"] = waivers
    continuations = _continuations_data(cycle=cycle)
    if continuations:
        data["continuations"] = continuations
    runs_committed = _runs_committed_data(cycle=cycle)
    if runs_committed:
        data["runs_committed"] = runs_committed
    grant_changes = _grant_changes_data(cycle=cycle)
    if grant_changes:
        data["grant_changes"] = grant_changes
    _agent_actions_data(data, cycle=cycle)
    return data


# A record lists at most this many agent actions (the week's first); each pool's elastic history has them all.
RECORD_AGENT_ACTIONS = 200


def _agent_actions_data(data: DecisionRecordSnapshot, *, cycle: ReviewCycle) -> None:
    """The week's agent actions, in the order they were taken, when there are any. One query."""
    if cycle.starts_at is None or cycle.ends_at is None:
        return
    now = timezone.now()
    if cycle.starts_at > now:
        return  # the week has not begun: no agent acted in it yet (and no query)
    found = elastic_selectors.agent_actions(acted_from=cycle.starts_at, acted_before=cycle.ends_at,
                                            oldest_first=True, limit=RECORD_AGENT_ACTIONS + 1)
    if not found:
        return
    data["agent_actions"] = [_agent_action(a) for a in found[:RECORD_AGENT_ACTIONS]]
    if len(found) > RECORD_AGENT_ACTIONS:
        data["agent_actions_more"] = True
    if cycle.ends_at > now:
        data["agent_actions_partial"] = True


def _agent_action(action: AgentAction) -> AgentActionSnapshot:
    return {
        "at": _iso(action.acted_at) or "",
        "at_label": _when(action.acted_at),
        "cluster": action.pool.cluster.slug,
        "pool": action.pool.slug,
        "kind": action.kind,
        "kind_label": str(action.get_kind_display()),
        "team": action.team.name if action.team is not None else "",
        "window_id": action.window_id,
        "gpus": action.gpus,
        "utilization_pct": _num(action.utilization_pct),
        "queue_wait_minutes": _num(action.queue_wait_minutes),
        "span_minutes": action.span_minutes,
        "measured_by": action.measured_by,
        "policy_version": action.policy_version,
    }


def _cycle_data(cycle: ReviewCycle) -> CycleSnapshot:
    return {
        "week": cycle.week,
        "status": cycle.status,
        "status_label": str(cycle.get_status_display()),
        "starts_at": _iso(cycle.starts_at),
        "ends_at": _iso(cycle.ends_at),
        "starts_label": _when(cycle.starts_at),
        "ends_label": _when(cycle.ends_at),
        "finalized_at": _iso(cycle.finalized_at),
        "finalized_label": _when(cycle.finalized_at),
        "finalized_by": cycle.finalized_by_name,
    }


def _rubric_data(review: committee_selectors.CycleReview) -> RubricSnapshot:
    weights = review.weights
    criteria: list[CriterionSnapshot] = [
        {"key": c, "label": criterion_label(c), "weight_pct": weights[c], "computed": c in scoring.COMPUTED}
        for c in scoring.CRITERIA
    ]
    return {"version": review.rubric.number, "criteria": criteria}


def _participants_data(review: committee_selectors.CycleReview) -> list[ParticipantSnapshot]:
    """Each member who scored or decided a request of the week, by name: how many requests they scored, how many
    decisions they recorded."""
    scored: dict[str, set[int]] = {}
    decided: Counter[str] = Counter()
    for row in review.rows:
        for score in committee_selectors.review_scores(row.request):
            scored.setdefault(score.member_name, set()).add(row.request.pk)
        decision = row.decision
        if decision is not None and decision.decided_by_name and decision.decided_by_id is not None:
            decided[decision.decided_by_name] += 1
    names = sorted(set(scored) | set(decided))
    return [{"name": n, "scored": len(scored.get(n, ())), "decided": decided.get(n, 0)} for n in names]


def _outcome_counts(review: committee_selectors.CycleReview) -> dict[str, int]:
    return dict(Counter(row.decision.outcome for row in review.rows if row.decision is not None))


def _ranking_data(review: committee_selectors.CycleReview) -> list[RankingRowSnapshot]:
    """Every request of the week in rank order (the unranked last, by id): scores, the decision and its placement."""
    ranking: list[RankingRowSnapshot] = []
    placements = committee_selectors.request_outcome_map(requests=[row.request for row in review.rows])
    for row in review.rows:
        request = row.request
        decision = row.decision
        outcome = placements[request.pk]
        frozen = decision if decision is not None and decision.priority_rank is not None else None
        alternative: dict[str, Any] = (
            {"alternative": decision.alternative_description, "alternative_gpu_hours": decision.alternative_gpu_hours}
            if decision is not None and decision.outcome == DecisionOutcome.ALTERNATIVE
            else {}
        )
        ranking.append(
            {
                **alternative,  # type: ignore[typeddict-item]
                "rank": frozen.priority_rank if frozen is not None else row.result.rank,
                "request_id": request.pk,
                "title": request.title,
                "team": request.team.name,
                "pool": request.pool.key,
                "gpu_count": request.gpu_count,
                "duration_hours": request.duration_hours,
                "gpu_hours": request.requested_gpu_hours,
                "scores": {c.criterion: _num(c.score) for c in row.result.criteria},
                "score_counts": {c.criterion: c.count for c in row.result.criteria if not c.computed},
                "total": _num(frozen.weighted_total if frozen is not None else row.result.total),
                "decision": decision.outcome if decision else None,
                "decision_label": str(decision.get_outcome_display()) if decision else None,
                "granted_gpu_count": decision.granted_gpu_count if decision else None,
                "rationale": decision.rationale if decision else "",
                **({"exception": decision.exception_reason} if decision and decision.exception_reason else {}),
                "decided_by": decision.decided_by_name if decision else "",
                "decided_gpu_hours": outcome.decided.gpu_hours if outcome.decided else None,
                "placement": str(outcome.status),
                "placement_label": outcome.status_label,
                "placed_gpu_count": outcome.placed.gpu_count if outcome.placed else None,
                "placed_gpu_hours": outcome.placed.gpu_hours if outcome.placed else None,
                "placed_text": outcome.placed_text,
                "placement_reason": outcome.reason,
                "outcome_summary": outcome.summary,
                # What the four texts above are written from (committee.selectors.placement_params_text).
                "placement_params": _placement_params(outcome),
            }
        )
    ranking.sort(key=lambda r: (r["rank"] is None, r["rank"] or 0, r["request_id"]))
    return ranking


def _placement_params(outcome: committee_selectors.RequestOutcome) -> dict[str, Any]:
    """The outcome's codes and numbers, without the engine's explanation in words where its reason codes are kept
    (the row's `placement_reason` holds those words already; the codes write them in any language)."""
    params = outcome.as_params()
    if params["reasons"]:
        del params["explanation"]
    return params


def _capacity_data(review: committee_selectors.CycleReview) -> list[PoolCapacitySnapshot]:
    return [
        {
            "pool": load.pool.key,
            "capacity_gpu_hours": load.capacity_gpu_hours,
            "requested_gpu_hours": load.requested_gpu_hours,
            "granted_gpu_hours": load.granted_gpu_hours,
        }
        for load in review.pools
    ]


def _previous_record_slug(previous: Mapping[str, Any] | None) -> str | None:
    """The archive page of the week before, when it has one."""
    if previous and Page.objects.filter(source_key=f"cycle:{previous['week']}").exists():
        return f"decision-record-{previous['week'].lower()}"
    return None


def _continuations_data(*, cycle: ReviewCycle) -> list[ContinuationSnapshot]:
    """The runs carried into the week (docs/multi-week-runs.md), in the order they are placed. Two queries."""
    commitments = list(allocation_selectors.commitment_list_for_week(week=cycle.week))
    runs = GpuRequest.objects.in_bulk([c.request_ref for c in commitments])
    return [
        {
            "request_id": c.request_ref,
            "title": runs[c.request_ref].title if c.request_ref in runs else "",
            "team": c.team.name,
            "pool": c.pool.key,
            "gpu_count": c.gpu_count,
            "week_number": c.week_number,
            "run_weeks": c.run_weeks,
            "state": c.state,
            "state_label": str(c.get_state_display()),
            "utilization_pct": None if c.utilization_pct is None else str(c.utilization_pct),
            "threshold_pct": c.threshold_pct,
            "team_reason": c.team_reason,
            "settled_by": c.settled_by_name,
        }
        for c in commitments
    ]


def _runs_committed_data(*, cycle: ReviewCycle) -> list[RunCommittedSnapshot]:
    """The later weeks the week's own runs committed, and their state now. Two queries."""
    commitments = list(allocation_selectors.commitment_list_committed_by_week(week=cycle.week))
    runs = GpuRequest.objects.in_bulk({c.request_ref for c in commitments})
    return [
        {
            "request_id": c.request_ref,
            "title": runs[c.request_ref].title if c.request_ref in runs else "",
            "team": c.team.name,
            "pool": c.pool.key,
            "gpu_count": c.gpu_count,
            "week": c.week,
            "week_number": c.week_number,
            "run_weeks": c.run_weeks,
            "state": c.state,
            "state_label": str(c.get_state_display()),
        }
        for c in commitments
    ]


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _grant_changes_data(*, cycle: ReviewCycle) -> list[GrantChangeSnapshot]:
    """The week's grants given back or extended, from their lifecycle events. Two queries."""
    events = committee_selectors.grant_changes_for_week(week=cycle.week)
    titles = dict(GpuRequest.objects.filter(pk__in={e.request_ref for e in events if e.request_ref})
                  .values_list("pk", "title"))
    out: list[GrantChangeSnapshot] = []
    for event in events:
        data = event.data
        released = event.type == "window.released"
        start = data.get("effective_from") if released else data.get("start")
        end = None if released else data.get("end")
        out.append({
            "kind": event.type,
            "request_id": event.request_ref,
            "title": titles.get(event.request_ref or 0, ""),
            "team": str(data.get("team_name", "")),
            "pool": str(data.get("pool", "")),
            "gpu_count": int(data.get("released_gpu_count" if released else "gpu_count") or 0),
            "kept_gpu_count": _int_or_none(data.get("kept_gpu_count")) if released else None,
            "start": start,
            "start_label": _when(datetime.fromisoformat(start)) if start else "",
            "end": end,
            "end_label": _when(datetime.fromisoformat(end)) if end else "",
            "plan_version": _int_or_none(data.get("plan_version")),
            "reason": str(data.get("reason") or ""),
        })
    return out


def _recusals_data(*, cycle: ReviewCycle) -> list[RecusalSnapshot]:
    return [
        {
            "request_id": d.request_id,
            "title": d.request.title,
            "team": d.request.team.name,
            "member": d.member_name,
            "reason": d.reason,
            "declared_at": _iso(d.declared_at),
            "declared_label": _when(d.declared_at),
            "withdrawn_at": _iso(d.withdrawn_at),
            "withdrawn_label": _when(d.withdrawn_at) if d.withdrawn_at else "",
        }
        for d in committee_selectors.conflict_list_for_cycle(cycle_id=cycle.pk)
    ]


def _waivers_data(*, cycle: ReviewCycle) -> list[WaiverSnapshot]:
    return [
        {
            "request_id": w.request_id,
            "title": w.request.title,
            "team": w.request.team.name,
            "member": w.member_name,
            "conflict": w.conflict,
            "reason": w.reason,
            "waived_by": w.waived_by_name,
            "waived_at": _iso(w.waived_at),
            "waived_label": _when(w.waived_at),
            "withdrawn_at": _iso(w.withdrawn_at),
            "withdrawn_label": _when(w.withdrawn_at) if w.withdrawn_at else "",
        }
        for w in committee_selectors.conflict_waiver_list_for_cycle(cycle_id=cycle.pk)
    ]


# A record lists at most this many policy changes (newest first); the policy history page has them all.
RECORD_POLICY_CHANGES = 50


def _policy_change(change: committee_selectors.PolicyChange) -> PolicyChangeSnapshot:
    snapshot: PolicyChangeSnapshot = {
        "at": _iso(change.at) or "",
        "at_label": _when(change.at),
        "kind": change.kind,
        "subject": change.subject,
        "action": change.action,
        "changes": [{"label": c.label, "old": c.old, "new": c.new, "field": c.field} for c in change.changes],
        "who": change.who,
        "reason": change.reason,
        "kind_code": change.kind_code,
        "action_code": change.action_code,
    }
    if change.version:
        snapshot["version"] = list(change.version)
    return snapshot


def proposal_data(*, proposal: Proposal) -> dict[str, object]:
    """A policy proposal as the archive keeps it: read again from the database, as it stands now. Six queries."""
    p = policy_selectors.proposal_get(pk=proposal.pk)

    def when(value: datetime | None) -> str:
        return timezone.localtime(value).strftime("%Y-%m-%d %H:%M") if value else ""

    return {
        "schema": 1,
        "id": p.pk,
        "title": p.title,
        "status": p.get_status_display(),
        "proposer": p.proposer_name,
        "filed": when(p.created_at),
        "reason": p.reason,
        "expected_effect": p.expected_effect,
        "changes": [{"key": c.key, "label": c.label, "old": f"{c.old_value} {c.unit}".strip(),
                     "new": f"{c.new_value} {c.unit}".strip()} for c in p.changes.all()],
        "figures": [{"stage": f.stage, "metric": f.get_metric_display() + (f" ({f.label})" if f.label else ""),
                     "baseline": None if f.baseline is None else format(f.baseline.normalize(), "f"),
                     "value": format(f.value.normalize(), "f"), "unit": f.unit} for f in p.figures.all()],
        "votes": [{"by": v.voter_name + (f" ({v.team_name})" if v.team_name else ""),
                   "choice": v.get_choice_display(), "comment": v.comment} for v in p.votes.all()],
        "comments": [{"by": c.author_name + (f" ({c.team_name})" if c.team_name else ""), "at": when(c.created_at),
                      "body": c.body} for c in p.comments.all()],
        "decided_by": p.decided_by_name,
        "decided_at": when(p.decided_at),
        "decision_reason": p.decision_reason,
        "effective_week": p.effective_week,
        "applied_note": p.applied_note,
        "observed_result": p.observed_result,
        "observed_by": p.observed_by_name,
    }
