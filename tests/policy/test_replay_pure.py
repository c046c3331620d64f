"""The replay's arithmetic on small hand-made weeks: no database, every number worked by hand."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from allocations import engine
from committee import scoring
from policy.replay import Overrides, ReplayInputs, ReplayRequest, UsageRow, WeekInputs, replay

MONDAY = datetime(2026, 12, 7, tzinfo=UTC)  # 2026-W50
TEAM_X, TEAM_Y = 1, 2


def _request(request_id: int, team_id: int, impact: int, feasibility: int, urgency: int) -> ReplayRequest:
    start = MONDAY + timedelta(hours=24)
    demand = engine.Demand(ref=request_id, pool="c/p", gpu_count=10, min_gpu_count=10, duration_hours=48,
                           earliest_start=start, latest_end=start + timedelta(hours=48))
    return ReplayRequest(
        request_id=request_id, title=f"r{request_id}", team_id=team_id, team_name=f"Team {team_id}", pool="c/p",
        requested_gpu_hours=480, duration_hours=48, submitted_at=MONDAY - timedelta(days=5, hours=-request_id),
        member_scores={scoring.BUSINESS_IMPACT: (impact,) * 3, scoring.FEASIBILITY: (feasibility,) * 3,
                       scoring.URGENCY: (urgency,) * 3},
        outcome="grant", demand=demand, archived_rank=None, impact_value=Decimal(1000), impact_unit="USD/week",
    )


def _week(*requests: ReplayRequest, fair_shares: dict[int, scoring.FairShare] | None = None) -> WeekInputs:
    return WeekInputs(
        week="2026-W50", starts_at=MONDAY, hours=168, weights=dict(scoring.DEFAULT_WEIGHTS), rubric_version=1,
        fair_shares=fair_shares or {}, fair_share_as_of=MONDAY - timedelta(days=4), team_weights={TEAM_X: 1, TEAM_Y: 1},
        pools=(engine.PoolCapacity(key="c/p", gpu_count=10, gpu_model="A100", burst_reserve_pct=0, standby_pct=0),),
        requests=requests,
    )


def _inputs(week: WeekInputs, usage: tuple[UsageRow, ...] = ()) -> ReplayInputs:
    return ReplayInputs(weeks=(week,), quorum=2, half_life_weeks=2.0, trailing_weeks=8, time_zone="UTC", usage=usage)


def test_a_weight_change_reranks_as_computed_by_hand():
    # Nobody used anything: fairness is 10 × 2^0 = 10 for both teams, 10% × 10 = 10 points each.
    # 40/30/20/10: X = 40%×9 + 30%×3 + 20%×3 + 10 = 61; Y = 40%×4 + 30%×9 + 20%×9 + 10 = 71 → Y first.
    # 70/10/10/10: X = 63 + 3 + 3 + 10 = 79; Y = 28 + 9 + 9 + 10 = 56 → X first.
    x, y = _request(11, TEAM_X, 9, 3, 3), _request(12, TEAM_Y, 4, 9, 9)
    weights = {scoring.BUSINESS_IMPACT: 70, scoring.FEASIBILITY: 10, scoring.URGENCY: 10, scoring.FAIRNESS: 10}
    result = replay(inputs=_inputs(_week(x, y)), overrides=Overrides(weights=weights))

    (week,) = result.detail
    baseline = {r.request_id: r for r in week.baseline.requests}
    proposed = {r.request_id: r for r in week.proposed.requests}
    assert (baseline[11].total, baseline[12].total) == (Decimal("61.00"), Decimal("71.00"))
    assert (baseline[12].rank, baseline[11].rank) == (1, 2)
    assert (proposed[11].total, proposed[12].total) == (Decimal("79.00"), Decimal("56.00"))
    assert (proposed[11].rank, proposed[12].rank) == (1, 2)
    # The pool holds one 10-GPU grant in those hours: the rank decides who gets it.
    assert (baseline[12].placed_gpu_hours, baseline[11].placed_gpu_hours) == (480, 0)
    assert (proposed[11].placed_gpu_hours, proposed[12].placed_gpu_hours) == (480, 0)
    teams = {t.team_id: t for t in result.teams}
    assert teams[TEAM_X].outcome == "gains" and teams[TEAM_X].placed_gpu_hours.change == 480
    assert teams[TEAM_Y].outcome == "loses" and teams[TEAM_Y].placed_gpu_hours.change == -480
    assert teams[TEAM_Y].unplaced_value["USD/week"].change == 1000
    assert [t.team_id for t in result.gains] == [TEAM_X] and [t.team_id for t in result.losses] == [TEAM_Y]
    assert teams[TEAM_X].mean_rank.change == -1  # from 2nd to 1st
    (pool,) = result.pools
    # 10 GPUs × 168 h placeable, 480 placed either way; the loser waited its whole 48-hour window.
    assert pool.idle_gpu_hours.baseline == pool.idle_gpu_hours.proposed == 1680 - 480
    assert pool.contended_hours.baseline == pool.contended_hours.proposed == 48


def _fairness(half_life: float) -> tuple[float, float]:
    """Team X used 100 GPU-hours last week, team Y 100 three weeks ago (k = 0 and k = 2); equal weights."""
    x_decayed = 100 * 2 ** (-0 / half_life)
    y_decayed = 100 * 2 ** (-2 / half_life)
    total = x_decayed + y_decayed
    return tuple(10 * math.pow(2, -(d / total) / 0.5) for d in (x_decayed, y_decayed))  # type: ignore[return-value]


def test_a_different_half_life_changes_the_fairness_scores_as_the_formula_says():
    as_of = MONDAY - timedelta(days=4)
    usage = (
        UsageRow(team_id=TEAM_X, period_start=as_of - timedelta(days=3), reported_at=as_of - timedelta(days=1),
                 gpu_hours=Decimal(100)),
        UsageRow(team_id=TEAM_Y, period_start=as_of - timedelta(days=17), reported_at=as_of - timedelta(days=15),
                 gpu_hours=Decimal(100)),
        # Reported after intake closed: the week never saw it, the replay does not either.
        UsageRow(team_id=TEAM_Y, period_start=as_of - timedelta(days=2), reported_at=as_of + timedelta(hours=1),
                 gpu_hours=Decimal(5000)),
    )
    inputs = _inputs(_week(_request(11, TEAM_X, 5, 5, 5), _request(12, TEAM_Y, 5, 5, 5)), usage)
    for half_life in (1.0, 4.0):
        (week,) = replay(inputs=inputs, overrides=Overrides(half_life_weeks=half_life)).detail
        expected_x, expected_y = _fairness(half_life)
        assert week.proposed.fairness[TEAM_X] == scoring.rounded(expected_x)
        assert week.proposed.fairness[TEAM_Y] == scoring.rounded(expected_y)
    # Half-life 1: X = 10 × 2^(−0.8/0.5) = 3.30, Y = 10 × 2^(−0.2/0.5) = 7.58.
    (week,) = replay(inputs=inputs, overrides=Overrides(half_life_weeks=1)).detail
    assert (week.proposed.fairness[TEAM_X], week.proposed.fairness[TEAM_Y]) == (Decimal("3.30"), Decimal("7.58"))
    # A trailing window of one week forgets Y's usage: X used everything, Y nothing.
    (week,) = replay(inputs=inputs, overrides=Overrides(trailing_weeks=1)).detail
    assert week.proposed.fairness[TEAM_X] == scoring.rounded(10 * 2 ** -2)
    assert week.proposed.fairness[TEAM_Y] == Decimal("10.00")


def test_the_baseline_ranks_with_the_fair_shares_frozen_at_intake_close():
    frozen = {
        TEAM_X: scoring.FairShare(team_id=TEAM_X, decayed_gpu_hours=0, total_decayed_gpu_hours=100, weight=1,
                                  total_weight=2),
        TEAM_Y: scoring.FairShare(team_id=TEAM_Y, decayed_gpu_hours=100, total_decayed_gpu_hours=100, weight=1,
                                  total_weight=2),
    }
    week = _week(_request(11, TEAM_X, 5, 5, 5), _request(12, TEAM_Y, 5, 5, 5), fair_shares=frozen)
    (replayed,) = replay(inputs=_inputs(week), overrides=Overrides()).detail
    assert replayed.baseline.fairness == {TEAM_X: Decimal("10.00"), TEAM_Y: Decimal("2.50")}
    assert [r.request_id for r in replayed.baseline.requests] == [11, 12]


def test_a_reserve_override_is_applied_on_top_of_the_week_s_pool():
    x, y = _request(11, TEAM_X, 9, 9, 9), _request(12, TEAM_Y, 8, 8, 8)
    week = _week(x, y)
    week = WeekInputs(**{**week.__dict__, "pools": (engine.PoolCapacity(
        key="c/p", gpu_count=20, gpu_model="A100", burst_reserve_pct=50, standby_pct=0),)})
    result = replay(inputs=_inputs(week), overrides=Overrides(pools={"c/p": {"burst_reserve_pct": 0}}))
    (detail,) = result.detail
    assert sum(r.placed_gpu_hours for r in detail.baseline.requests) == 480
    assert sum(r.placed_gpu_hours for r in detail.proposed.requests) == 960


def test_placing_pool_by_pool_gives_the_engine_s_windows_and_tiers():
    """The replay places each pool on its own (and reuses a pool the proposal does not change); the windows,
    tiers included, are those allocations.engine.allocate gives for all the pools at once."""
    import random

    from policy.replay.compute import _Memo, _place

    rng = random.Random(7)
    pools = tuple(engine.PoolCapacity(key=f"c/p{i}", gpu_count=rng.choice((8, 16, 32)), burst_reserve_pct=20,
                                      standby_pct=10) for i in range(4))
    demands = []
    for ref in range(1, 41):
        count, duration = rng.choice((2, 4, 8, 16)), rng.choice((8, 24, 48))
        start = MONDAY + timedelta(hours=rng.randint(0, 168 - duration))
        demands.append(engine.Demand(ref=ref, pool=rng.choice(pools).key, gpu_count=count,
                                     min_gpu_count=max(1, count // 2), duration_hours=duration, earliest_start=start,
                                     latest_end=start + timedelta(hours=duration + rng.randint(0, 24)),
                                     preemptible_ok=rng.random() < 0.3))
    week = _week()
    expected = engine.allocate(week_start=MONDAY, pools=list(pools), demands=demands, hours=168).windows
    memo = _Memo()
    assert _place(week=week, pools=pools, demands=demands, memo=memo) == expected
    assert {w.tier for w in expected} >= {engine.TIER_PRIORITY, engine.TIER_STANDARD}
    # Again, with one pool's reserve changed: three pools come from the memo, and still the engine's answer.
    changed = (replace(pools[0], burst_reserve_pct=0), *pools[1:])
    solved = len(memo.pools)
    again = _place(week=week, pools=changed, demands=demands, memo=memo)
    assert len(memo.pools) == solved + 1
    assert again == engine.allocate(week_start=MONDAY, pools=list(changed), demands=demands, hours=168).windows
