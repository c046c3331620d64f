"""The replay of past weeks on weeks built with the real services: baseline = what happened, overrides move it."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.utils import timezone

from allocations import selectors as allocation_selectors
from committee.models import Decision
from committee.services import cycle_create
from policy.replay import Overrides, ReplayErrors, replay
from policy.replay.overrides import replay_query_parse
from policy.selectors.replay import replay_before, replay_inputs_load, replay_parameters
from tests.committee.contended import ContendedWeek, contended_week
from tests.committee.test_emergency import running_week  # noqa: F401  (a fixture)

pytestmark = pytest.mark.django_db


def _query(params: dict[str, str]) -> Any:
    weights, pools, elastic = replay_parameters()
    return replay_query_parse(list(params.items()), current_weights=weights, pools=pools, elastic_fields=elastic)


def _replay(params: dict[str, str] | None = None) -> Any:
    query = _query(params or {})
    inputs = replay_inputs_load(before=replay_before(week=query.before), weeks=query.weeks,
                                usage_weeks=query.overrides.trailing_weeks)
    return replay(inputs=inputs, overrides=query.overrides)


def _runs(result: Any, kind: str) -> dict[int, Any]:
    return {run.request_id: run for week in result.detail for run in getattr(week, kind).requests}


def test_no_overrides_replays_the_week_as_it_was_ranked_and_published(world):
    week: ContendedWeek = contended_week(world)
    result = _replay()

    assert result.weeks == (world.cycle.week,)
    baseline = _runs(result, "baseline")
    for decision in Decision.objects.filter(cycle=world.cycle):
        assert baseline[decision.request_id].rank == decision.priority_rank
    plan = allocation_selectors.plan_for_week(week=world.cycle.week)
    assert plan is not None
    published = {
        w.request_ref: (w.pool.key, w.gpu_count, w.start, w.end, w.tier)
        for w in allocation_selectors.plan_window_list(plan=plan) if w.request_ref is not None
    }
    replayed = {
        ref: (run.window[0], run.window[1], run.window[2], run.window[3], run.window[4])
        for ref, run in baseline.items() if run.window is not None
    }
    assert set(replayed) == set(published) == {week.placed.pk, week.shortened.pk}
    for ref, (pool, count, start, end, tier) in published.items():
        assert replayed[ref] == (pool, count, start.isoformat().replace("+00:00", "Z"),
                                 end.isoformat().replace("+00:00", "Z"), tier)
    assert baseline[week.shortened.pk].placed_gpu_hours == 6 * 48
    assert not [n for n in result.notes if n.code.startswith("baseline_")]
    # No overrides: the proposal is the baseline, and nobody gains or loses.
    assert _runs(result, "proposed") == baseline
    assert all(team.placed_gpu_hours.change == 0 for team in result.teams)
    assert not result.gains and not result.losses
    # What happened: team B's placed GPU-hours are the published window's.
    team_b = next(t for t in result.teams if t.team_id == world.team_b.pk)
    assert team_b.placed_gpu_hours.actual == 6 * 48


def test_a_lower_burst_reserve_places_more_gpu_hours(world):
    week = contended_week(world)
    result = _replay({"pool.atlas/a100.burst_reserve_pct": "0", "pool.h100.burst_reserve_pct": "0"})

    baseline, proposed = _runs(result, "baseline"), _runs(result, "proposed")
    # atlas/a100: 64 GPUs less 6 standby = 58 standard: the 16-GPU grant now fits beside the 40.
    assert proposed[week.shortened.pk].placed_gpu_hours == 16 * 48 > baseline[week.shortened.pk].placed_gpu_hours
    # orion/h100: 32 less 3 standby = 29 ≥ 24: the grant that was not placed is.
    assert baseline[week.unplaced.pk].placed_gpu_hours == 0
    assert proposed[week.unplaced.pk].placed_gpu_hours == 24 * 48
    team_a = next(t for t in result.teams if t.team_id == world.team_a.pk)
    team_b = next(t for t in result.teams if t.team_id == world.team_b.pk)
    assert team_a.placed_gpu_hours.change == 24 * 48 and team_a.outcome == "gains"
    assert team_b.placed_gpu_hours.change == 10 * 48
    # Unplaced value shrinks with what is placed: team A's h100 forecast (50,000 USD/week) is now all placed.
    assert team_a.unplaced_value["USD/week"].baseline == 50000
    assert team_a.unplaced_value["USD/week"].proposed == 0
    pools = {p.pool: p for p in result.pools}
    assert pools["orion/h100"].idle_gpu_hours.change == -24 * 48
    assert pools["orion/h100"].contended_hours.baseline == 48
    assert pools["orion/h100"].contended_hours.proposed == 0


def test_a_quorum_above_the_scores_drops_the_grants_it_would_have_refused(world):
    week = contended_week(world)
    result = _replay({"review.quorum": "4"})  # each request has 3 member scores per criterion

    proposed = _runs(result, "proposed")
    assert all(run.rank is None for run in proposed.values())
    assert proposed[week.placed.pk].dropped and proposed[week.placed.pk].decided_gpu_hours == 0
    assert not proposed[week.deferred.pk].dropped  # a deferral asked for nothing
    assert sum(run.placed_gpu_hours for run in proposed.values()) == 0
    dropped = next(n for n in result.notes if n.code == "dropped_below_quorum")
    assert dropped.params["requests"] == sorted([week.placed.pk, week.shortened.pk, week.unplaced.pk])


def test_the_same_inputs_give_byte_identical_results(world):
    contended_week(world)
    params = {"rubric.business_impact": "20", "rubric.urgency": "40", "pool.a100.standby_pct": "0"}
    first, second = _replay(params).to_json(), _replay(params).to_json()
    assert first == second
    assert _replay(params).fingerprint == _replay(params).fingerprint != _replay().fingerprint


def test_bad_overrides_list_every_problem():
    with pytest.raises(ReplayErrors) as caught:
        _query({
            "rubric.speed": "10",
            "rubric.business_impact": "lots",
            "rubric.urgency": "50",
            "pool.nowhere.burst_reserve_pct": "5",
            "review.quorum": "2.5",
            "fairshare.half_life_weeks": "0",
            "weeks": "53",
            "color": "blue",
        })
    text = "\n".join(caught.value.messages)
    for expected in ("rubric.speed: not a criterion", "rubric.business_impact: “lots” is not a number",
                     "there is no pool “nowhere”", "review.quorum: give a whole number",
                     "fairshare.half_life_weeks: 0 is out of range", "weeks: 53 is out of range",
                     "color: not a policy parameter", "they add up to 130%"):
        assert expected in text
    assert len(caught.value.messages) == 8


@pytest.mark.parametrize(("params", "message"), [
    ({"rubric.fairness": "30"}, "add up to 120%"),
    ({"pool.atlas/a100.burst_reserve_pct": "100"}, "out of range (0 to 99)"),
    ({"pool.atlas/a100.burst_reserve_pct": "95"}, "below 100% together"),
    ({"weeks": "0"}, "weeks: 0 is out of range (1 to 52)"),
    ({"before": "2026-W54"}, "before: write an ISO week"),
])
def test_one_bad_override_is_refused_with_its_reason(world, params, message):
    with pytest.raises(ReplayErrors) as caught:
        _query(params)
    assert message in " ".join(caught.value.messages)


def test_weeks_across_the_year_boundary_replay_in_order(world):
    """2026 has an ISO week 53: the replay of the weeks before 2027-W02 takes 2026-W52, 2026-W53, 2027-W01."""
    weeks = ["2026-W51", "2026-W52", "2026-W53", "2027-W01"]
    for label in weeks:
        world.cycle = cycle_create(week=label)
        contended_week(world)
    result = _replay({"before": "2027-W02", "weeks": "3", "rubric.fairness": "0", "rubric.business_impact": "50"})
    assert result.weeks == ("2026-W52", "2026-W53", "2027-W01")
    assert [w.week for w in result.detail] == list(result.weeks)
    team_a = next(t for t in result.teams if t.team_id == world.team_a.pk)
    assert team_a.ranked.baseline == 2 * 3  # two ranked requests a week
    assert _replay({"before": "2027-W02", "weeks": "52"}).weeks == tuple(weeks)


@pytest.mark.parametrize("weeks", [1, 3])
def test_loading_takes_the_same_queries_for_one_week_or_many(world, weeks, django_assert_max_num_queries):
    for label in ["2026-W50", "2026-W51", "2026-W52"][:weeks]:
        world.cycle = cycle_create(week=label)
        contended_week(world)
    with django_assert_max_num_queries(18):
        inputs = replay_inputs_load(before=replay_before(week="2027-W01"), weeks=8)
    assert len(inputs.weeks) == weeks
    assert sum(len(w.requests) for w in inputs.weeks) == 4 * weeks


def test_empty_overrides_mean_nothing_changes(world):
    query = _query({"rubric.business_impact": "", "weeks": ""})
    assert query.overrides == Overrides() and query.weeks == 8


def test_an_elastic_parameter_is_accepted_and_said_not_to_be_replayed(world):
    contended_week(world)
    result = _replay({"elastic.idle_threshold_pct": "30"})
    assert [(n.code, n.params) for n in result.notes] == [("not_replayed", {"key": "elastic.idle_threshold_pct"})]
    assert _runs(result, "proposed") == _runs(result, "baseline")
    with pytest.raises(ReplayErrors) as caught:
        _query({"elastic.reason": "because", "elastic.speed": "2"})
    assert len(caught.value.messages) == 2
    assert "elastic.reason: not a parameter of the elastic policy." in caught.value.messages


def test_the_pools_are_replayed_as_they_were_when_the_week_was_placed(world, clock):
    week = contended_week(world)
    clock.move_to(timezone.now() + timedelta(hours=1), tick=False)
    # After the week was published, from the week after: a change its replay must not see.
    from governed.services import policy_change_record

    policy_change_record(actor=world.chair, changes={"pool.atlas/a100.burst_reserve_pct": 0},
                         effective_week="2026-W51", reason="No burst",
                         source="command")
    result = _replay()
    assert _runs(result, "baseline")[week.shortened.pk].placed_gpu_hours == 6 * 48  # as published
    assert not [n for n in result.notes if n.code.startswith("baseline_")]
    # The override sits on top of the week's pool: 20% burst is the week's, and so is a 20% override.
    again = _replay({"pool.atlas/a100.burst_reserve_pct": "20"})
    assert _runs(again, "proposed") == _runs(again, "baseline")


def test_a_correction_after_publish_is_noted_and_replayed_as_corrected(world):
    from committee import services

    week = contended_week(world)
    services.decision_correct(actor=world.chair, gpu_request=week.deferred, outcome="grant",
                              rationale="Room after all.", reason="The index rebuild cannot wait.")
    result = _replay()
    codes = {n.code: n.params for n in result.notes}
    assert codes["later_version"] == {"version": 2}
    assert codes["corrected"] == {"requests": [week.deferred.pk]}
    baseline = _runs(result, "baseline")
    assert baseline[week.deferred.pk].decided_gpu_hours == 8 * 48  # the decision as it stands now
    (detail,) = result.detail
    assert detail.actual_placed.get(week.deferred.pk, 0) == baseline[week.deferred.pk].placed_gpu_hours


def test_an_emergency_beside_the_plan_is_noted_and_not_replayed(world, running_week):  # noqa: F811
    """2026-W49, published through the real review and running (tests/committee/test_emergency.py)."""
    from committee.services import emergency as emergencies

    emergency = emergencies.emergency_request_file(
        actor=world.lead_a, team=world.team_a, pool=world.a100, title="Fraud model hotfix", gpu_count=16,
        duration_hours=10, justification="A fraud wave: the new model must ship today.")
    for member in (world.chair, world.reviewer):
        emergencies.emergency_request_decide(actor=member, emergency=emergency, approve=True)
    result = _replay({"before": "2026-W50"})
    assert result.weeks == (running_week.week,)
    codes = {n.code: n.params for n in result.notes}
    assert codes["emergency"] == {"windows": 1, "gpu_hours": 160}
    assert codes["later_version"] == {"version": 2}
    assert "baseline_plan_differs" not in codes  # the committee's windows are plan version 1's
    assert emergency.request_id not in _runs(result, "baseline")
    team_a = next(t for t in result.teams if t.team_id == world.team_a.pk)
    assert team_a.placed_gpu_hours.actual == 6 * 24  # what happened counts the committee's windows only


def _quorum_from(world: Any, week: str) -> None:
    from governed.services import policy_change_record

    policy_change_record(actor=world.chair, changes={"review.quorum": 4}, effective_week=week,
                         reason="Four scores", source="command")


def test_the_replay_of_a_week_after_a_quorum_change_uses_the_quorum_in_force_that_week(world):
    week = contended_week(world)  # each request has 3 member scores per criterion; the week had quorum 2
    _quorum_from(world, "2026-W51")  # a later week's rule leaves this week as it was
    baseline = _runs(_replay(), "baseline")
    assert baseline[week.placed.pk].rank is not None and not baseline[week.placed.pk].dropped
    assert replay_inputs_load(before=replay_before(week=None), weeks=4).weeks[-1].quorum == 2


def test_the_replay_of_a_week_reads_the_quorum_that_was_in_force_in_it(world):
    week = contended_week(world)
    _quorum_from(world, world.cycle.week)  # as if the week had been governed by four scores
    inputs = replay_inputs_load(before=replay_before(week=None), weeks=4)
    assert [w.quorum for w in inputs.weeks] == [4]
    baseline = _runs(replay(inputs=inputs, overrides=_query({}).overrides), "baseline")
    assert baseline[week.placed.pk].rank is None  # below the week's quorum: not ranked


def test_a_weeks_fair_share_is_replayed_with_the_org_chart_it_had(world, clock):
    from allocations.models import Department
    from tests.committee.test_fairshare_tree import _used
    from tests.governed.version_one import version_1_set

    version_1_set({"fairshare.half_life_weeks": "1", "fairshare.trailing_weeks": "4"})
    research = Department.objects.create(name="Research", slug="research", fair_share_weight=3)
    world.team_a.department = research
    world.team_a.save()
    _used(world, team=world.team_a, pool=world.a100, hours=300, key="a")
    _used(world, team=world.team_b, pool=world.a100, hours=100, key="b")
    contended_week(world)
    recomputed = {"fairshare.half_life_weeks": "2"}  # the factors recomputed from usage, not the frozen ones
    # Research (3) holds team A, team B (1) stands at the top: each used its department's share, F = 2^−1 → 5.00
    # (flat, weights 1 and 1, A would have 3.54 and B 7.07).
    before = _replay(recomputed).detail[0].proposed.fairness
    assert (before[world.team_a.pk], before[world.team_b.pk]) == (Decimal("5.00"), Decimal("5.00"))
    # Later team A leaves Research and Research's weight changes: the week replays with the chart it had.
    clock.move_to(timezone.now() + timedelta(days=10), tick=False)
    research.fair_share_weight = 1
    research.save()
    world.team_a.department = None
    world.team_a.save()
    assert _replay(recomputed).detail[0].proposed.fairness == before
    # The week's inputs carry the chart as it stood at its intake close (the policy history), not today's.
    (week,) = replay_inputs_load(before=replay_before(week=None), weeks=1).weeks
    assert week.team_departments == {world.team_a.pk: (research.pk, 3)}


def test_a_week_without_frozen_factors_is_replayed_with_the_team_weights_it_had(world, clock):
    from committee.models import FairShareSnapshot

    contended_week(world)
    FairShareSnapshot.objects.filter(cycle=world.cycle).delete()  # a week from before the factors were frozen
    weights_then = {world.team_a.pk: world.team_a.fair_share_weight, world.team_b.pk: world.team_b.fair_share_weight}
    (week,) = replay_inputs_load(before=replay_before(week=None), weeks=1).weeks
    assert {k: v for k, v in week.team_weights.items() if k in weights_then} == weights_then
    # Later team B's weight changes: the week replays with the weight it had, not today's.
    clock.move_to(timezone.now() + timedelta(days=10), tick=False)
    world.team_b.fair_share_weight += 5
    world.team_b.save()
    (week,) = replay_inputs_load(before=replay_before(week=None), weeks=1).weeks
    assert week.team_weights[world.team_b.pk] == weights_then[world.team_b.pk]
