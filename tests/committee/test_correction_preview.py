"""A correction or an amendment in a published week shows what the next plan version moves before it publishes,
and each team whose window moved is told what moved and why."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import User

from allocations import selectors as allocation_selectors
from allocations.models import AllocationPlan, Team
from committee import services
from committee.models import Decision, DecisionCorrection, Notification, NotificationKind, TeamMembership
from committee.services.notifications import notification_text
from tests.clock import FIXED_NOW
from tests.committee.reviewing import close, decide, score
from tests.factories import file_request
from tests.readable import assert_readable

DISTILLED = {"description": "Distilled ranker", "gpu_hours": 1000, "quality_change": "-1% NDCG", "feasible": True}


@pytest.fixture
def contended(world, clock):
    """a100 has 46 standard GPUs. Published at FIXED_NOW: team A's 30 of 40 GPUs (rank 1), team B's 12 of 24
    (rank 2) and team C's 4 (rank 3), all 48 h from Monday 00:00 side by side (46 GPUs)."""
    clock.move_to(FIXED_NOW, tick=False)
    start = world.cycle.starts_at
    window = {"earliest_start": start, "latest_end": start + timedelta(hours=120), "duration_hours": 48}
    team_c = Team.objects.create(name="Team C", slug="team-c")
    member_c = User.objects.create_user("member_c")
    TeamMembership.objects.create(user=member_c, team=team_c)
    a = file_request(world, title="Ranker retrain", gpu_count=40, min_gpu_count=8, alternatives=[DISTILLED], **window)
    b = file_request(world, team=world.team_b, title="Vision model", gpu_count=24, min_gpu_count=8, **window)
    c = file_request(world, team=team_c, actor=member_c, title="Speech", gpu_count=4, min_gpu_count=4, **window)
    close(world)
    for member in (world.chair, world.reviewer, world.finance):
        score(member, a, 9, 9, 9)
        score(member, b, 6, 6, 6)
        score(member, c, 3, 3, 3)
    decide(world, a, "partial", granted_gpu_count=30)
    decide(world, b, "partial", granted_gpu_count=12)
    decide(world, c)
    world.cycle = services.cycle_finalize(cycle=world.cycle, actor=world.chair)
    services.cycle_publish(actor=world.chair, cycle=world.cycle)
    return a, b, c


def _windows(week: str) -> dict[int, tuple[int, object]]:
    plan = allocation_selectors.plan_for_week(week=week)
    assert plan is not None
    return {w.request_ref: (w.gpu_count, w.start) for w in allocation_selectors.plan_window_list(plan=plan)
            if w.request_ref is not None}


def test_a_correction_shows_what_moves_then_publishes_exactly_that_and_tells_each_team(world, contended, client):
    a, b, c = contended
    start = world.cycle.starts_at
    before = _windows(world.cycle.week)
    assert before == {a.pk: (30, start), b.pk: (12, start), c.pk: (4, start)}
    client.force_login(world.chair)
    body = {"outcome": "grant", "rationale": "All 40: the launch needs them.", "reason": "Finance found the budget."}
    page = client.post(f"/requests/{a.pk}/correct/", body)
    html = page.content.decode()
    assert page.status_code == 200 and "What plan version 2 changes" in html
    assert_readable(html)
    # Nothing is written by the preview.
    assert AllocationPlan.objects.count() == 1 and Decision.objects.get(request=a).granted_gpu_count == 30
    assert not DecisionCorrection.objects.exists()
    # Team A's window grows; team B's moves after it (40 + 12 > 46); team C's stays and is not listed.
    changes = html[html.index('id="confirm-changes"'):html.index('id="confirm-correction"')]
    assert "Team A" in changes and "grows" in changes
    assert "Team B" in changes and "moves" in changes and "Wed 00:00" in changes
    assert "Team C" not in changes
    digest = re.search(r'name="digest" value="([0-9a-f]+)"', html)
    assert digest is not None

    # A confirmation whose placement no longer matches what was shown is refused; nothing is published.
    stale = client.post(f"/requests/{a.pk}/correct/", {**body, "confirm": "1", "digest": "0" * 32})
    assert stale.status_code == 400 and "no longer the one you confirmed" in stale.content.decode()
    assert AllocationPlan.objects.count() == 1

    done = client.post(f"/requests/{a.pk}/correct/", {**body, "confirm": "1", "digest": digest[1]})
    assert done.status_code == 302
    after = _windows(world.cycle.week)
    assert after == {a.pk: (40, start), b.pk: (12, start + timedelta(hours=48)), c.pk: (4, start)}

    # Each team hears what moved in its window and why (team B's members: member_b and tech).
    plan = allocation_selectors.plan_for_week(week=world.cycle.week)
    assert plan is not None and plan.version == 2
    services.notifications_deliver(
        kind=NotificationKind.DECISION_PUBLISHED, arguments={"cycle_id": world.cycle.pk, "plan_id": plan.pk}
    )
    notes = Notification.objects.filter(kind=NotificationKind.DECISION_PUBLISHED, key__endswith="plan-v2")
    team_b = notification_text(notes.filter(recipient=world.member_b).get())
    assert "Changed in this version: moves: 12 A100, Mon 00:00–Wed 00:00, standard → 12 A100, Wed 00:00–Fri 00:00, " \
           "standard." in team_b
    assert "Why: correction of “Ranker retrain” (Team A): Finance found the budget." in team_b
    team_c = notes.filter(recipient__username="member_c").get()
    assert "Changed in this version" not in notification_text(team_c)


