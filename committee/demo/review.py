"""The current week as the committee left it after Monday's review: scored close to the suggestions, decided
in rank order until each pool was full, finalized."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.contrib.auth import get_user_model

from allocations import selectors as allocation_selectors
from allocations.models import GpuPool
from committee import scoring, selectors, weeks
from committee.demo.dice import dice
from committee.demo.requests import REQUESTS, demo_request
from committee.models import (
    Alternative,
    CommitteeSeat,
    CycleStatus,
    Decision,
    DecisionOutcome,
    GpuRequest,
    RequestPoolOption,
    RequestStatus,
    ReviewCycle,
)
from committee.services import (
    conflict_waive,
    cycle_close_intake,
    cycle_create,
    cycle_finalize,
    request_decide,
    score_record,
)
from committee.services.review import alternative_gpus

# The request the demo's committee grants its cheaper alternative (fp8 training: 750 GPU-hours, not 1,152).
ALTERNATIVE_GRANTED = "Sequence recommender (transformer) training"
# The week in force's requests where they differ from the open week's. Search's ranker waited for Wednesday's click
# logs (Wednesday 12:00 to Saturday 12:00) and asked 34 GPUs: Ads' CTR window, running until Thursday noon, left it
# 30, and it had not started at the demo's Wednesday 10:00, so the demo's release (running_week.seed_release: Ads
# gives half back) feeds it in the next plan version.
WEEK_IN_FORCE_CHANGES: dict[str, dict[str, Any]] = {
    "Ranking model retrain (BERT-large cross-encoder)": {"gpus": 34, "start_h": 60, "end_h": 132},
    # Speech's accent fine-tune needed its 8 A100 that week, not preemptible, and named 4 H100 beside them: A100's
    # standard capacity was full around the ranker, so the engine placed it on H100 (either pool, docs/engine.md).
    "ASR fine-tune on new accents": {"preemptible": False, "min_gpus": 8},
    "LLM query rewriter fine-tune": {"gpus": 8},  # that week it asked for 8 H100 only, leaving room beside it
}
# How a member reads an impact forecast before adjusting for the narrative: by its confidence.
IMPACT_BY_CONFIDENCE = {"high": 8, "medium": 6, "low": 3}


def seed_reviewed_week(*, pools: dict[str, GpuPool], now: datetime) -> ReviewCycle:
    """The current week's cycle as the committee left it after last Monday's review.

    Its requests were filed before intake closed, every member scored them (close to the
    suggestions, a point either way; nobody scores their own team's), the chair recorded a
    decision for each ranked request in rank order until each pool was full, and finalized.
    Publishing is `seed_published_week`'s step. Idempotent: a finalized cycle is left alone.
    """
    cycle = cycle_create(week=weeks.current_week_label(now))
    if cycle.status in (CycleStatus.FINALIZED, CycleStatus.PUBLISHED):
        return cycle
    filed_at = cycle.intake_closes_at - timedelta(days=2)
    specs = [dataclasses.replace(spec, **WEEK_IN_FORCE_CHANGES.get(spec.title, {}))
             for spec in REQUESTS if spec.status == RequestStatus.SUBMITTED]
    for offset, spec in enumerate(specs):
        demo_request(spec=spec, cycle=cycle, pools=pools, at=filed_at + timedelta(hours=offset))
    chair = get_user_model().objects.get(username="chair")
    if cycle.status == CycleStatus.OPEN:
        cycle = cycle_close_intake(cycle=cycle, actor=chair, now=min(now, cycle.intake_closes_at))
    members = [seat.user for seat in CommitteeSeat.objects.active().select_related("user").order_by("role")]
    _waive_found_conflicts(cycle=cycle, chair=chair)
    for row in selectors.cycle_ranking(cycle=cycle):
        _score_as_the_committee(row=row, members=members)
    _decide_in_rank_order(cycle=cycle, chair=chair)
    return cycle_finalize(cycle=cycle, actor=chair)


# The chair's reason for waiving the conflict Docket found from the organisation (the product lead manages Research's
# lead): archived in the week's decision record.
DEMO_WAIVER_REASON = ("Priya manages Research's lead but has no stake in this request; the committee needs her product "
                      "view on it. Waived for this week.")


def _waive_found_conflicts(*, cycle: ReviewCycle, chair: Any) -> None:
    """The chair waives the likely conflicts found on the week's requests (the demo's one: the product lead on
    Research's request, its lead reporting to her), so every member scores as before and the week's record archives
    the waiver with its reason."""
    requests = GpuRequest.objects.filter(cycle=cycle, status__in=selectors.REVIEWED_STATUSES).select_related(
        "team").order_by("submitted_at", "pk")
    found = selectors.found_conflicts_map(requests=requests)
    for gpu_request in requests:
        for conflict in found[gpu_request.pk].conflicts:
            if not conflict.waived:
                conflict_waive(actor=chair, gpu_request=gpu_request,
                               member=get_user_model().objects.get(pk=conflict.member_id), reason=DEMO_WAIVER_REASON)


def _score_as_the_committee(*, row: selectors.ReviewRow, members: list[Any]) -> None:
    gpu_request = row.request
    forecast = gpu_request.impact_forecast
    base = {
        scoring.BUSINESS_IMPACT: IMPACT_BY_CONFIDENCE[forecast.confidence],
        scoring.FEASIBILITY: row.suggestions[scoring.FEASIBILITY].value,
        scoring.URGENCY: row.suggestions[scoring.URGENCY].value,
    }
    for member in members:
        if not selectors.user_may_decide(actor=member, gpu_request=gpu_request, act=selectors.Act.SCORE):
            continue  # conflict of interest: the tech lead does not score Research
        for criterion, value in base.items():
            nudge = dice(member.username, gpu_request.title, criterion) % 3 - 1
            score_record(actor=member, gpu_request=gpu_request, criterion=criterion,
                         value=max(0, min(10, value + nudge)))


def _decide_in_rank_order(*, cycle: ReviewCycle, chair: Any) -> None:
    """Grant in rank order while a pool has standard GPU-hours left (preemptible work may use the burst
    reserve), give what fits above the request's minimum as a partial grant, defer the rest; reject
    low-impact requests that also rank in the bottom half. Recommendations' sequence recommender is
    granted its cheaper alternative instead (the seed's bidding model: the cheaper variant first, the
    full model later), when that fits."""
    capacity = {p.pk: allocation_selectors.pool_week_capacity(pool=p, hours=cycle.hours)
                for p in allocation_selectors.pool_reserves_for_week(
                    week=cycle.week, pools=GpuPool.objects.select_related("cluster"))}
    standard = {pk: c.standard_gpu_hours for pk, c in capacity.items()}
    burst = {pk: c.burst_gpu_hours for pk, c in capacity.items()}
    rows = [row for row in selectors.cycle_ranking(cycle=cycle) if row.result.rank is not None]
    alternative_granted = Decision.objects.filter(cycle=cycle, outcome=DecisionOutcome.ALTERNATIVE).exists()
    for row in rows:
        r, rank, total = row.request, row.result.rank, row.result.total
        assert rank is not None, "rows holds only ranked requests"
        left = standard[r.pool_id] + (burst[r.pool_id] if r.preemptible_ok else 0)
        impact = row.result.criterion(scoring.BUSINESS_IMPACT).score or Decimal(0)
        where = r.pool.key
        fits_gpus = min(r.gpu_count, left // r.duration_hours)
        cheaper = (
            _cheaper_alternative_that_fits(gpu_request=r, gpu_hours_left=left)
            if r.title == ALTERNATIVE_GRANTED and not alternative_granted else None
        )
        alternative = None
        elsewhere = _other_pool_that_fits(gpu_request=r, left=standard, burst=burst) if fits_gpus < r.gpu_count \
            else None
        if impact < 4 and rank > len(rows) // 2:
            outcome, granted = "reject", None
            rationale = (f"Ranked #{rank} ({total}). Business impact {impact} of 10 on an exploratory forecast; "
                         f"resubmit with a concrete result the work unlocks.")
        elif cheaper is not None:
            alternative, alternative_granted = cheaper, True
            outcome, granted = "alternative", alternative_gpus(gpu_request=r, alternative_gpu_hours=cheaper.gpu_hours)
            rationale = (f"Ranked #{rank} ({total}). {where} is contended: run the cheaper alternative first "
                         f"({cheaper.description}, {cheaper.gpu_hours:,} GPU-hours instead of "
                         f"{r.requested_gpu_hours:,}) and refile the full model next week if it falls short.")
        elif elsewhere is not None:
            # Either pool: full here, room on a pool the team named too. The engine places it there at publish.
            outcome, granted = "grant", r.gpu_count
            rationale = (f"Ranked #{rank} ({total}). Granted in full: {where} is full with higher-ranked work, and "
                         f"the team can run it on {elsewhere.pool.key} ({elsewhere.gpu_count} GPUs for "
                         f"{elsewhere.duration_hours} h).")
        elif fits_gpus >= r.gpu_count:
            outcome, granted = "grant", r.gpu_count
            # Say what was decided, not where it lands: the GPU-hours left are no promise of a window (the
            # engine places it at publish, and the request page shows the difference if there is one).
            rationale = f"Ranked #{rank} ({total}). Granted in full, in rank order on {where}."
        elif fits_gpus >= r.min_gpu_count:
            outcome, granted = "partial", fits_gpus
            rationale = (f"Ranked #{rank} ({total}). {where} is over-subscribed: {fits_gpus} of {r.gpu_count} GPUs, "
                         f"at least the {r.min_gpu_count} the work runs on.")
        else:
            outcome, granted = "defer", None
            rationale = (f"Ranked #{rank} ({total}). {where} is full with higher-ranked work; "
                         f"first in line next week if it is refiled.")
        if granted:
            pool_id, used = r.pool_id, granted * r.duration_hours
            if elsewhere is not None and outcome == "grant":
                pool_id, used = elsewhere.pool_id, elsewhere.gpu_count * elsewhere.duration_hours
            from_standard = min(used, standard[pool_id])
            standard[pool_id] -= from_standard
            burst[pool_id] -= used - from_standard
        request_decide(actor=chair, gpu_request=r, outcome=outcome, rationale=rationale,
                       granted_gpu_count=granted if outcome == "partial" else None,
                       alternative=alternative.pk if alternative else None)


def _other_pool_that_fits(
    *, gpu_request: GpuRequest, left: dict[int, int], burst: dict[int, int]
) -> RequestPoolOption | None:
    """The first other pool the request names with room for all of it, in GPU-hours, as the chair reckons."""
    for option in gpu_request.pool_options.select_related("pool__cluster"):
        room = left[option.pool_id] + (burst[option.pool_id] if gpu_request.preemptible_ok else 0)
        if option.gpu_count * option.duration_hours <= room:
            return option
    return None


def _cheaper_alternative_that_fits(*, gpu_request: GpuRequest, gpu_hours_left: int) -> Alternative | None:
    for alternative in gpu_request.alternatives.all():
        gpus = alternative_gpus(gpu_request=gpu_request, alternative_gpu_hours=alternative.gpu_hours)
        if (alternative.feasible and alternative.gpu_hours < gpu_request.requested_gpu_hours
                and gpus * gpu_request.duration_hours <= gpu_hours_left):
            return alternative
    return None
