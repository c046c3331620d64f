"""plan_publish: one transaction, versions per week, n+1 supersedes n, windows never edited."""

from __future__ import annotations

from datetime import timedelta
from itertools import pairwise

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError

from allocations import selectors
from allocations.engine import EngineWindow, Explanation, Reason
from allocations.models import (
    AllocationPlan,
    AllocationWindow,
    PlanExplanation,
    PlanSequence,
    WindowWithdrawal,
)
from allocations.selectors import plan_for_week
from allocations.services import plan_publish
from tests.allocations.plans import W, placed, publish, this_week, week_start


def _rows(queryset):
    return [tuple(row) for row in queryset.order_by("id").values_list()]


def test_first_publish_is_version_one_with_its_windows_and_explanations(world):
    start = week_start(this_week())
    window = EngineWindow(1, "atlas/a100", 16, start + timedelta(hours=8), start + timedelta(hours=56), "priority")
    other = EngineWindow(2, "orion/h100", 8, start, start + timedelta(hours=24), "standard")
    plan = publish([W(world.a100, world.team_a, 16, 8, 56, ref=1, tier="priority"),
                    W(world.h100, world.team_b, 8, 0, 24, ref=2)],
                   explanations=[placed(window, gpu_model="A100"),
                                 placed(other),
                                 Explanation(3, False, False, (Reason("unknown_pool", {"pool": "atlas/v100"}),))])
    assert (plan.version, plan.supersedes, plan.published_by_name) == (1, None, "Chris Chair")
    assert plan.windows.count() == 2
    assert {w.cluster_id for w in plan.windows.all()} == {world.atlas.pk, world.orion.pk}
    assert [e.request_ref for e in plan.explanations.all()] == [1, 2, 3]
    assert plan.windows.get(request_ref=1).explanation.startswith("placed Mon")
    assert plan_for_week(week=this_week()) == plan


def test_a_correction_is_version_two_and_supersedes_one_without_editing_it(world):
    first = publish([W(world.a100, world.team_a, 16, 8, 56, ref=1), W(world.a100, world.team_b, 8, 0, 24, ref=2)])
    before = _rows(AllocationWindow.objects.all())
    plan_before = _rows(AllocationPlan.objects.all())
    second = publish([W(world.a100, world.team_a, 8, 8, 56, ref=1), W(world.a100, world.team_b, 8, 0, 24, ref=2)])
    assert (second.version, second.supersedes) == (2, first)
    assert second.change_seq > first.change_seq
    # Nothing published is edited: every window and the old plan read exactly as before.
    assert _rows(AllocationWindow.objects.filter(pk__in=[r[0] for r in before])) == before
    assert _rows(AllocationPlan.objects.filter(pk=first.pk)) == plan_before
    # Request 2's window is unchanged, so version 2 carries it (same id); request 1's is replaced.
    current = {w.request_ref: w for w in selectors.plan_window_list(plan=second)}
    old = {w.request_ref: w for w in selectors.plan_window_list(plan=first)}
    assert current[2].pk == old[2].pk and current[1].pk != old[1].pk and current[1].gpu_count == 8
    withdrawal = WindowWithdrawal.objects.get()
    assert (withdrawal.window, withdrawal.plan, withdrawal.change_seq) == (old[1], second, second.change_seq)
    assert list(selectors.plan_withdrawn_list(plan=second)) == [old[1]]
    assert plan_for_week(week=this_week()) == second


def test_versions_count_per_week_and_the_sequence_across_weeks(world):
    a1 = publish([W(world.a100, world.team_a, 1, 0, 1, ref=1)], week="2030-W01")
    b1 = publish([W(world.a100, world.team_a, 1, 0, 1, ref=2)], week="2030-W02")
    a2 = publish([W(world.a100, world.team_a, 2, 0, 1, ref=1)], week="2030-W01")
    assert [(p.week, p.version) for p in (a1, b1, a2)] == [("2030-W01", 1), ("2030-W02", 1), ("2030-W01", 2)]
    assert a1.change_seq < b1.change_seq < a2.change_seq == PlanSequence.objects.get().value
    assert a2.supersedes == a1 and b1.supersedes is None


