"""The cycle's state machine: open → in review → finalized, each refusal, and the commands that drive it."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management import CommandError, call_command
from django.utils import timezone

from allocations.models import UsageRecord
from committee import services
from committee.models import CycleStatus, Decision, FairShareSnapshot, GpuRequest, RequestStatus
from reports.models import Page
from tests.committee.reviewing import close, decide, score, two_requests_in_review
from tests.conftest import committed
from tests.factories import file_request, forecast_fields, usage_fields


def test_chair_closes_intake_and_the_cycle_goes_to_review(world):
    gpu_request = file_request(world)
    cycle = services.cycle_close_intake(cycle=world.cycle, actor=world.chair)
    assert cycle.status == CycleStatus.IN_REVIEW and cycle.intake_closed_at is not None
    assert not cycle.intake_open
    # Requests freeze: the team can no longer change them.
    with pytest.raises(ValidationError, match="closed"):
        services.request_update(
            actor=world.lead_a, gpu_request=gpu_request, fields={"title": "Changed"},
            usage=usage_fields(), forecast=forecast_fields(), alternatives=[],
        )
    assert GpuRequest.objects.get(pk=gpu_request.pk).title == "Ranker retrain"


def test_closing_intake_freezes_each_teams_fair_share(world):
    now = timezone.now()
    UsageRecord.objects.create(
        pool=world.a100, team=world.team_a, period_start=now - timedelta(days=2), period_end=now - timedelta(days=1),
        gpu_hours_used=Decimal(300), mean_utilization_pct=90, idempotency_key="k1",
    )
    close(world)
    snapshots = {s.team_id: s for s in FairShareSnapshot.objects.filter(cycle=world.cycle)}
    assert set(snapshots) == {world.team_a.pk, world.team_b.pk}
    assert snapshots[world.team_a.pk].decayed_gpu_hours == Decimal("300.00")
    assert snapshots[world.team_a.pk].team_name == "Team A"
    # Usage reported later does not move the ranking under the committee's feet.
    UsageRecord.objects.create(
        pool=world.a100, team=world.team_b, period_start=now - timedelta(hours=5), period_end=now,
        gpu_hours_used=Decimal(5000), mean_utilization_pct=90, idempotency_key="k2",
    )
    from committee import selectors

    shares = selectors.fair_share_for_cycle(cycle=world.cycle)
    assert shares[world.team_b.pk].decayed_gpu_hours == 0.0
    assert shares[world.team_a.pk].factor == pytest.approx(2 ** (-1 / (2 / 3)))


def test_the_clock_closes_intake_without_an_actor(world):
    cycle = services.cycle_close_intake(cycle=world.cycle, actor=None)
    assert cycle.status == CycleStatus.IN_REVIEW


@pytest.mark.parametrize("who", ["reviewer", "lead_a", "outsider"])
def test_only_the_chair_closes_intake(world, who):
    with pytest.raises(PermissionDenied):
        services.cycle_close_intake(cycle=world.cycle, actor=getattr(world, who))
    world.cycle.refresh_from_db()
    assert world.cycle.status == CycleStatus.OPEN


def test_closing_twice_is_refused_with_a_clear_message(world):
    close(world)
    with pytest.raises(ValidationError, match=r"week .* is in review, not open for intake"):
        services.cycle_close_intake(cycle=world.cycle, actor=world.chair)


def test_finalize_refuses_while_a_ranked_request_is_undecided(world):
    a, b = two_requests_in_review(world)
    for member in (world.chair, world.reviewer):
        score(member, a, 8, 6, 5)
        score(member, b, 5, 5, 5)
    decide(world, a)
    with pytest.raises(ValidationError, match="Vision model"):
        services.cycle_finalize(cycle=world.cycle, actor=world.chair)
    world.cycle.refresh_from_db()
    assert world.cycle.status == CycleStatus.IN_REVIEW
    assert Decision.objects.get(request=a).priority_rank is None  # nothing written


def test_finalize_open_cycle_is_refused(world):
    with pytest.raises(ValidationError, match="not in review"):
        services.cycle_finalize(cycle=world.cycle, actor=world.chair)


@pytest.mark.parametrize("who", ["reviewer", "finance", "lead_a"])
def test_only_the_chair_finalizes(world, who):
    close(world)
    with pytest.raises(PermissionDenied):
        services.cycle_finalize(cycle=world.cycle, actor=getattr(world, who))


def test_finalize_freezes_ranks_decides_every_request_and_writes_the_weeks_record(world):
    a = file_request(world, title="Ranker retrain")
    b = file_request(world, team=world.team_b, pool=world.h100, title="Vision model", gpu_count=8, min_gpu_count=4)
    c = file_request(world, pool=world.h100, title="Below quorum", gpu_count=8, min_gpu_count=4)
    draft = file_request(world, team=world.team_b, title="Never submitted", submit=False)
    close(world)
    for member in (world.chair, world.reviewer):
        score(member, a, 8, 6, 5)
        score(member, b, 9, 9, 9)
    score(world.chair, c, 9, 9, 9)  # one score each: below quorum
    decide(world, a, "partial", granted_gpu_count=8, rationale="Half now, the rest next week.")
    decide(world, b, "grant")
    cycle = committed(services.cycle_finalize, cycle=world.cycle, actor=world.chair)
    record = Page.objects.select_related("latest_revision").get(source_key=f"cycle:{world.cycle.week}")
    assert record.latest_revision is not None  # written by the outbox's task once the finalize committed
    assert cycle.status == CycleStatus.FINALIZED and cycle.finalized_by_name == "Chair"
    decisions = {d.request_id: d for d in Decision.objects.filter(cycle=cycle)}
    assert decisions[b.pk].priority_rank == 1 and decisions[b.pk].weighted_total == Decimal("91.00")
    assert decisions[a.pk].priority_rank == 2 and decisions[a.pk].granted_gpu_count == 8
    auto = decisions[c.pk]
    assert auto.outcome == "defer" and auto.priority_rank is None and auto.decided_by is None
    assert "not ranked" in auto.rationale and "business impact" in auto.rationale
    statuses = dict(GpuRequest.objects.values_list("pk", "status"))
    assert statuses == {a.pk: RequestStatus.DECIDED, b.pk: RequestStatus.DECIDED, c.pk: RequestStatus.DECIDED,
                        draft.pk: RequestStatus.DRAFT}
    assert a.events.filter(action="decided", detail="Partial grant (8 GPUs)").exists()


def test_after_finalize_nothing_can_be_scored_decided_or_finalized_again(world):
    a, _b = two_requests_in_review(world)
    services.cycle_finalize(cycle=world.cycle, actor=world.chair)  # nobody scored: both auto-deferred
    with pytest.raises(ValidationError, match="finalized, not in review"):
        services.score_record(actor=world.reviewer, gpu_request=a, criterion="urgency", value=5)
    with pytest.raises(ValidationError):
        decide(world, a, "reject")
    with pytest.raises(ValidationError, match="finalized"):
        services.cycle_finalize(cycle=world.cycle, actor=world.chair)
    with pytest.raises(ValidationError, match="finalized"):
        services.cycle_close_intake(cycle=world.cycle, actor=world.chair)


def test_close_intake_command(world, capsys):
    call_command("close_intake", "--week", world.cycle.week)
    assert "is closed" in capsys.readouterr().out
    world.cycle.refresh_from_db()
    assert world.cycle.status == CycleStatus.IN_REVIEW
    with pytest.raises(CommandError, match="in review, not open"):
        call_command("close_intake", "--week", world.cycle.week)


def test_close_intake_command_refuses_a_non_chair_and_an_unknown_week(world):
    with pytest.raises(CommandError, match="Only the chair"):
        call_command("close_intake", "--week", world.cycle.week, "--as-user", "reviewer")
    with pytest.raises(CommandError, match="No cycle"):
        call_command("close_intake", "--week", "1999-W01")
    with pytest.raises(CommandError, match="No user named nobody"):
        call_command("finalize_cycle", "--week", world.cycle.week, "--as-user", "nobody")
    world.cycle.refresh_from_db()
    assert world.cycle.status == CycleStatus.OPEN


def test_finalize_cycle_command(world, capsys):
    a, _b = two_requests_in_review(world)
    for member in (world.chair, world.reviewer):
        score(member, a, 8, 6, 5)
    with pytest.raises(CommandError, match="Ranker retrain"):
        call_command("finalize_cycle", "--week", world.cycle.week, "--as-user", "chair")
    decide(world, a, "reject", rationale="Not this week.")
    call_command("finalize_cycle", "--week", world.cycle.week, "--as-user", "chair")
    assert "finalized: 2 decisions" in capsys.readouterr().out
