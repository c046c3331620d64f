"""DOCKET_DECISIONS_RECORDED_BY: the chair records the committee's decisions (default), or any member."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied
from django.urls import reverse

from committee import services
from committee.models import Decision
from tests.committee.review_api import API, as_user
from tests.committee.reviewing import score, two_requests_in_review
from tests.test_settings_env import _start


@pytest.fixture
def ranked(world):
    a, b = two_requests_in_review(world)
    for member in (world.chair, world.reviewer):
        score(member, a, 7, 6, 5)
    return a, b


def test_by_default_only_the_chair_records_a_decision(world, ranked, settings):
    assert settings.DOCKET_DECISIONS_RECORDED_BY == "chair"
    a, _b = ranked
    with pytest.raises(PermissionDenied, match="Only the chair records the committee's decisions"):
        services.request_decide(actor=world.reviewer, gpu_request=a, outcome="grant", rationale="Worth it.")
    assert not Decision.objects.exists()
    decision = services.request_decide(actor=world.chair, gpu_request=a, outcome="grant", rationale="Worth it.")
    assert decision.decided_by_name == "Chair"


def test_with_committee_any_member_outside_the_team_records_it(world, ranked, settings):
    settings.DOCKET_DECISIONS_RECORDED_BY = "committee"
    a, b = ranked
    decision = services.request_decide(actor=world.reviewer, gpu_request=a, outcome="defer", rationale="Later.")
    assert decision.decided_by_name == "Reviewer"
    with pytest.raises(PermissionDenied, match="member of Team B"):  # own team is still excluded
        services.request_decide(actor=world.tech, gpu_request=b, outcome="defer", rationale="Later.")


def test_the_review_page_hides_the_form_from_members_and_refuses_their_post_with_the_reason(world, ranked, client):
    a, _b = ranked
    review = reverse("committee:review-cycle", args=[world.cycle.week])
    target = reverse("committee:review-decision", args=[world.cycle.week, a.pk])
    client.force_login(world.reviewer)
    page = client.get(review).content.decode()
    assert f'id="decision-{a.pk}"' not in page and "tell the chair yours, or ask the team" in page
    refused = client.post(target, {"outcome": "grant", "rationale": "Mine."})
    assert refused.status_code == 403
    assert "Only the chair records the committee" in refused.content.decode()
    assert not Decision.objects.exists()
    client.force_login(world.chair)
    assert f'id="decision-{a.pk}"' in client.get(review).content.decode()
    assert client.post(target, {"outcome": "grant", "rationale": "Worth it."}).status_code == 302
    assert Decision.objects.get().decided_by_name == "Chair"


def test_the_page_shows_members_the_form_when_the_setting_is_committee(world, ranked, client, settings):
    settings.DOCKET_DECISIONS_RECORDED_BY = "committee"
    a, _b = ranked
    client.force_login(world.reviewer)
    page = client.get(reverse("committee:review-cycle", args=[world.cycle.week])).content.decode()
    assert f'id="decision-{a.pk}"' in page


def test_the_api_refuses_a_member_with_403_and_the_reason(world, ranked, api):
    a, _b = ranked
    response = as_user(api, world.reviewer).put(f"{API}/requests/{a.pk}/decision/",
                                                {"outcome": "grant", "rationale": "Mine."})
    assert response.status_code == 403 and "Only the chair records" in response.json()["detail"]
    assert not Decision.objects.exists()
    assert as_user(api, world.chair).put(f"{API}/requests/{a.pk}/decision/",
                                         {"outcome": "grant", "rationale": "Worth it."}).status_code == 200


def test_a_malformed_setting_refuses_to_start():
    result = _start({"DEBUG": "1", "DOCKET_DECISIONS_RECORDED_BY": "members"})
    assert result.returncode != 0
    assert "DOCKET_DECISIONS_RECORDED_BY must be one of chair, committee; got 'members'" in result.stderr
