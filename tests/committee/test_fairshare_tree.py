"""Fair share in the common unit (A100-equivalent GPU-hours), lent GPUs at the policy's factor, over the tree
department → team (Slurm's classic hierarchical fair share), against values computed by hand (docs/rubric.md)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from allocations.models import AllocationWindow, Department, UsageRecord
from allocations.selectors import usage_gpu_hours_by_team_per_week
from committee import scoring, selectors
from committee.services import cycle_close_intake
from governed.models import ChangeSource
from governed.services import policy_change_record
from tests.allocations.plans import W, publish, this_week, week_start
from tests.clock import FIXED_NOW
from tests.governed.version_one import version_1_set

VISION, SPEECH, ADS, OPS = 1, 2, 3, 4
RESEARCH, PRODUCT = 10, 20


def test_docs_worked_example_of_the_department_tree():
    # docs/rubric.md, "Departments": Research (weight 3) holds Vision (2) and Speech (1); Product (1) holds Ads (1);
    # Ops (1) belongs to no department. The top level: 3 + 1 + 1 = 5. Decayed usage 600, 0, 300, 100 of 1,000.
    shares = scoring.fair_shares(
        decayed={VISION: 600.0, ADS: 300.0, OPS: 100.0},
        weights={VISION: 2, SPEECH: 1, ADS: 1, OPS: 1},
        departments={VISION: (RESEARCH, 3), SPEECH: (RESEARCH, 3), ADS: (PRODUCT, 1)},
    )
    vision, speech, ads, ops = (shares[t] for t in (VISION, SPEECH, ADS, OPS))
    # S: 3/5 × 2/3 = 0.4, 3/5 × 1/3 = 0.2, 1/5 × 1 = 0.2, 1/5.
    assert [round(s.entitled_share, 6) for s in (vision, speech, ads, ops)] == [0.4, 0.2, 0.2, 0.2]
    # UE: 0.6 + (0.6 − 0.6) × 2/3 = 0.6; 0 + (0.6 − 0) × 1/3 = 0.2; 0.3 + (0.3 − 0.3) × 1 = 0.3; Ops at the top: 0.1.
    assert [round(s.effective_usage, 6) for s in (vision, speech, ads, ops)] == [0.6, 0.2, 0.3, 0.1]
    # F = 2^(−UE/S): 2^−1.5, 2^−1, 2^−1.5, 2^−0.5.
    assert [s.score for s in (vision, speech, ads, ops)] == [
        Decimal("3.54"), Decimal("5.00"), Decimal("3.54"), Decimal("7.07")]
    # Speech used nothing, but its department did: it inherits a third of Research's usage.
    assert "0.200" in speech.explanation() and "department weight 3 of 5" in speech.explanation()


def test_without_departments_the_tree_is_the_flat_factor():
    flat = scoring.fair_shares(decayed={1: 400.0, 3: 400.0}, weights={1: 2, 2: 1, 3: 1})
    assert [flat[t].score for t in (1, 2, 3)] == [Decimal("5.00"), Decimal("10.00"), Decimal("2.50")]
    # One department per team, each with the team's weight, is the same tree with one more level: the same factors.
    tree = scoring.fair_shares(decayed={1: 400.0, 3: 400.0}, weights={1: 2, 2: 1, 3: 1},
                               departments={1: (11, 2), 2: (12, 1), 3: (13, 1)})
    assert [tree[t].score for t in (1, 2, 3)] == [flat[t].score for t in (1, 2, 3)]


def _used(world: Any, *, team: Any, pool: Any, hours: int, key: str, window: AllocationWindow | None = None,
          hours_after_monday: int = 1) -> None:
    start = week_start(this_week()) + timedelta(hours=hours_after_monday)
    UsageRecord.objects.create(
        pool=pool, team=team, period_start=start, period_end=start + timedelta(hours=1),
        gpu_hours_used=Decimal(hours), mean_utilization_pct=90, idempotency_key=key, window=window,
    )


def _change(changes: dict[str, str], week: str) -> None:
    policy_change_record(actor=None, changes=changes, effective_week=week, reason="Finance prices the H100 higher.",
                         source=ChangeSource.LAB)


def test_usage_counts_in_a100_equivalents_by_the_pool_weight_in_force_that_week(world):
    version_1_set({"fairshare.half_life_weeks": "1", "fairshare.trailing_weeks": "4"})
    _used(world, team=world.team_a, pool=world.a100, hours=200, key="a")
    _used(world, team=world.team_b, pool=world.h100, hours=100, key="b")
    weekly = usage_gpu_hours_by_team_per_week(until=FIXED_NOW, weeks=1)
    assert weekly == [{world.team_a.pk: Decimal(200), world.team_b.pk: Decimal(100)}]  # weight 1 until a change
    _change({"pool.orion/h100.billing_weight": "2.5"}, "2026-W50")  # from next week: not this week's usage
    assert usage_gpu_hours_by_team_per_week(until=FIXED_NOW, weeks=1) == weekly
    _change({"pool.orion/h100.billing_weight": "2"}, this_week())
    weekly = usage_gpu_hours_by_team_per_week(until=FIXED_NOW, weeks=1)
    assert weekly == [{world.team_a.pk: Decimal(200), world.team_b.pk: Decimal(200)}]
    shares = selectors.fair_share_live(as_of=FIXED_NOW)
    assert shares[world.team_b.pk].usage_share == pytest.approx(0.5)


def test_a_billing_weight_out_of_bounds_is_refused_and_changes_nothing(world):
    from django.core.exceptions import ValidationError

    for bad in ("0", "-1", "101", "1.234", "heavy"):
        with pytest.raises(ValidationError):
            _change({"pool.orion/h100.billing_weight": bad}, this_week())
    with pytest.raises(ValidationError):
        _change({"fairshare.lent_usage_factor": "1.5"}, this_week())
    _used(world, team=world.team_b, pool=world.h100, hours=100, key="b")
    assert usage_gpu_hours_by_team_per_week(until=FIXED_NOW, weeks=1) == [{world.team_b.pk: Decimal(100)}]


def test_a_team_that_used_only_lent_gpus_keeps_its_fairness_score(world):
    version_1_set({"fairshare.half_life_weeks": "1", "fairshare.trailing_weeks": "4"})
    plan = publish([W(world.a100, world.team_a, 8, 0, 24, ref=1),
                    W(world.a100, world.team_b, 8, 0, 24, ref=2, tier="preemptible")])
    own, lent = (plan.windows.get(request_ref=ref) for ref in (1, 2))
    before = selectors.fair_share_live(as_of=FIXED_NOW)[world.team_b.pk].score
    _used(world, team=world.team_a, pool=world.a100, hours=100, key="a", window=own)
    _used(world, team=world.team_b, pool=world.a100, hours=150, key="b", window=lent)
    shares = selectors.fair_share_live(as_of=FIXED_NOW)
    assert before == shares[world.team_b.pk].score == Decimal("10.00")
    assert shares[world.team_a.pk].usage_share == 1.0
    # The committee may count lent GPUs at a factor: at ½, team B's 150 GPU-hours count 75.
    _change({"fairshare.lent_usage_factor": "0.5"}, this_week())
    assert usage_gpu_hours_by_team_per_week(until=FIXED_NOW, weeks=1) == [
        {world.team_a.pk: Decimal(100), world.team_b.pk: Decimal(75)}]


def test_intake_close_freezes_the_tree_and_the_review_ranks_with_the_same_factors(world):
    version_1_set({"fairshare.half_life_weeks": "1", "fairshare.trailing_weeks": "4"})
    research = Department.objects.create(name="Research", slug="research", fair_share_weight=3)
    world.team_a.department = research
    world.team_a.save()
    _used(world, team=world.team_a, pool=world.a100, hours=300, key="a")
    _used(world, team=world.team_b, pool=world.a100, hours=100, key="b")
    live = selectors.fair_share_live(as_of=FIXED_NOW)
    # Top level: Research 3, team B 1. Team A alone in Research: S = 3/4, UE = U = 0.75: F = 2^−1 → 5.00.
    # Team B at the top: S = 1/4, U = 0.25: F = 2^−1 → 5.00 (flat, weights 2 and 1, it would be 2.50).
    assert (live[world.team_a.pk].score, live[world.team_b.pk].score) == (Decimal("5.00"), Decimal("5.00"))
    cycle_close_intake(cycle=world.cycle, now=FIXED_NOW)
    frozen = selectors.fair_share_for_cycle(cycle=world.cycle)
    assert {t: s.score for t, s in frozen.items()} == {t: s.score for t, s in live.items()}
    # Usage reported afterwards does not move the frozen factors.
    _used(world, team=world.team_b, pool=world.a100, hours=900, key="late", hours_after_monday=2)
    assert selectors.fair_share_for_cycle(cycle=world.cycle)[world.team_b.pk].score == Decimal("5.00")


def test_the_org_chart_is_kept_in_the_policy_history(world):
    root = get_user_model().objects.create_superuser("root", "root@example.com", "pw", first_name="Ada",
                                                     last_name="Admin")
    client = Client()
    client.force_login(root)
    response = client.post(reverse("admin:allocations_department_add"), {
        "name": "Research", "slug": "research", "fair_share_weight": 3, "change_reason": "The new cost centre."})
    assert response.status_code == 302, response.content.decode()[:2000]
    research = Department.objects.get(slug="research")
    response = client.post(reverse("admin:allocations_team_change", args=[world.team_a.pk]), {
        "name": world.team_a.name, "slug": world.team_a.slug, "fair_share_weight": 2, "department": research.pk,
        "change_reason": "Team A moves to Research."})
    assert response.status_code == 302, response.content.decode()[:2000]
    changes = selectors.policy_history()
    (created,) = [c for c in changes if c.kind_code == "department"]
    assert (created.subject, created.action, created.reason) == ("Research", "created", "The new cost centre.")
    (moved,) = [c for c in changes if c.subject == "Team A" and c.action == "changed"]
    assert [(f.label, f.old, f.new) for f in moved.changes] == [("department", "—", "Research")]
    # Bad input is refused and changes nothing: a weight of 0.
    response = client.post(reverse("admin:allocations_department_change", args=[research.pk]), {
        "name": "Research", "slug": "research", "fair_share_weight": 0, "change_reason": "Zero."})
    assert response.status_code == 200
    research.refresh_from_db()
    assert research.fair_share_weight == 3
