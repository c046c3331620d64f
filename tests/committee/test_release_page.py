"""The request page's "Give GPUs back": the team's lead sees the form and uses it; a refusal keeps what was typed."""

from __future__ import annotations

import pytest
from django.urls import reverse

from allocations import selectors as allocation_selectors
from tests.committee.contended import contended_week
from tests.readable import assert_readable


@pytest.fixture
def week(world):
    return contended_week(world)


def test_the_lead_gives_back_on_the_request_page_and_the_page_shows_the_new_plan(client, world, week):
    page = reverse("committee:request-detail", args=[week.placed.pk])
    client.force_login(world.member_a)
    assert 'id="release"' not in client.get(page).content.decode()  # a member, not the lead
    client.force_login(world.lead_a)
    html = client.get(page).content.decode()
    assert 'id="release"' in html and "The window holds 40 GPUs until" in html
    assert_readable(html)

    response = client.post(reverse("committee:request-release", args=[week.placed.pk]),
                           {"gpu_count": "20", "effective_from": "", "reason": "Converged early."}, follow=True)

    html = response.content.decode()
    assert response.status_code == 200 and "published as plan version 2" in html
    assert "The window holds 20 GPUs until" in html and "Converged early." in html  # the history's line
    plan = allocation_selectors.plan_for_week(week=world.cycle.week)
    assert plan is not None and plan.version == 2


def test_a_refused_release_shows_the_error_at_its_field_and_changes_nothing(client, world, week):
    client.force_login(world.lead_a)
    response = client.post(reverse("committee:request-release", args=[week.placed.pk]),
                           {"gpu_count": "41", "effective_from": "", "reason": "Too many."})
    html = response.content.decode()
    assert response.status_code == 400
    assert "From 1 to 40 GPUs" in html and "Too many." in html and "<details open>" in html
    plan = allocation_selectors.plan_for_week(week=world.cycle.week)
    assert plan is not None and plan.version == 1
