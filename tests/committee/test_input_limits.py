"""A team sends at most 20 alternatives and bounded free text: the form shows the limits, the API's schema
documents them, and more is refused with 400 naming the field, nothing saved."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from committee import limits
from committee.models import GpuRequest
from tests.committee.review_api import api_for, browser_for, request_body
from tests.committee.reviewing import two_requests_in_review
from tests.committee.test_portal_views import form_data

ALTERNATIVE = {"description": "Distilled", "gpu_hours": 300, "quality_change": "", "cost_estimate": None,
               "feasible": True}


@pytest.fixture
def team_api(pinned, world) -> APIClient:
    return api_for(world.lead_a)


@pytest.fixture
def team_browser(pinned, world) -> Client:
    return browser_for(world.lead_a)


def file_over_api(api, world, **overrides):
    return api.post(f"/api/v1/teams/{world.team_a.slug}/requests/", request_body(world, **overrides), format="json")


def test_the_api_takes_twenty_alternatives(team_api, world):
    response = file_over_api(team_api, world, alternatives=[ALTERNATIVE] * limits.MAX_ALTERNATIVES)
    assert response.status_code == 201, response.json()
    assert len(response.json()["alternatives"]) == limits.MAX_ALTERNATIVES


@pytest.mark.parametrize("count", [limits.MAX_ALTERNATIVES + 1, 10_000])
def test_the_api_refuses_more_alternatives(team_api, world, count):
    response = file_over_api(team_api, world, alternatives=[ALTERNATIVE] * count)
    assert response.status_code == 400
    assert list(response.json()) == ["alternatives"]
    assert not GpuRequest.objects.exists()


@pytest.mark.parametrize(("part", "field", "limit"), [
    ("impact_forecast", "narrative", limits.NARRATIVE_MAX_LENGTH),
    ("usage_report", "notes", limits.USAGE_NOTES_MAX_LENGTH),
    (None, "slip_consequence", limits.SLIP_CONSEQUENCE_MAX_LENGTH),
])
def test_the_api_refuses_free_text_past_its_limit(team_api, world, part, field, limit):
    body = request_body(world)
    target = body[part] if part else body
    target[field] = "x" * limit
    assert file_over_api(team_api, world, **body).status_code == 201
    GpuRequest.objects.all().delete()
    target[field] = "x" * (limit + 1)
    response = file_over_api(team_api, world, **body)
    assert response.status_code == 400
    errors = response.json()[part] if part else response.json()
    assert list(errors) == [field]


def test_the_form_refuses_more_than_twenty_alternatives(team_browser, world):
    rows = [{"description": "Distilled", "gpu_hours": "300", "feasible": "on"}] * (limits.MAX_ALTERNATIVES + 1)
    response = team_browser.post(reverse("committee:request-create"), form_data(world, rows))
    assert response.status_code == 400
    assert response.context["forms"]["alternatives"].non_form_errors()
    assert not GpuRequest.objects.exists()


def test_a_form_that_claims_ten_thousand_alternatives_is_refused(team_browser, world):
    data = form_data(world, **{"alt-TOTAL_FORMS": "10000"})
    response = team_browser.post(reverse("committee:request-create"), data)
    assert response.status_code == 400
    assert response.context["forms"]["alternatives"].non_form_errors()


def test_the_form_refuses_a_narrative_past_its_limit(team_browser, world):
    data = form_data(world, **{"forecast-narrative": "x" * (limits.NARRATIVE_MAX_LENGTH + 1)})
    response = team_browser.post(reverse("committee:request-create"), data)
    assert response.status_code == 400
    assert "narrative" in response.context["forms"]["forecast"].errors
    assert not GpuRequest.objects.exists()


def test_the_form_shows_each_limit(team_browser, world):
    page = team_browser.get(reverse("committee:request-create")).content.decode()
    for name, limit in (("forecast-narrative", limits.NARRATIVE_MAX_LENGTH),
                        ("usage-notes", limits.USAGE_NOTES_MAX_LENGTH),
                        ("slip_consequence", limits.SLIP_CONSEQUENCE_MAX_LENGTH)):
        tag = re.search(rf'<textarea[^>]*name="{name}"[^>]*>', page)
        assert tag is not None, name
        assert f'maxlength="{limit}"' in tag.group(0), tag.group(0)


def test_review_text_past_its_limit_is_refused(pinned, world):
    a, _b = two_requests_in_review(world)
    api = APIClient()
    api.force_authenticate(world.reviewer)
    note = "x" * (limits.SCORE_NOTE_MAX_LENGTH + 1)
    response = api.post(f"/api/v1/requests/{a.pk}/scores/", {"criterion": "urgency", "value": 5, "note": note},
                        format="json")
    assert response.status_code == 400 and list(response.json()) == ["note"]
    rationale = "x" * (limits.RATIONALE_MAX_LENGTH + 1)
    response = api.put(f"/api/v1/requests/{a.pk}/decision/", {"outcome": "defer", "rationale": rationale},
                       format="json")
    assert response.status_code == 400 and list(response.json()) == ["rationale"]


def test_the_schema_documents_every_limit(pinned, world):
    api = APIClient()
    api.force_authenticate(world.chair)
    schemas = api.get("/api/v1/schema/?format=json").json()["components"]["schemas"]
    assert schemas["ImpactForecastInputRequest"]["properties"]["narrative"]["maxLength"] == limits.NARRATIVE_MAX_LENGTH
    assert schemas["UsageReportInputRequest"]["properties"]["notes"]["maxLength"] == limits.USAGE_NOTES_MAX_LENGTH
    request = schemas["RequestInputRequest"]["properties"]
    assert request["slip_consequence"]["maxLength"] == limits.SLIP_CONSEQUENCE_MAX_LENGTH
    assert request["alternatives"]["maxItems"] == limits.MAX_ALTERNATIVES
    assert schemas["ScoreInputRequest"]["properties"]["note"]["maxLength"] == limits.SCORE_NOTE_MAX_LENGTH
    assert schemas["DecisionInputRequest"]["properties"]["rationale"]["maxLength"] == limits.RATIONALE_MAX_LENGTH
    assert schemas["RubricChangeInputRequest"]["properties"]["reason"]["maxLength"] == limits.REASON_MAX_LENGTH
