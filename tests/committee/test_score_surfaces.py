"""One score, three surfaces: the review page, the scores grid and the API refuse the same bad score with the
same status and the same words (committee/services/scores.py), and none of them saves anything."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from committee import services
from committee.models import GpuRequest, Score
from committee.services.discussion import conflict_declare
from tests.committee.review_api import API, api_for, browser_for
from tests.committee.reviewing import two_requests_in_review
from tests.factories import file_request

HTMX = {"HX-Request": "true"}


def _words(text: str) -> str:
    return html.unescape(re.sub(r"\s+", " ", text))


def review_page(member: Any, gpu_request: GpuRequest, criterion: str, value: str) -> tuple[int, str]:
    """The review page's inline score form (htmx): its status, and the error beside the input or else the page's."""
    response = browser_for(member).post(
        reverse("committee:review-score", args=[gpu_request.cycle.week, gpu_request.pk]),
        {"criterion": criterion, "value": value, "note": ""}, headers=HTMX,
    )
    body = response.content.decode()
    if response.status_code == 200:
        # Refused for its input or the week's state, the score is shown beside its input; the page asks for
        # the ranking again only after a save.
        assert "HX-Trigger" not in response
        error = re.search(r'<small class="error" role="alert">(.*?)</small>', body, re.S)
        return 200, _words(error.group(1)) if error else ""
    return response.status_code, _words(body)


def grid_cell(member: Any, gpu_request: GpuRequest, criterion: str, value: str) -> tuple[int, str]:
    """One cell of the scores grid (static/docket/grid.js): its status and its error."""
    response = browser_for(member).post(
        reverse("committee:review-grid-cell", args=[gpu_request.cycle.week]),
        {"request": gpu_request.pk, "criterion": criterion, "value": value},
    )
    return response.status_code, response.json().get("error", "")


def grid_page(member: Any, gpu_request: GpuRequest, criterion: str, value: str) -> tuple[int, str]:
    """The grid as one form, without JavaScript: its status and the page, where the cell's error is shown."""
    client = Client()
    client.force_login(member)
    response = client.post(reverse("committee:review-grid", args=[gpu_request.cycle.week]),
                           {f"cell-{gpu_request.pk}-{criterion}": value})
    return response.status_code, _words(response.content.decode())


def api(member: Any, gpu_request: GpuRequest, criterion: str, value: Any) -> tuple[int, str]:
    """The API's score endpoint: its status and every message of its answer."""
    response = api_for(member).post(f"{API}/requests/{gpu_request.pk}/scores/",
                                    {"criterion": criterion, "value": value, "note": ""}, format="json")
    answer = response.json()
    messages = [answer["detail"]] if "detail" in answer else [m for ms in answer.values() for m in ms]
    return response.status_code, " ".join(messages)


def _in_review(world: Any) -> GpuRequest:
    a, _b = two_requests_in_review(world)
    return a


def _open_for_intake(world: Any) -> GpuRequest:
    return file_request(world)


def _finalized(world: Any) -> GpuRequest:
    a, _b = two_requests_in_review(world)  # nobody scored: finalizing defers both automatically
    services.cycle_finalize(cycle=world.cycle, actor=world.chair)
    return a


def _recused(world: Any) -> GpuRequest:
    a, _b = two_requests_in_review(world)
    conflict_declare(actor=world.finance, gpu_request=a, reason="My partner leads Team A.")
    return a


def _own_team(world: Any) -> GpuRequest:
    _a, b = two_requests_in_review(world)
    return b


CASES = {
    "no committee seat": ("lead_a", _in_review, "urgency", 5, 403, "Only committee members score."),
    "a value out of range": ("finance", _in_review, "urgency", 11, 400, "A score is a whole number from 0 to 10."),
    "a value below range": ("finance", _in_review, "urgency", -1, 400, "A score is a whole number from 0 to 10."),
    "a computed criterion": ("finance", _in_review, "fairness", 5, 400, "“fairness” is not scored by members."),
    "the member's own team": (
        "tech", _own_team, "urgency", 5, 403, "You are a member of Team B: you do not score its requests.",
    ),
    "a conflict of interest": (
        "finance", _recused, "urgency", 5, 403,
        "You declared a conflict of interest on “Ranker retrain”: you are recused and do not score it. "
        "Withdraw the declaration first if it no longer holds.",
    ),
    "a week open for intake": (
        "finance", _open_for_intake, "urgency", 5, 409,
        "Cannot score: week 2026-W50 is open for intake, not in review.",
    ),
    "a finalized week": (
        "finance", _finalized, "urgency", 5, 409, "Cannot score: week 2026-W50 is finalized, not in review.",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_same_bad_score_is_refused_in_the_same_words_everywhere_and_nothing_is_saved(world, case):
    who, setup, criterion, value, status, words = CASES[case]
    gpu_request = setup(world)
    member = getattr(world, who)
    assert api(member, gpu_request, criterion, value) == (status, words)
    assert grid_cell(member, gpu_request, criterion, str(value)) == (status, words)
    # The review page shows a refused input or state beside the input (200, for htmx to swap it in), the words
    # alone when the page has no input for the criterion, and a score the member may not give as the 403 page.
    page_status, page_words = review_page(member, gpu_request, criterion, str(value))
    assert page_status == (status if status == 403 or criterion == "fairness" else 200) and words in page_words
    grid_status, grid_words = grid_page(member, gpu_request, criterion, str(value))
    if criterion == "fairness":
        assert grid_status == 302  # the grid's form has no fairness cell: nothing to save, nothing saved
    elif case == "no committee seat":
        assert grid_status == 403 and words in grid_words  # the 403 page
    else:
        assert grid_status == 400 and words in grid_words
    assert not Score.objects.filter(member=member).exists()


def test_a_request_of_another_week_is_not_found_and_nothing_is_saved(world):
    a, _b = two_requests_in_review(world)
    other = services.cycle_create(week="2030-W01")
    words = "This request is not in review in week 2030-W01."
    response = browser_for(world.finance).post(reverse("committee:review-grid-cell", args=[other.week]),
                                               {"request": a.pk, "criterion": "urgency", "value": "5"})
    assert response.status_code == 404 and response.json()["error"] == words
    assert grid_page(world.finance, GpuRequest(pk=a.pk, cycle=other), "urgency", "5")[0] == 400
    page = browser_for(world.finance).post(reverse("committee:review-score", args=[other.week, a.pk]),
                                           {"criterion": "urgency", "value": "5"}, headers=HTMX)
    assert page.status_code == 404
    assert not Score.objects.exists()
