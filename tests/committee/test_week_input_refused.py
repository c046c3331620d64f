"""A week that is no ISO week (a NUL byte, 2026-W99, 2027-W53, 0000-W01) is refused: 404 in a path, 400 in a query."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from tests.allocations.plans import bearer, token_for
from tests.committee.review_api import api_for, browser_for

NOT_WEEKS = ["%00", "2026-W49%00", "2026-W99", "2027-W53", "0000-W01", "2026-W00",
             "%EF%BC%92%EF%BC%90%EF%BC%92%EF%BC%96-W49"]  # full-width 2026
NOT_WEEK_VALUES = ["\x00", "2026-W49\x00", "2026-W99", "2027-W53", "0000-W01", "２０２６-W49"]


@pytest.fixture
def chair_api(pinned, world) -> APIClient:
    return api_for(world.chair)


@pytest.fixture
def chair_browser(pinned, world) -> Client:
    return browser_for(world.chair)


@pytest.mark.parametrize("week", NOT_WEEKS)
@pytest.mark.parametrize(("method", "suffix"), [
    ("get", ""), ("get", "ranking/"), ("get", "what-if/?business_impact=40&feasibility=30&urgency=20&fairness=10"),
    ("post", "close-intake/"), ("post", "finalize/"), ("post", "publish/"),
])
def test_a_cycle_path_with_no_week_is_not_found(chair_api, week, method, suffix):
    path, _sep, query = suffix.partition("?")
    response = getattr(chair_api, method)(f"/api/v1/cycles/{week}/{path}" + (f"?{query}" if query else ""))
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"


@pytest.mark.parametrize("week", NOT_WEEKS)
@pytest.mark.parametrize("suffix", ["", "what-if/"])
def test_a_review_page_with_no_week_is_not_found(chair_browser, week, suffix):
    response = chair_browser.get(f"/review/{week}/{suffix}")
    assert response.status_code == 404


@pytest.mark.parametrize("week", NOT_WEEKS)
def test_posting_to_a_review_action_with_no_week_is_not_found(chair_browser, week):
    assert chair_browser.post(f"/review/{week}/close-intake/").status_code == 404


@pytest.mark.parametrize("week", NOT_WEEK_VALUES)
def test_the_windows_api_refuses_a_week_that_is_no_week(pinned, world, week):
    response = APIClient().get("/api/v1/windows/", {"cluster": "atlas", "week": week}, **bearer(token_for(world.atlas)))
    assert response.status_code == 400
    assert "week" in response.json()


@pytest.mark.parametrize("week", NOT_WEEK_VALUES)
def test_the_request_list_refuses_a_week_that_is_no_week(chair_api, week):
    response = chair_api.get("/api/v1/requests/", {"week": week})
    assert response.status_code == 400
    assert "week" in response.json()


def test_an_existing_week_without_a_cycle_is_still_an_empty_list(chair_api):
    response = chair_api.get("/api/v1/requests/", {"week": "2026-W53"})
    assert response.status_code == 200 and response.json()["count"] == 0


@pytest.mark.parametrize("query", [{"week": "\x00"}, {"week": "2026-W99"},
                                   {"week": "2026-W49", "version": "99999999999"},
                                   {"week": "2026-W49", "version": "９"}])
def test_the_windows_page_answers_404_for_a_week_or_version_that_cannot_exist(chair_browser, query):
    assert chair_browser.get("/windows/", query).status_code == 404


@pytest.mark.parametrize(("first", "last"), [("0001-W01", "0001-W02"), ("9999-W51", "9999-W52")])
def test_the_dashboards_refuse_weeks_at_the_edge_of_the_calendar(chair_browser, first, last):
    response = chair_browser.get("/archive/dashboards/", {"first_week": first, "last_week": last})
    assert response.status_code < 500
    assert response.context["form"].errors
