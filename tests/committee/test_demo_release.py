"""The demo's release (committee/demo/running_week.py, seed_release): a lead gives half a window back only where the
week's waitlist gets the GPUs, whatever the instant the demo is seeded at."""

from __future__ import annotations

from datetime import timedelta

from allocations import selectors as allocation_selectors
from committee.demo.running_week import RELEASE_REASON, seed_release
from committee.models import RequestEvent
from tests.committee.contended import contended_week


def _gpus(world, request_ref):
    plan = allocation_selectors.plan_for_week(week=world.cycle.week)
    assert plan is not None
    return plan.version, sum(w.gpu_count for w in allocation_selectors.plan_window_list(plan=plan)
                             if w.request_ref == request_ref)


def test_the_demo_gives_half_a_window_back_to_the_waitlist_once(world, clock):
    week = contended_week(world)  # Ranker retrain 40 GPUs placed; Vision model shortened to 6 of 16
    now = world.cycle.starts_at + timedelta(hours=1)
    clock.move_to(now, tick=False)
    assert _gpus(world, week.shortened.pk) == (1, 6)

    seed_release(now=now)

    assert _gpus(world, week.placed.pk) == (2, 20) and _gpus(world, week.shortened.pk) == (2, 16)
    [event] = RequestEvent.objects.filter(action="released")
    assert event.request_id == week.placed.pk and RELEASE_REASON in event.detail_display
    seed_release(now=now + timedelta(hours=1))  # the demo seeded again: nothing more
    assert _gpus(world, week.shortened.pk) == (2, 16)


def test_the_demo_releases_nothing_when_the_waitlist_cannot_grow(world, clock):
    week = contended_week(world)
    now = world.cycle.starts_at + timedelta(hours=30)  # the shortened grant's window runs: it cannot grow
    clock.move_to(now, tick=False)
    seed_release(now=now)
    assert _gpus(world, week.shortened.pk) == (1, 6) and not RequestEvent.objects.filter(action="released").exists()
