"""The proposal's life: filed, discussed, voted, adopted or declined, applied from its week, its result observed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import time_machine
from django.core.exceptions import ValidationError
from django.utils import timezone

from allocations.models import GpuPool
from committee import selectors as committee_selectors
from committee import weeks
from committee.models import ReviewCycle
from committee.services import clock_tick, cycle_create
from core.errors import RoleRequired, StateConflict
from governed.models import PolicyChange
from policy import selectors, services
from policy.models import Proposal, ProposalStatus, ProposalVote
from tests.clock import FIXED_NOW
from tests.conftest import World

A100_RESERVE = "pool.a100.burst_reserve_pct"


def file(world: World, changes: dict[str, str], title: str = "Change") -> Proposal:
    return services.proposal_submit(
        actor=world.member_a, title=title, reason="Idle reserve", expected_effect="More standard GPUs",
        changes=changes, figures=[{"metric": "throughput", "baseline": "1180", "value": "1265", "unit": "samples/s"}],
    )


def adopt(world: World, proposal: Proposal, week: str, now: datetime = FIXED_NOW) -> Proposal:
    return services.proposal_adopt(actor=world.chair, proposal=proposal, effective_week=week, reason="Agreed",
                                   now=now)


def test_propose_records_old_and_new_values_and_figures(world: World) -> None:
    proposal = file(world, {A100_RESERVE: "15"})
    change = proposal.changes.get()
    assert (change.key, change.old_value, change.new_value) == (A100_RESERVE, "20", "15")
    figure = proposal.figures.get()
    assert (figure.baseline, figure.value, figure.unit) == (1180, 1265, "samples/s")
    assert proposal.status == ProposalStatus.OPEN and proposal.proposer_name == "Member_A"


def test_bad_proposal_lists_every_problem_and_stores_nothing(world: World) -> None:
    with pytest.raises(ValidationError) as caught:
        services.proposal_submit(
            actor=world.member_a, title="", reason="r", expected_effect="e",
            changes={"rubric.business_impact": "45", "pool.a100.standby_pct": "150", "nope.key": "1",
                     "pool.h100.burst_reserve_pct": "95"},
            figures=[{"metric": "cost", "value": "12", "unit": ""}],
        )
    errors = caught.value.message_dict
    text = " ".join(errors["changes"])
    assert "“nope.key” is not a policy parameter." in text
    assert "add up to 100; these add up to 105" in text
    assert "atlas/a100 cold standby must be 0 to 99 %; got 150" in text
    assert "Pool h100: burst reserve 95 % plus cold standby 10 % must stay below 100 %." in text
    assert errors["title"] and "give the unit" in errors["figures"][0]
    assert not Proposal.objects.exists()


def test_vote_once_per_person_and_changeable(world: World) -> None:
    proposal = file(world, {A100_RESERVE: "15"})
    services.proposal_vote(actor=world.finance, proposal=proposal, choice="support", comment="Yes", now=FIXED_NOW)
    services.proposal_vote(actor=world.finance, proposal=proposal, choice="against", comment="On reflection no",
                           now=FIXED_NOW)
    vote = ProposalVote.objects.get()
    assert (vote.choice, vote.comment) == ("against", "On reflection no")
    with pytest.raises(ValidationError) as caught:
        services.proposal_vote(actor=world.member_b, proposal=proposal, choice="maybe", comment="", now=FIXED_NOW,
                               team=world.team_a)
    assert set(caught.value.message_dict) == {"choice", "comment", "team"}
    assert ProposalVote.objects.count() == 1


def test_only_the_chair_adopts(world: World) -> None:
    proposal = file(world, {A100_RESERVE: "15"})
    with pytest.raises(RoleRequired):
        services.proposal_adopt(actor=world.reviewer, proposal=proposal, effective_week="2026-W51", reason="x",
                                now=FIXED_NOW)
    proposal.refresh_from_db()
    assert proposal.status == ProposalStatus.OPEN


def test_second_adoption_for_a_week_is_refused_with_the_next_free_week(world: World) -> None:
    first = file(world, {A100_RESERVE: "15"})
    second = file(world, {"review.quorum": "3"})
    assert selectors.week_next_free(now=FIXED_NOW) == "2026-W51"  # W50's cycle is open already
    adopt(world, first, "2026-W51")
    assert selectors.week_next_free(now=FIXED_NOW) == "2026-W52"
    with pytest.raises(StateConflict) as caught:
        adopt(world, second, "2026-W51")
    assert "The next free week is 2026-W52." in str(caught.value)
    second.refresh_from_db()
    assert second.status == ProposalStatus.OPEN
    assert committee_selectors.governance_for_week(week="2026-W51").score_quorum == 2


def test_adoption_refuses_past_and_open_weeks_and_no_reason_at_once(world: World) -> None:
    proposal = file(world, {A100_RESERVE: "15"})
    for week, words in (("2026-W48", "has begun or is past"), ("2026-W50", "already open"),
                        ("2026-W99", "YYYY-Www")):
        with pytest.raises(ValidationError) as caught:
            services.proposal_adopt(actor=world.chair, proposal=proposal, effective_week=week, reason=" ",
                                    now=FIXED_NOW)
        assert words in str(caught.value.message_dict["effective_week"])
        assert caught.value.message_dict["decision_reason"]
    proposal.refresh_from_db()
    assert proposal.status == ProposalStatus.OPEN


def test_decline_needs_a_reason(world: World) -> None:
    proposal = file(world, {A100_RESERVE: "15"})
    with pytest.raises(ValidationError):
        services.proposal_decline(actor=world.chair, proposal=proposal, reason="", now=FIXED_NOW)
    services.proposal_decline(actor=world.chair, proposal=proposal, reason="Not now", now=FIXED_NOW)
    proposal.refresh_from_db()
    assert (proposal.status, proposal.decision_reason) == (ProposalStatus.DECLINED, "Not now")
    with pytest.raises(StateConflict):
        services.proposal_vote(actor=world.finance, proposal=proposal, choice="support", comment="late",
                               now=FIXED_NOW)


def test_quorum_and_fair_share_change_from_the_effective_week_not_before(world: World) -> None:
    proposal = file(world, {"review.quorum": "3", "fairshare.half_life_weeks": "2.5"})
    adopt(world, proposal, "2026-W51")
    before = committee_selectors.governance_for_week(week="2026-W50")
    after = committee_selectors.governance_for_week(week="2026-W51")
    assert (before.score_quorum, before.fairshare_half_life_weeks) == (2, 2.0)
    assert (after.score_quorum, after.fairshare_half_life_weeks, after.fairshare_trailing_weeks) == (3, 2.5, 8)
    assert committee_selectors.governance_for_week(week="2027-W10").score_quorum == 3


def test_governance_across_the_year_boundary(world: World, clock: time_machine.Traveller) -> None:
    clock.move_to(datetime(2026, 12, 23, 12, 0, tzinfo=UTC), tick=False)  # 2026-W52
    proposal = file(world, {"fairshare.trailing_weeks": "6"})
    adopt(world, proposal, "2027-W01", now=timezone.now())
    assert committee_selectors.governance_for_week(week="2026-W53").fairshare_trailing_weeks == 8
    assert committee_selectors.governance_for_week(week="2027-W01").fairshare_trailing_weeks == 6


def _burst(week: str, pool: GpuPool) -> int:
    from allocations.selectors import pool_reserves_for_week

    [in_week] = pool_reserves_for_week(week=week, pools=[GpuPool.objects.select_related("cluster").get(pk=pool.pk)])
    return in_week.burst_reserve_pct


def test_rubric_pool_and_elastic_apply_from_the_effective_week(world: World) -> None:
    proposal = file(world, {"rubric.business_impact": "35", "rubric.fairness": "15", A100_RESERVE: "15",
                            "elastic.idle_threshold_pct": "20"})
    adopt(world, proposal, "2026-W51")
    changes = PolicyChange.objects.count()
    from allocations.elastic.selectors import policy_in_force

    def idle_threshold(week: str) -> int:
        return policy_in_force(now=weeks.week_bounds(week)[0]).idle_threshold_pct
    # Every parameter is read from the store by week: W51 has the adopted values, W50 keeps its own.
    assert committee_selectors.rubric_for_week(week="2026-W51").weights["business_impact"] == 35
    assert committee_selectors.rubric_for_week(week=world.cycle.week).weights["business_impact"] == 40
    assert (_burst("2026-W50", world.a100), _burst("2026-W51", world.a100)) == (20, 15)
    assert (idle_threshold("2026-W50"), idle_threshold("2026-W51")) == (25, 20)
    # Nothing is left to write when the week comes: the adoption is applied at once.
    proposal.refresh_from_db()
    assert proposal.applied_at == FIXED_NOW
    opening = weeks.week_bounds("2026-W50")[0]
    with time_machine.travel(opening, tick=False):
        cycle = cycle_create(week="2026-W51")
    assert committee_selectors.rubric_for_week(week=cycle.week).weights["business_impact"] == 35
    start = weeks.week_bounds("2026-W51")[0]
    with time_machine.travel(start, tick=False):
        clock_tick(now=start)
    assert services.adoptions_apply_due(now=start + timedelta(days=7)) == []
    assert PolicyChange.objects.count() == changes and _burst("2026-W51", world.a100) == 15


def test_a_policy_change_never_reaches_a_week_before_its_effective_week(world: World) -> None:
    """Adopted during W49 for W51; the chair opens W50 (the world's cycle) and W51 at once: W49 and W50 keep
    their capacity, their rubric and their elastic policy."""
    from allocations import selectors as allocation_selectors
    from allocations.elastic.selectors import elastic_policy_current

    def capacity(week: str) -> object:
        cycle = ReviewCycle.objects.filter(week=week).first()
        hours = cycle.hours if cycle else 168
        [pool] = allocation_selectors.pool_reserves_for_week(
            week=week, pools=[GpuPool.objects.select_related("cluster").get(pk=world.a100.pk)])
        return allocation_selectors.pool_week_capacity(pool=pool, hours=hours)

    elastic = elastic_policy_current().number
    before = {week: capacity(week) for week in ("2026-W49", "2026-W50")}
    rubric_w50 = committee_selectors.rubric_for_week(week=world.cycle.week)
    adopt(world, file(world, {"rubric.business_impact": "35", "rubric.fairness": "15", A100_RESERVE: "15",
                              "elastic.idle_threshold_pct": "20"}), "2026-W51")
    w51 = cycle_create(week="2026-W51")  # opened for intake during W49, two weeks early
    assert committee_selectors.rubric_for_week(week=w51.week).weights["business_impact"] == 35
    assert {week: capacity(week) for week in ("2026-W49", "2026-W50")} == before
    assert committee_selectors.rubric_for_week(week=world.cycle.week) == rubric_w50
    assert elastic_policy_current().number == elastic
    # W50 begins: still nothing for W50.
    services.adoptions_apply_due(now=weeks.week_bounds("2026-W50")[0])
    assert capacity("2026-W50") == before["2026-W50"] and elastic_policy_current().number == elastic
    # W51: the pool's reserve is the adopted one.
    assert capacity("2026-W51") != before["2026-W50"] and _burst("2026-W51", world.a100) == 15


def test_observed_result_due_then_overdue_at_24_hours(world: World) -> None:
    proposal = adopt(world, file(world, {A100_RESERVE: "15"}), "2026-W51")
    week_start, week_end = weeks.week_bounds("2026-W51")
    assert selectors.observed_status(proposal, now=week_start - timedelta(seconds=1)) == "scheduled"
    assert selectors.observed_status(proposal, now=week_start) == "waiting"
    assert selectors.observed_status(proposal, now=week_end - timedelta(seconds=1)) == "waiting"
    assert selectors.observed_status(proposal, now=week_end) == "due"
    assert selectors.observed_status(proposal, now=week_end + timedelta(hours=24)) == "due"
    assert selectors.observed_status(proposal, now=week_end + timedelta(hours=24, seconds=1)) == "overdue"
    later = week_end + timedelta(hours=30)
    with pytest.raises(RoleRequired):
        services.proposal_observe(actor=world.member_b, proposal=proposal, result="x", now=later)
    services.proposal_observe(actor=world.member_a, proposal=proposal, result="3 more GPUs placed", now=later,
                              figures=[{"metric": "throughput", "value": "1250", "unit": "samples/s"}])
    proposal.refresh_from_db()
    assert selectors.observed_status(proposal, now=later) == "recorded"
    assert proposal.figures.filter(stage="observed").get().value == 1250


def test_policy_history_shows_the_adopted_governance_version(world: World) -> None:
    adopt(world, file(world, {"review.quorum": "3"}), "2026-W51")
    change = next(c for c in committee_selectors.policy_history() if c.kind == "Review and fair share")
    assert change.subject == "v2, from week 2026-W51" and change.who == "Chair"
    assert [(f.label, f.old, f.new) for f in change.changes] == [("score quorum", "2", "3")]
    assert "adopted from week 2026-W51: Agreed" in change.reason


def test_the_applied_note_is_stored_as_a_code_and_read_in_the_readers_language(world: World) -> None:
    from django.utils import translation

    proposal = adopt(world, file(world, {A100_RESERVE: "15"}), "2026-W51")
    number = PolicyChange.objects.get(source_ref=f"proposal:{proposal.pk}").number
    proposal.refresh_from_db()
    english = f"Policy version {number}, from week 2026-W51."
    assert proposal.applied_note == proposal.applied_note_display() == english  # the text as written, and read
    assert proposal.applied_note_text["code"] == "proposal_applied"
    with translation.override("zh-hans"):
        chinese = proposal.applied_note_display()
    assert chinese == f"策略版本 {number}，自第 2026-W51 周起。"
