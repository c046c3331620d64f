"""A request deferred in a finalized or published week, carried into next week's intake on the team's word."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from django.core.exceptions import PermissionDenied
from django.urls import reverse

from committee import services
from committee.models import CycleStatus, GpuRequest, RequestStatus, ReviewCycle
from core.errors import StateConflict
from tests.committee.filing import deferred_request
from tests.factories import file_request

# 2026-W51's intake closes on Friday 11 December 2026 at 18:00 (UTC, the committee's zone in the tests).
W51_INTAKE_CLOSES = datetime.fromisoformat("2026-12-11T18:00:00+00:00")


def _carry(client, gpu_request):
    return client.post(reverse("committee:request-carry", args=[gpu_request.pk]), follow=True)


def test_the_team_carries_a_deferred_request_into_the_open_week_as_a_linked_draft(client, world):
    original = deferred_request(
        world, title="Ranker retrain", baseline_gpu_hours=1200, deadline=world.cycle.starts_at + timedelta(hours=100),
        alternatives=[{"description": "Distilled student", "gpu_hours": 300, "feasible": True}],
    )
    client.force_login(world.member_a)
    portal = client.get(reverse("committee:portal")).content.decode()
    assert "Carry into week 2026-W51" in portal
    page = _carry(client, original)
    draft = GpuRequest.objects.get(cycle=world.cycle)
    assert page.redirect_chain[-1][0] == reverse("committee:request-detail", args=[draft.pk])
    assert draft.status == RequestStatus.DRAFT and draft.carried_from == original
    assert (draft.title, draft.gpu_count, draft.min_gpu_count, draft.duration_hours, draft.baseline_gpu_hours) == (
        "Ranker retrain", 16, 8, 48, 1200)
    # Same weekday and time, one week on.
    assert draft.earliest_start == original.earliest_start + timedelta(days=7)
    assert draft.latest_end == original.latest_end + timedelta(days=7)
    assert original.deadline is not None and draft.deadline == original.deadline + timedelta(days=7)
    assert draft.impact_forecast.narrative == original.impact_forecast.narrative
    assert [a.description for a in draft.alternatives.all()] == ["Distilled student"]
    body = page.content.decode()
    assert "Carried into week 2026-W51 as a draft" in body
    assert "Carried from week 2026-W50" in body and reverse("committee:request-detail", args=[original.pk]) in body
    back = client.get(reverse("committee:request-detail", args=[original.pk])).content.decode()
    assert "Carried into week 2026-W51" in back and reverse("committee:request-detail", args=[draft.pk]) in back
    assert "Carry into week 2026-W51</button>" not in back  # offered once
    # The team reviews it and submits it.
    client.post(reverse("committee:request-submit", args=[draft.pk]))
    draft.refresh_from_db()
    assert draft.status == RequestStatus.SUBMITTED


def test_a_request_is_carried_once_into_a_week(client, world):
    original = deferred_request(world)
    services.request_carry(actor=world.member_a, gpu_request=original, cycle=world.cycle)
    with pytest.raises(StateConflict, match="already carried into week 2026-W51"):
        services.request_carry(actor=world.lead_a, gpu_request=original, cycle=world.cycle)
    client.force_login(world.lead_a)
    body = _carry(client, original).content.decode()
    assert "already carried into week 2026-W51" in body
    assert GpuRequest.objects.filter(carried_from=original).count() == 1


def test_a_finalized_week_s_deferral_can_be_carried_too(world):
    original = deferred_request(world, status=CycleStatus.FINALIZED)
    draft = services.request_carry(actor=world.member_a, gpu_request=original, cycle=world.cycle)
    assert draft.carried_from == original


def test_carrying_just_before_the_friday_close_works_and_just_after_is_refused(clock, world):
    original = deferred_request(world)
    assert world.cycle.intake_closes_at == W51_INTAKE_CLOSES
    clock.move_to(W51_INTAKE_CLOSES + timedelta(seconds=1), tick=False)
    with pytest.raises(StateConflict, match="Intake for 2026-W51 is closed"):
        services.request_carry(actor=world.member_a, gpu_request=original, cycle=world.cycle)
    assert not GpuRequest.objects.filter(carried_from=original).exists()
    clock.move_to(W51_INTAKE_CLOSES - timedelta(seconds=1), tick=False)
    draft = services.request_carry(actor=world.member_a, gpu_request=original, cycle=world.cycle)
    assert draft.cycle == world.cycle


def test_after_the_close_the_portal_offers_nothing_and_a_post_is_refused(clock, client, world):
    original = deferred_request(world)
    clock.move_to(W51_INTAKE_CLOSES, tick=False)
    client.force_login(world.member_a)
    assert "Carry into week" not in client.get(reverse("committee:portal")).content.decode()
    assert "Carry into week" not in client.get(reverse("committee:request-detail", args=[original.pk])).content.decode()
    body = _carry(client, original).content.decode()
    assert "No cycle is open for intake right now." in body  # the week whose intake has closed is not offered
    assert not GpuRequest.objects.filter(carried_from=original).exists()


def test_only_a_deferred_request_of_a_closed_week_is_carried(world):
    granted_week = file_request(world)
    with pytest.raises(StateConflict, match="Only a request the committee deferred"):
        services.request_carry(actor=world.lead_a, gpu_request=granted_week, cycle=world.cycle)
    assert GpuRequest.objects.count() == 1


def test_another_team_cannot_carry_it(client, world):
    original = deferred_request(world)
    with pytest.raises(PermissionDenied):
        services.request_carry(actor=world.member_b, gpu_request=original, cycle=world.cycle)
    client.force_login(world.member_b)
    assert client.post(reverse("committee:request-carry", args=[original.pk])).status_code == 404
    assert not GpuRequest.objects.filter(carried_from=original).exists()


def test_carrying_onto_a_pool_the_team_already_filed_on_is_refused_clearly(client, world):
    original = deferred_request(world)
    file_request(world, title="Our W51 request")  # world.cycle is 2026-W51 now
    client.force_login(world.member_a)
    portal = client.get(reverse("committee:portal")).content.decode()
    assert "Carry into week" not in portal
    assert "Deferred; week 2026-W51 already has your request on this pool:" in portal and "Our W51 request" in portal
    with pytest.raises(StateConflict, match="already has an active request for this pool"):
        services.request_carry(actor=world.lead_a, gpu_request=original, cycle=world.cycle)
    assert not GpuRequest.objects.filter(carried_from=original).exists()


def test_only_into_the_next_week_s_intake(client, world):
    original = deferred_request(world)  # deferred in 2026-W50
    ReviewCycle.objects.filter(pk=world.cycle.pk).update(status=CycleStatus.PUBLISHED)  # 2026-W51 went by
    w52 = services.cycle_create(week="2026-W52")
    with pytest.raises(StateConflict, match="carried into the next week's intake only"):
        services.request_carry(actor=world.member_a, gpu_request=original, cycle=w52)
    client.force_login(world.member_a)
    assert "Carry into week" not in client.get(reverse("committee:portal")).content.decode()
    assert not GpuRequest.objects.filter(carried_from=original).exists()


def test_the_history_says_where_a_carried_request_came_from_in_the_reader_s_language(client, world):
    original = deferred_request(world)
    draft = services.request_carry(actor=world.member_a, gpu_request=original, cycle=world.cycle)
    client.force_login(world.member_a)
    url = reverse("committee:request-detail", args=[draft.pk])
    assert "(carried from week 2026-W50)" in client.get(url, HTTP_ACCEPT_LANGUAGE="en").content.decode()
    chinese = client.get(url, HTTP_ACCEPT_LANGUAGE="zh-hans").content.decode()
    assert "（转自 2026-W50 周）" in chinese or "(转自 2026-W50 周)" in chinese
    assert "carried from week" not in chinese