def test_an_amendment_is_confirmed_too_and_a_correction_can_grant_the_alternative(world, contended, client):
    a, b, _c = contended
    appeal = services.appeal_file(actor=world.member_b, gpu_request=b, statement="Twelve are too few.")
    client.force_login(world.chair)
    body = {"decision": "amend", "reason": "Sixteen fit.", "outcome": "partial", "granted_gpu_count": "16",
            "rationale": "Sixteen."}
    chinese = client.post(f"/appeals/{appeal.pk}/decide/", body, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "修改对“Vision model”的决定？" in chinese and "方案版本 2 的变化" in chinese
    assert_readable(chinese)
    page = client.post(f"/appeals/{appeal.pk}/decide/", body, HTTP_ACCEPT_LANGUAGE="en")
    html = page.content.decode()
    assert page.status_code == 200 and "Amend the decision on “Vision model”?" in html
    assert AllocationPlan.objects.count() == 1
    digest = re.search(r'name="digest" value="([0-9a-f]+)"', html)
    assert digest is not None
    confirmed = client.post(f"/appeals/{appeal.pk}/decide/", {**body, "confirm": "1", "digest": digest[1]})
    assert confirmed.status_code == 302
    assert Decision.objects.get(request=b).granted_gpu_count == 16
    # "Grant the alternative" in a correction: 1,000 GPU-hours over 48 hours are 21 GPUs.
    alternative = a.alternatives.get()
    services.decision_correct(actor=world.chair, gpu_request=a, outcome="alternative", alternative=alternative.pk,
                              rationale="The distilled model is enough.", reason="The team agreed.")
    decision = Decision.objects.get(request=a)
    assert (decision.outcome, decision.granted_gpu_count, decision.alternative_description) == (
        "alternative", 21, "Distilled ranker")
    correction = DecisionCorrection.objects.filter(decision=decision).get()
    assert (correction.previous_outcome, correction.alternative_gpu_hours) == ("partial", 1000)
    assert _windows(world.cycle.week)[a.pk][0] == 21


def test_the_chair_can_keep_other_teams_windows_in_place(world, contended, client):
    a, b, c = contended
    start = world.cycle.starts_at
    client.force_login(world.chair)
    body = {"outcome": "grant", "rationale": "All 40.", "reason": "Finance found the budget.", "keep_other_teams": "1"}
    html = client.post(f"/requests/{a.pk}/correct/", body).content.decode()
    changes = html[html.index('id="confirm-changes"'):html.index('id="confirm-correction"')]
    # Team B's window stays on Monday: team A's grown window waits until Wednesday instead.
    assert "Team A" in changes and "moves, grows" in changes and "Team B" not in changes
    digest = re.search(r'name="digest" value="([0-9a-f]+)"', html)
    assert digest is not None
    assert client.post(f"/requests/{a.pk}/correct/", {**body, "confirm": "1", "digest": digest[1]}).status_code == 302
    assert _windows(world.cycle.week) == {a.pk: (40, start + timedelta(hours=48)), b.pk: (12, start),
                                          c.pk: (4, start)}
    plan = allocation_selectors.plan_for_week(week=world.cycle.week)
    assert plan is not None
    kept = allocation_selectors.plan_explanation_map(plan=plan)[b.pk]
    assert kept.reasons[0]["params"].get("left") is True
