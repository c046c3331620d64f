"""The fair-share factor F = 2^(−U/S) against values computed by hand, and its inputs from usage records."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from allocations.models import UsageRecord
from committee import scoring, selectors
from tests.governed.version_one import version_1_set


def test_no_usage_at_all_gives_every_team_full_marks():
    shares = scoring.fair_shares(decayed={}, weights={1: 2, 2: 1})
    assert {t: (s.factor, s.score) for t, s in shares.items()} == {1: (1.0, Decimal("10.00")),
                                                                   2: (1.0, Decimal("10.00"))}


def test_factor_against_hand_values_without_decay():
    # Weights A=2, B=1, C=1: S = 0.5, 0.25, 0.25. A and C used 400 GPU-hours each, B none.
    # A: U = 0.5 = S → F = 2^−1 = 0.5; C: U = 0.5 = 2S → F = 2^−2 = 0.25; B: U = 0 → F = 1.
    shares = scoring.fair_shares(decayed={1: 400.0, 3: 400.0}, weights={1: 2, 2: 1, 3: 1})
    assert shares[1].usage_share == 0.5 and shares[1].entitled_share == 0.5
    assert shares[1].factor == 0.5 and shares[1].score == Decimal("5.00")
    assert shares[3].factor == 0.25 and shares[3].score == Decimal("2.50")
    assert shares[2].factor == 1.0 and shares[2].score == Decimal("10.00")


def test_decay_halves_usage_every_half_life():
    assert scoring.decay_factor(weeks_ago=0, half_life_weeks=2) == 1.0
    assert scoring.decay_factor(weeks_ago=2, half_life_weeks=2) == 0.5
    assert scoring.decay_factor(weeks_ago=1, half_life_weeks=2) == pytest.approx(0.70711, abs=1e-5)
    with pytest.raises(ValueError, match="half-life"):
        scoring.decay_factor(weeks_ago=1, half_life_weeks=0)


def test_factor_against_hand_values_with_decay():
    # Half-life 1 week. A used 100 this week and 200 a week ago: 100 + 200 × ½ = 200.
    # B used 200 two weeks ago: 200 × ¼ = 50. Total 250: U_A = 0.8, U_B = 0.2; S = 0.5 each.
    # F_A = 2^(−1.6) = 0.32988 → 3.30; F_B = 2^(−0.4) = 0.75786 → 7.58.
    decayed = scoring.decayed_usage(weekly_usage=[{1: 100}, {1: Decimal(200)}, {2: 200}], half_life_weeks=1)
    assert decayed == {1: 200.0, 2: 50.0}
    shares = scoring.fair_shares(decayed=decayed, weights={1: 1, 2: 1})
    assert shares[1].usage_share == pytest.approx(0.8)
    assert shares[1].factor == pytest.approx(0.32988, abs=1e-5) and shares[1].score == Decimal("3.30")
    assert shares[2].factor == pytest.approx(0.75786, abs=1e-5) and shares[2].score == Decimal("7.58")
    assert "3.30" in shares[1].explanation()


def test_docs_worked_example():
    # docs/rubric.md: weights Search 3, Ads 3, Speech 1 (S = 3/7, 3/7, 1/7); half-life 2 weeks;
    # Search 1,000 this week + 1,000 two weeks ago → 1,500; Ads 500 this week; Speech 500 a week ago → 353.55.
    decayed = scoring.decayed_usage(weekly_usage=[{1: 1000, 2: 500}, {3: 500}, {1: 1000}], half_life_weeks=2)
    assert decayed[1] == 1500.0 and decayed[2] == 500.0 and decayed[3] == pytest.approx(353.55, abs=0.01)
    shares = scoring.fair_shares(decayed=decayed, weights={1: 3, 2: 3, 3: 1})
    # Total 2,353.55: U = 0.63733, 0.21244, 0.15022; U/S = 1.48711, 0.49570, 1.05155.
    assert shares[1].usage_share == pytest.approx(0.63733, abs=1e-5)
    assert [shares[t].score for t in (1, 2, 3)] == [Decimal("3.57"), Decimal("7.09"), Decimal("4.82")]


def test_fairness_from_usage_records_decayed_by_week(world, settings):
    # Version 1 of the rules is stored (governed), from the settings as they were at the migration.
    version_1_set({"fairshare.half_life_weeks": "1", "fairshare.trailing_weeks": "4"})
    as_of = timezone.now()

    def used(team, days_ago, gpu_hours, key):
        start = as_of - timedelta(days=days_ago)
        UsageRecord.objects.create(
            pool=world.a100, team=team, period_start=start, period_end=start + timedelta(hours=1),
            gpu_hours_used=Decimal(gpu_hours), mean_utilization_pct=80, idempotency_key=key,
        )

    used(world.team_a, 1, 100, "a-this-week")
    used(world.team_a, 9, 200, "a-last-week")  # one week back: counts ½
    used(world.team_b, 16, 200, "b-two-weeks")  # two weeks back: counts ¼
    used(world.team_b, 40, 9999, "b-too-old")  # outside the 4 trailing weeks
    shares = selectors.fair_share_live(as_of=as_of)
    # A: 200, B: 50 → U = 0.8, 0.2; S_A = 2/3, S_B = 1/3 (weights 2 and 1).
    assert shares[world.team_a.pk].decayed_gpu_hours == 200.0
    assert shares[world.team_b.pk].decayed_gpu_hours == 50.0
    assert shares[world.team_a.pk].factor == pytest.approx(2 ** (-0.8 / (2 / 3)))
    assert shares[world.team_b.pk].factor == pytest.approx(2 ** (-0.2 / (1 / 3)))
