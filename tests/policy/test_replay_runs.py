"""The policy lab's replay of weeks that hold a run over several weeks (docs/multi-week-runs.md): the run's later
weeks are placed first, as the live engine placed them, so the replay without overrides gives the live plans."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest

from allocations import engine
from allocations import selectors as allocation_selectors
from allocations.models import Commitment, CommitmentState, UsageRecord
from committee import weeks
from policy.replay import Overrides, replay
from policy.selectors.replay import replay_before, replay_inputs_load
from tests.committee.test_multiweek_runs import next_week, publish_week, run_fields, windows_of
from tests.factories import file_request

pytestmark = pytest.mark.django_db


def used_well(world, window, key):
    """The run's measured use of its window reached the threshold: its next week is confirmed."""
    UsageRecord.objects.create(
        pool=world.a100, team=world.team_a, period_start=window.start, period_end=window.end,
        gpu_hours_used=Decimal(700), mean_utilization_pct=Decimal("90"), window=window, idempotency_key=key,
    )


def newcomer(world, title, gpus):
    """Team B's request of the week on the same pool, for its first day: it scores above the run."""
    return file_request(world, team=world.team_b, title=title, gpu_count=gpus, min_gpu_count=4, duration_hours=24,
                        earliest_start=world.cycle.starts_at, latest_end=world.cycle.starts_at + timedelta(hours=24))


def live_plan(week):
    plan = allocation_selectors.plan_for_week(week=week)
    assert plan is not None
    return sorted(
        (w.request_ref, (w.pool.key, w.gpu_count, engine.instant_param(w.start), engine.instant_param(w.end), w.tier))
        for w in allocation_selectors.plan_window_list(plan=plan)
    )


def replayed_plan(run):
    return sorted([*((r.request_id, r.window) for r in run.requests if r.window is not None), *run.carried])


def test_three_weeks_with_a_three_week_run_replay_to_the_live_plans(world):
    run = file_request(world, **run_fields(world, weekly_gpu_counts=[16, 8, 24]))
    labels = [world.cycle.week]
    first = publish_week(world, (run, 6), (newcomer(world, "Ranker", 40), 9))
    used_well(world, windows_of(first)[run.pk], "run-week-1")
    labels.append(next_week(world).week)
    second = publish_week(world, (newcomer(world, "Launch eval", 46), 9))
    held, before = windows_of(second)[run.pk], windows_of(first)[run.pk]
    assert (held.start, held.gpu_count, before.end, before.gpu_count) == (  # two windows meeting at Monday 00:00
        world.cycle.starts_at, 8, world.cycle.starts_at, 16)
    used_well(world, windows_of(second)[run.pk], "run-week-2")
    labels.append(next_week(world).week)
    publish_week(world, (newcomer(world, "Distill", 30), 9))
    assert [c.state for c in Commitment.objects.order_by("week")] == [CommitmentState.CONFIRMED] * 2

    after = weeks.week_label(weeks.parse_week(labels[-1]) + timedelta(days=7))
    result = replay(inputs=replay_inputs_load(before=replay_before(week=after), weeks=3), overrides=Overrides())

    assert result.weeks == tuple(labels)
    for label, detail in zip(labels, result.detail, strict=True):
        assert replayed_plan(detail.baseline) == live_plan(label), label
    # The run holds each later week from its first hour with that week's GPUs, ahead of the week's new request.
    assert [detail.baseline.carried[0][1][1] for detail in result.detail[1:]] == [8, 24]
    assert [detail.baseline.carried[0][0] for detail in result.detail[1:]] == [run.pk, run.pk]

    # A proposal under which the run's first week is no longer placed (a quorum of 3: it has 2 scores) holds
    # nothing for it later: its GPUs go to the weeks' new requests.
    proposal = replay(inputs=replay_inputs_load(before=replay_before(week=after), weeks=3),
                      overrides=Overrides(quorum=3))
    assert [detail.proposed.carried for detail in proposal.detail] == [(), (), ()]


def test_a_week_whose_continuation_was_withheld_is_not_placed_in_the_replay(world):
    run = file_request(world, **run_fields(world))
    publish_week(world, (run, 6))
    labels = [world.cycle.week, next_week(world).week]  # no usage reported: the run's second week is withheld
    publish_week(world, (newcomer(world, "Launch eval", 46), 9))
    assert Commitment.objects.get(week=labels[1]).state == CommitmentState.WITHHELD

    after = weeks.week_label(weeks.parse_week(labels[-1]) + timedelta(days=7))
    result = replay(inputs=replay_inputs_load(before=replay_before(week=after), weeks=2), overrides=Overrides())

    assert result.detail[1].baseline.carried == ()
    assert [replayed_plan(d.baseline) for d in result.detail] == [live_plan(label) for label in labels]
