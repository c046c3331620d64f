"""window_release: a team's lead gives GPUs back; the week's waitlist gets them in the next plan version."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from allocations import selectors as allocation_selectors
from committee import selectors, services
from committee.models import (
    MembershipRole,
    Notification,
    NotificationKind,
    OutboxMessage,
    RequestEvent,
    TeamMembership,
)
from committee.services.notifications import notification_text
from core.errors import StateConflict
from tests.committee.appealing import record_revisions
from tests.committee.contended import contended_week
from tests.conftest import committed


@pytest.fixture
def week(world):
    return contended_week(world)


def _live(world):
    plan = allocation_selectors.plan_for_week(week=world.cycle.week)
    assert plan is not None
    return plan, sorted(allocation_selectors.plan_window_list(plan=plan), key=lambda w: (w.request_ref, w.start))


def test_a_lead_gives_back_half_and_the_shortened_grant_of_the_week_gets_the_gpus(world, week):
    _plan, before = _live(world)
    placed = next(w for w in before if w.request_ref == week.placed.pk)
    shortened = next(w for w in before if w.request_ref == week.shortened.pk)
    assert (placed.gpu_count, shortened.gpu_count) == (40, 6)

    release = services.window_release(actor=world.lead_a, gpu_request=week.placed, gpu_count=20,
                                      reason="The sweep converged early.")

    plan, after = _live(world)
    assert plan.version == 2 and release.plan == plan
    assert (release.released_gpu_count, release.kept_gpu_count) == (20, 20)
    by_ref = {w.request_ref: w for w in after}
    assert set(by_ref) == {week.placed.pk, week.shortened.pk}  # the h100 grant still does not fit
    assert (by_ref[week.placed.pk].gpu_count, by_ref[week.placed.pk].start, by_ref[week.placed.pk].end) == (
        20, placed.start, placed.end)
    assert (by_ref[week.shortened.pk].gpu_count, by_ref[week.shortened.pk].start) == (16, shortened.start)
    assert "Team A gave back GPUs of “Ranker retrain”" in plan.note and "The sweep converged early." in plan.note
    event = RequestEvent.objects.get(request=week.placed, action="released")
    assert event.actor_name and "The sweep converged early." in event.detail_display
    assert "20 GPUs from" in event.detail_display and "keeping 20" in event.detail_display
    # Every surface reads it as given back, not as a grant the plan shortened.
    outcome = selectors.request_outcome_get(gpu_request=week.placed)
    assert (outcome.status, outcome.differs) == ("given_back", False)
    assert outcome.status_label == "part given back by the team (960 of 1,920 GPU-hours kept)"


def test_what_a_team_gave_back_is_not_given_to_it_again_by_the_next_release(world, week):
    TeamMembership.objects.filter(user=world.member_b, team=world.team_b).update(role=MembershipRole.LEAD)
    services.window_release(actor=world.lead_a, gpu_request=week.placed, gpu_count=20, reason="Converged.")
    services.window_release(actor=world.member_b, gpu_request=week.shortened, gpu_count=4, reason="Smaller batch.")
    _plan, after = _live(world)
    by_ref = {w.request_ref: w.gpu_count for w in after}
    assert (by_ref[week.placed.pk], by_ref[week.shortened.pk]) == (20, 12)  # the 4 GPUs freed stay free


def test_a_release_is_in_the_archive_and_the_teams_are_told(world, week):
    revisions = len(record_revisions(world))
    release = committed(services.window_release, actor=world.lead_a, gpu_request=week.placed, gpu_count=20,
                        reason="Finished early.")
    latest = record_revisions(world)
    assert len(latest) == revisions + 1
    assert latest[-1].summary.startswith("Updated: plan version 2 published — ")
    assert "Finished early." in latest[-1].summary and latest[-1].data["plan"]["version"] == 2

    message = OutboxMessage.objects.get(key=f"notify:published:{world.cycle.pk}:v{release.plan.version}")
    services.notifications_deliver(kind=NotificationKind.DECISION_PUBLISHED, arguments=message.kwargs["arguments"])
    vision = Notification.objects.get(kind=NotificationKind.DECISION_PUBLISHED, recipient=world.member_b,
                                      key=f"decision:{week.shortened.pk}:plan-v2")
    text = notification_text(vision)  # team B's window grew, and it is told why
    assert "grows" in text and "6 A100" in text and "16 A100" in text and "Finished early." in text


def test_a_release_from_a_named_hour_in_a_running_window_splits_it_and_moves_nothing_else(world, week, clock):
    _plan, before = _live(world)
    placed = next(w for w in before if w.request_ref == week.placed.pk)
    shortened = next(w for w in before if w.request_ref == week.shortened.pk)
    clock.move_to(placed.start + timedelta(hours=5, minutes=20), tick=False)
    hour = placed.start + timedelta(hours=30)

    release = services.window_release(actor=world.lead_a, gpu_request=week.placed, gpu_count=40, effective_from=hour)

    _plan2, after = _live(world)
    assert release.kept_gpu_count == 0 and release.effective_from == hour
    mine = [(w.gpu_count, w.start, w.end) for w in after if w.request_ref == week.placed.pk]
    assert mine == [(40, placed.start, hour)]  # held until the hour it named, then nothing
    theirs = [w for w in after if w.request_ref == week.shortened.pk]
    assert [(w.pk, w.gpu_count) for w in theirs] == [(shortened.pk, 6)]  # running: it does not move


def test_a_partial_release_at_once_in_a_running_window_takes_effect_at_the_next_hour(world, week, clock):
    _plan, before = _live(world)
    placed = next(w for w in before if w.request_ref == week.placed.pk)
    clock.move_to(placed.start + timedelta(hours=5, minutes=20), tick=False)

    release = services.window_release(actor=world.lead_a, gpu_request=week.placed, gpu_count=10)

    _plan2, after = _live(world)
    next_hour = placed.start + timedelta(hours=6)
    assert release.effective_from == next_hour
    assert [(w.gpu_count, w.start, w.end) for w in after if w.request_ref == week.placed.pk] == [
        (40, placed.start, next_hour), (30, next_hour, placed.end)]


BAD = [
    ("hour in the past", ValidationError),
    ("hour not whole", ValidationError),
    ("hour after the window", ValidationError),
    ("more GPUs than held", ValidationError),
    ("no GPUs", ValidationError),
    ("another team's window", PermissionDenied),
    ("a member, not the lead", PermissionDenied),
    ("a grant without a window", StateConflict),
    ("a window that ended", StateConflict),
]


def test_bad_input_is_refused_with_a_clear_error_and_changes_nothing(world, week, clock):
    """Each refusal changes nothing, so the cases run one after the other on the same published week."""
    _plan, before = _live(world)
    placed = next(w for w in before if w.request_ref == week.placed.pk)
    events = RequestEvent.objects.count()
    for case, error in BAD:
        kwargs = {"actor": world.lead_a, "gpu_request": week.placed, "gpu_count": 10}
        now = world.cycle.starts_at - timedelta(hours=3)
        if case == "hour in the past":
            kwargs["effective_from"] = now - timedelta(hours=1)
        elif case == "hour not whole":
            kwargs["effective_from"] = placed.start + timedelta(minutes=30)
        elif case == "hour after the window":
            kwargs["effective_from"] = placed.end
        elif case == "more GPUs than held":
            kwargs["gpu_count"] = 41
        elif case == "no GPUs":
            kwargs["gpu_count"] = 0
        elif case == "another team's window":
            kwargs["gpu_request"] = week.shortened
        elif case == "a member, not the lead":
            kwargs["actor"] = world.member_a
        elif case == "a grant without a window":
            kwargs["gpu_request"] = week.unplaced
        elif case == "a window that ended":
            now = placed.end + timedelta(minutes=1)
        clock.move_to(now, tick=False)

        with pytest.raises(error) as caught:
            services.window_release(**kwargs)

        refused = caught.value
        message = " ".join(refused.messages) if isinstance(refused, ValidationError) else str(refused)
        assert message.strip(), case
        plan, after = _live(world)
        assert plan.version == 1, case
        assert [(w.pk, w.gpu_count) for w in after] == [(w.pk, w.gpu_count) for w in before], case
        assert RequestEvent.objects.count() == events, case
