"""grant_extension_file: more hours on a running grant, approved by the chair and one member from the burst reserve."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.urls import reverse

from allocations import selectors as allocation_selectors
from committee import services
from committee.models import EmergencyRequest, LifecycleEvent, Notification, NotificationKind
from committee.services.emergency import emergency_request_decide
from committee.services.notifications import notification_text
from core.errors import StateConflict
from tests.committee.contended import contended_week
from tests.committee.review_api import API, as_user


@pytest.fixture
def week(world):
    return contended_week(world)


def _placed(world, week):
    plan = allocation_selectors.plan_for_week(week=world.cycle.week)
    assert plan is not None
    return plan, [w for w in allocation_selectors.plan_window_list(plan=plan) if w.request_ref == week.placed.pk]


def test_an_extension_approved_by_the_chair_and_a_member_continues_the_window(world, week, clock):
    _plan, [window] = _placed(world, week)
    now = window.start + timedelta(hours=30, minutes=10)
    clock.move_to(now, tick=False)

    emergency = services.grant_extension_file(actor=world.member_a, gpu_request=week.placed, hours=10,
                                              justification="The eval needs ten more hours.")
    assert emergency.extends == week.placed
    emergency_request_decide(actor=world.reviewer, emergency=emergency, approve=True)
    emergency_request_decide(actor=world.chair, emergency=emergency, approve=True)

    plan, [kept] = _placed(world, week)
    assert plan.version == 2 and kept.pk == window.pk  # the granted window is not touched
    [extension] = [w for w in allocation_selectors.plan_window_list(plan=plan)
                   if w.request_ref == emergency.request_id]
    assert (extension.start, extension.end, extension.gpu_count, extension.tier) == (
        window.end, window.end + timedelta(hours=10), 40, "preemptible")  # from the burst reserve, right after
    event = LifecycleEvent.objects.get(type="grant.extended")
    assert (event.request_ref, event.data["extension_request_id"]) == (week.placed.pk, emergency.request_id)
    told = Notification.objects.get(recipient=world.member_a, kind=NotificationKind.WINDOW_EVENT)
    assert "was extended" in notification_text(told)


def test_bad_extensions_are_refused_and_nothing_is_filed(world, week, clock):
    """Each refusal files nothing, so the cases run one after the other on the same published week."""
    _plan, [window] = _placed(world, week)
    cases = [("no hours", ValidationError), ("past the week", ValidationError), ("another team", PermissionDenied),
             ("ended", StateConflict), ("week not running", StateConflict), ("no window", StateConflict)]
    for case, error in cases:
        kwargs = {"actor": world.member_a, "gpu_request": week.placed, "hours": 4, "justification": "More."}
        now = window.start + timedelta(hours=1)
        if case == "no hours":
            kwargs["hours"] = 0
        elif case == "past the week":
            kwargs["hours"] = int((world.cycle.ends_at - window.end) / timedelta(hours=1)) + 1
        elif case == "another team":
            kwargs["actor"] = world.member_b
        elif case == "ended":
            now = window.end + timedelta(minutes=5)
        elif case == "week not running":
            now = world.cycle.starts_at - timedelta(hours=2)
        elif case == "no window":
            kwargs["gpu_request"] = week.unplaced
        clock.move_to(now, tick=False)
        with pytest.raises(error):
            services.grant_extension_file(**kwargs)
        assert not EmergencyRequest.objects.exists(), case


def test_a_member_asks_over_the_api_and_a_bad_count_changes_nothing(api, world, week, clock):
    _plan, [window] = _placed(world, week)
    clock.move_to(window.start + timedelta(hours=2), tick=False)
    as_user(api, world.member_a)
    url = f"{API}/requests/{week.placed.pk}/extension/"
    assert api.post(url, {"hours": 500, "justification": "More."}, format="json").status_code == 400
    assert not EmergencyRequest.objects.exists()
    created = api.post(url, {"hours": 6, "justification": "Six more hours."}, format="json")
    assert created.status_code == 201, created.json()
    assert created.json()["extends"] == week.placed.pk and created.json()["status"] == "pending"


def test_a_member_asks_on_the_request_page_and_lands_on_the_emergency(client, world, week, clock):
    _plan, [window] = _placed(world, week)
    clock.move_to(window.start + timedelta(hours=2), tick=False)
    client.force_login(world.member_a)
    page = client.get(reverse("committee:request-detail", args=[week.placed.pk])).content.decode()
    assert 'id="extension"' in page and 'id="release"' not in page  # a member asks; only the lead gives back
    refused = client.post(reverse("committee:request-extension", args=[week.placed.pk]),
                          {"hours": "0", "justification": "More."})
    assert refused.status_code == 400 and "<details open>" in refused.content.decode()
    response = client.post(reverse("committee:request-extension", args=[week.placed.pk]),
                           {"hours": "6", "justification": "Six more hours."})
    emergency = EmergencyRequest.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("committee:emergency-detail",
                                                                            args=[emergency.pk])
