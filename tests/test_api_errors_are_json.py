"""Under /api/ every error answers JSON, whichever layer gives it; a service's refusal is 400 by field or 409."""

from __future__ import annotations

import pytest
from django.http import HttpRequest, HttpResponse
from django.test import Client, override_settings
from django.urls import path
from rest_framework.test import APIClient

from config import urls as site_urls
from tests.allocations.plans import bearer, token_for
from tests.committee.review_api import request_body
from tests.committee.reviewing import close, score, two_requests_in_review


def _boom(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("a bug")


# The site's URLs plus one API path whose view is a bug: how a 500 under /api/ looks.
urlpatterns = [path("api/v1/boom/", _boom), *site_urls.urlpatterns]
handler500 = site_urls.handler500
handler404 = site_urls.handler404


@pytest.fixture
def api(pinned, world) -> APIClient:
    return APIClient()


@override_settings(ROOT_URLCONF=__name__)
def test_a_server_error_under_the_api_is_json(db):
    response = Client(raise_request_exception=False).get("/api/v1/boom/")
    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    assert "detail" in response.json()


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=1000)
def test_a_body_over_the_limit_is_413_in_json(api, world):
    body = '{"note": "' + "x" * 2000 + '"}'
    response = api.post("/api/v1/usage/", body, content_type="application/json", **bearer(token_for(world.atlas)))
    assert response.status_code == 413
    assert response["Content-Type"] == "application/json"
    assert "detail" in response.json()


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=1000)
def test_a_body_over_the_limit_on_a_person_endpoint_is_413_in_json(api, world):
    api.force_authenticate(world.chair)
    body = '{"reason": "' + "x" * 2000 + '"}'
    response = api.post("/api/v1/rubric/versions/", body, content_type="application/json")
    assert response.status_code == 413
    assert response["Content-Type"] == "application/json"


@pytest.mark.parametrize(("method", "url", "status"), [
    ("delete", "/api/v1/cycles/", 405),
    ("get", "/api/v1/no-such-endpoint/", 404),
    ("get", "/api/v1/cycles/2026-W49/", 404),
])
def test_a_wrong_method_or_path_under_the_api_is_json(api, world, method, url, status):
    api.force_authenticate(world.chair)
    response = getattr(api, method)(url)
    assert response.status_code == status
    assert response["Content-Type"] == "application/json"
    assert "detail" in response.json()


def test_a_session_post_without_csrf_is_refused_in_json(pinned, world):
    client = Client(enforce_csrf_checks=True)
    client.force_login(world.chair)
    response = client.post(f"/api/v1/cycles/{world.cycle.week}/close-intake/")
    assert response.status_code == 403
    assert response["Content-Type"] == "application/json"


def test_editing_after_intake_closed_is_a_conflict_naming_the_state(api, world):
    a, _b = two_requests_in_review(world)
    api.force_authenticate(world.lead_a)
    response = api.post(f"/api/v1/requests/{a.pk}/withdraw/")
    assert response.status_code == 409
    assert "closed" in response.json()["non_field_errors"][0]


def test_finalizing_with_undecided_requests_is_a_conflict_naming_them(api, world):
    a, _b = two_requests_in_review(world)
    for member in (world.chair, world.reviewer):
        score(member, a, 7, 6, 5)
    api.force_authenticate(world.chair)
    response = api.post(f"/api/v1/cycles/{world.cycle.week}/finalize/")
    assert response.status_code == 409
    assert a.title in response.json()["non_field_errors"][0]


def test_closing_intake_twice_is_a_conflict(api, world):
    close(world)
    api.force_authenticate(world.chair)
    response = api.post(f"/api/v1/cycles/{world.cycle.week}/close-intake/")
    assert response.status_code == 409
    assert set(response.json()) == {"non_field_errors"}


def test_the_schema_says_409_where_a_transition_answers_409(api, world):
    schema = api.get("/api/v1/schema/?format=json").json()
    for operation in ("close-intake", "finalize"):
        described = schema["paths"]["/api/v1/cycles/{week}/" + operation + "/"]["post"]["description"]
        assert "409" in described and "400" not in described


def test_filing_when_no_cycle_is_open_for_intake_is_a_conflict(api, world):
    close(world)
    api.force_authenticate(world.lead_a)
    response = api.post(f"/api/v1/teams/{world.team_a.slug}/requests/", request_body(world), format="json")
    assert response.status_code == 409
    assert response.json() == {"non_field_errors": ["No cycle is open for intake right now."]}
