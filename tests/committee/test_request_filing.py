"""Filing a request in two minutes: the week's bounds pre-filled, "you already have one" before the form."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from committee import services
from committee.models import GpuRequest, RequestStatus
from tests.committee.filing import form_data
from tests.factories import forecast_fields, request_fields, usage_fields


def test_the_form_starts_from_the_week_s_bounds_in_24_hour_committee_time(client, world):
    client.force_login(world.lead_a)
    body = client.get(reverse("committee:request-create")).content.decode()
    assert 'name="earliest_start" value="2026-12-07 00:00"' in body
    assert 'name="latest_end" value="2026-12-14 00:00"' in body
    assert "Earliest start (UTC, 24-hour)" in body and "Latest end (UTC, 24-hour)" in body
    assert "Deadline (UTC, 24-hour)" in body
    assert "Week 2026-W50 starts Mon 7 Dec 2026, 00:00 UTC." in body
    assert 'type="datetime-local"' not in body  # a 12-hour clock in an English browser


def test_the_pre_filled_week_is_accepted_as_it_stands(client, world):
    client.force_login(world.lead_a)
    data = form_data(world, earliest_start="2026-12-07 00:00", latest_end="2026-12-14 00:00")
    assert client.post(reverse("committee:request-create"), data).status_code == 302
    stored = GpuRequest.objects.get()
    assert (stored.earliest_start, stored.latest_end) == (world.cycle.starts_at, world.cycle.ends_at)


def test_the_new_request_page_says_at_once_which_pools_already_have_a_request(client, world):
    client.force_login(world.lead_a)
    assert "You already have a request on these pools" not in client.get(
        reverse("committee:request-create")).content.decode()
    existing = services.request_create(
        actor=world.member_a, team=world.team_a, cycle=world.cycle, fields=request_fields(world, title="Ours"),
        usage=usage_fields(), forecast=forecast_fields(),
    )
    body = client.get(reverse("committee:request-create")).content.decode()
    notice = body[body.index('id="existing-requests"'):body.index('<form method="post" novalidate')]
    assert "atlas/a100" in notice and "“Ours”" in notice
    assert reverse("committee:request-edit", args=[existing.pk]) in notice
    assert "orion/h100" not in notice  # the other pool is free
    # Team B's requests are not team A's business.
    client.force_login(world.member_b)
    assert "You already have a request" not in client.get(reverse("committee:request-create")).content.decode()


def test_a_withdrawn_request_does_not_block_the_pool(client, world):
    existing = services.request_create(
        actor=world.member_a, team=world.team_a, cycle=world.cycle, fields=request_fields(world),
        usage=usage_fields(), forecast=forecast_fields(),
    )
    services.request_withdraw(actor=world.member_a, gpu_request=existing)
    client.force_login(world.lead_a)
    assert "You already have a request" not in client.get(reverse("committee:request-create")).content.decode()
    assert client.post(reverse("committee:request-create"), form_data(world)).status_code == 302
    assert GpuRequest.objects.exclude(status=RequestStatus.WITHDRAWN).count() == 1


def test_the_server_still_refuses_a_duplicate_with_a_clear_error_at_the_pool(client, world):
    services.request_create(
        actor=world.member_a, team=world.team_a, cycle=world.cycle, fields=request_fields(world, title="Ours"),
        usage=usage_fields(), forecast=forecast_fields(),
    )
    client.force_login(world.lead_a)
    response = client.post(reverse("committee:request-create"), form_data(world, title="Second"))
    assert response.status_code == 400
    assert [str(e) for e in response.context["forms"]["request"].errors["pool"]] == [
        "Your team already has an active request for this pool in this cycle: “Ours”. Edit that one instead."]
    with pytest.raises(ValidationError) as refused:
        services.request_create(
            actor=world.lead_a, team=world.team_a, cycle=world.cycle, fields=request_fields(world, title="Third"),
            usage=usage_fields(), forecast=forecast_fields(),
        )
    assert "pool" in refused.value.message_dict
    assert list(GpuRequest.objects.values_list("title", flat=True)) == ["Ours"]


def test_another_pool_is_filed_beside_it(client, world):
    services.request_create(
        actor=world.member_a, team=world.team_a, cycle=world.cycle, fields=request_fields(world),
        usage=usage_fields(), forecast=forecast_fields(),
    )
    client.force_login(world.lead_a)
    response = client.post(reverse("committee:request-create"), form_data(world, pool=world.h100.pk, title="H100"))
    assert response.status_code == 302
    assert GpuRequest.objects.count() == 2


def test_editing_a_request_does_not_count_it_as_its_own_duplicate(client, world):
    existing = services.request_create(
        actor=world.member_a, team=world.team_a, cycle=world.cycle, fields=request_fields(world),
        usage=usage_fields(), forecast=forecast_fields(),
    )
    client.force_login(world.lead_a)
    response = client.post(reverse("committee:request-edit", args=[existing.pk]), form_data(world, title="Renamed"))
    assert response.status_code == 302
    existing.refresh_from_db()
    assert existing.title == "Renamed"