def test_an_error_mid_publish_leaves_the_old_version_current(world, monkeypatch):
    first = publish([W(world.a100, world.team_a, 16, 8, 56, ref=1)])
    counts = (AllocationPlan.objects.count(), AllocationWindow.objects.count(), PlanExplanation.objects.count())
    sequence = PlanSequence.objects.get().value

    def fail(*args, **kwargs):
        raise IntegrityError("disk full")  # after the plan, its windows and withdrawals were written

    monkeypatch.setattr(PlanExplanation.objects, "bulk_create", fail)
    with pytest.raises(IntegrityError):
        publish([W(world.a100, world.team_a, 8, 8, 56, ref=1)])
    assert plan_for_week(week=this_week()) == first
    assert (AllocationPlan.objects.count(), AllocationWindow.objects.count(),
            PlanExplanation.objects.count()) == counts
    assert not WindowWithdrawal.objects.exists()
    assert PlanSequence.objects.get().value == sequence


def test_a_window_outside_the_week_is_refused_and_nothing_is_stored(world):
    week = this_week()
    start = week_start(week)
    with pytest.raises(ValidationError, match="outside the week"):
        plan_publish(
            week=week, week_starts_at=start, week_ends_at=start + timedelta(days=7), source_ref="test",
            windows=[EngineWindow(ref=1, pool="atlas/a100", gpu_count=8, start=start - timedelta(hours=1),
                                  end=start + timedelta(hours=3), tier="standard")],
            explanations=[Explanation(1, True, False, ())],
            pools={"atlas/a100": world.a100}, teams={1: world.team_a}, published_by_name="Chris Chair",
        )
    assert not AllocationPlan.objects.exists() and not PlanSequence.objects.filter(value__gt=0).exists()


def test_unknown_pool_or_request_is_refused(world):
    week = this_week()
    start = week_start(week)
    window = EngineWindow(ref=1, pool="atlas/v100", gpu_count=8, start=start, end=start + timedelta(hours=3),
                          tier="standard")
    with pytest.raises(ValidationError, match="unknown pool"):
        plan_publish(week=week, week_starts_at=start, week_ends_at=start + timedelta(days=7), source_ref="t",
                     windows=[window], explanations=[], pools={}, teams={1: world.team_a}, published_by_name="x")
    assert not AllocationPlan.objects.exists()


def test_withdrawn_then_republished_window_is_a_new_window(world):
    publish([W(world.a100, world.team_a, 16, 8, 56, ref=1)])
    publish([])
    third = publish([W(world.a100, world.team_a, 16, 8, 56, ref=1)])
    live = list(selectors.plan_window_list(plan=third))
    assert len(live) == 1 and live[0].plan == third
    assert WindowWithdrawal.objects.count() == 1


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_simultaneous_publishes_get_consecutive_versions_in_commit_order(world):
    import threading

    from django.db import connection, connections

    from tests.conftest import require

    require(connection.vendor == "postgresql", "PostgreSQL (run with DATABASE_URL=postgres://…)")
    week, barrier = this_week(), threading.Barrier(4)
    errors: list[BaseException] = []

    def publish_one(gpus: int) -> None:
        try:
            barrier.wait(timeout=10)
            publish([W(world.a100, world.team_a, gpus, 0, 10, ref=1)], week=week)
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=publish_one, args=(gpus,)) for gpus in (1, 2, 3, 4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not errors
    plans = list(AllocationPlan.objects.filter(week=week).order_by("version"))
    assert [p.version for p in plans] == [1, 2, 3, 4]
    assert [p.change_seq for p in plans] == sorted(p.change_seq for p in plans)
    assert all(later.supersedes_id == earlier.pk for earlier, later in pairwise(plans))
    assert len(list(selectors.plan_window_list(plan=plans[-1]))) == 1
