"""Decided and placed are one truth: the review's preview, the finalize confirmation and publish place the same
windows, and the dashboards' "decided" counts the decisions' GPU-hours, for a week with every kind of outcome."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.models import User

from allocations import selectors as allocation_selectors
from allocations.models import Team
from committee import selectors, services
from committee.models import PLACING_OUTCOMES, Decision, TeamMembership
from reports.dashboards.selectors import DashboardFilter, decided_gpu_hours
from tests.committee.reviewing import close, decide, score
from tests.factories import file_request

DISTILLED = {"description": "Distilled ranker", "gpu_hours": 1500, "quality_change": "-1% NDCG", "feasible": True}


def test_preview_finalize_and_publish_place_the_same_windows_with_every_outcome_kind(world):
    start = world.cycle.starts_at
    window = {"earliest_start": start, "latest_end": start + timedelta(hours=96)}
    # a100 has 46 standard GPUs: the grant, the partial grant and the alternative do not all fit side by side,
    # so leaving the alternative out of the preview would move the windows of the others.
    grant = file_request(world, title="Ranker retrain", gpu_count=24, min_gpu_count=24, duration_hours=48, **window)
    partial = file_request(world, team=world.team_b, title="Vision model", gpu_count=24, min_gpu_count=8,
                           duration_hours=48, **window)
    team_c = Team.objects.create(name="Team C", slug="team-c")
    member_c = User.objects.create_user("member_c")
    TeamMembership.objects.create(user=member_c, team=team_c)
    alternative = file_request(world, team=team_c, actor=member_c, title="Embeddings", gpu_count=40,
                               min_gpu_count=8, duration_hours=48, alternatives=[DISTILLED], **window)
    # One active request per team and pool: the deferral and the rejection are on h100.
    deferred = file_request(world, team=world.team_b, pool=world.h100, title="Speech", gpu_count=8,
                            min_gpu_count=4, **window)
    rejected = file_request(world, pool=world.h100, title="Moonshot", gpu_count=8, min_gpu_count=4, **window)
    close(world)
    for member in (world.chair, world.reviewer, world.finance):
        for request, impact in ((grant, 9), (partial, 8), (alternative, 7), (deferred, 5), (rejected, 3)):
            score(member, request, impact, 6, 6)
    decide(world, grant)
    decide(world, partial, "partial", granted_gpu_count=16)
    decide(world, alternative, "alternative", alternative=alternative.alternatives.get().pk)  # ceil(1500/48) = 32
    decide(world, deferred, "defer")
    decide(world, rejected, "reject")

    def preview() -> set[tuple[object, ...]]:
        placement = selectors.cycle_placement(cycle=world.cycle)
        return {(p.request_id, p.pool_key, p.window.gpu_count, p.window.start, p.window.end, p.window.tier)
                for p in placement.placements if p.window is not None}

    in_review = preview()
    assert {ref for ref, *_rest in in_review} == {grant.pk, partial.pk, alternative.pk}
    world.cycle = services.cycle_finalize(cycle=world.cycle, actor=world.chair)
    assert preview() == in_review
    confirmation = selectors.publish_summary(cycle=world.cycle, now=world.cycle.starts_at - timedelta(days=2))
    assert {(p.request_id, p.pool_key, p.window.gpu_count, p.window.start, p.window.end, p.window.tier)
            for p in confirmation.by_request.values() if p.window is not None} == in_review
    plan = services.cycle_publish(actor=world.chair, cycle=world.cycle)
    published = {(w.request_ref, w.pool.key, w.gpu_count, w.start, w.end, w.tier)
                 for w in allocation_selectors.plan_window_list(plan=plan).select_related("pool__cluster")}
    assert published == in_review

    # The dashboards' "decided" is the decisions' GPU-hours: every outcome that places, the alternative included.
    decided = decided_gpu_hours(filters=DashboardFilter(weeks=(world.cycle.week,)))
    expected = sum((d.granted_gpu_count or 0) * d.request.duration_hours
                   for d in Decision.objects.filter(outcome__in=PLACING_OUTCOMES).select_related("request"))
    assert sum(decided.values()) == expected == 24 * 48 + 16 * 48 + 32 * 48
