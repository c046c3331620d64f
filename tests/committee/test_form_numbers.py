"""The pages take numbers only as the API's schema writes them (core.numbers): digits 0-9, a decimal
point where the field has places, a minus sign only where negatives are allowed.

Python's Decimal() and int() also read "1_000", full-width digits, "1E+5" and "-0"; each form
refuses them with a clear error on that field, and nothing is stored.
"""

from __future__ import annotations

import html

import pytest
from django.urls import reverse

from committee.models import Alternative, Decision, GpuRequest, Score
from governed.models import PolicyChange
from tests.committee.reviewing import two_requests_in_review
from tests.committee.test_portal_views import form_data
from tests.committee.test_rubric import NEW

WRITTEN_OTHERWISE = ["1_000", "１２", "1E+5", "-0"]
DECIMAL_ERROR = "Write the number in digits 0-9 with an optional decimal point"
INTEGER_ERROR = "Write a whole number in digits 0-9"


def page_text(response) -> str:
    return html.unescape(response.content.decode())


@pytest.fixture
def team_browser(client, pinned, world):
    client.force_login(world.lead_a)
    return client


@pytest.mark.parametrize("value", WRITTEN_OTHERWISE)
@pytest.mark.parametrize(("form", "field"), [
    ("usage", "gpu_hours_granted"),
    ("usage", "gpu_hours_used"),
    ("usage", "mean_utilization_pct"),
    ("forecast", "estimated_value"),
])
def test_the_request_form_refuses_a_decimal_written_otherwise(team_browser, world, form, field, value):
    response = team_browser.post(reverse("committee:request-create"), form_data(world, **{f"{form}-{field}": value}))
    assert response.status_code == 400
    assert [str(e) for e in response.context["forms"][form].errors[field]] == [
        f"{DECIMAL_ERROR}, e.g. {'1250.5' if form == 'usage' else '1250.55'}."
    ]
    assert DECIMAL_ERROR in page_text(response)
    assert not GpuRequest.objects.exists()


@pytest.mark.parametrize("value", WRITTEN_OTHERWISE)
def test_the_request_form_refuses_an_alternatives_cost_written_otherwise(team_browser, world, value):
    row = {"description": "Distilled", "gpu_hours": "300", "cost_estimate": value, "feasible": "on"}
    response = team_browser.post(reverse("committee:request-create"), form_data(world, [row]))
    assert response.status_code == 400
    alternative = response.context["forms"]["alternatives"].forms[0]
    assert [str(e) for e in alternative.errors["cost_estimate"]] == [f"{DECIMAL_ERROR}, e.g. 1250.55."]
    assert DECIMAL_ERROR in page_text(response)
    assert not GpuRequest.objects.exists() and not Alternative.objects.exists()


@pytest.mark.parametrize("value", [*WRITTEN_OTHERWISE, "16.0"])
@pytest.mark.parametrize("field", ["gpu_count", "duration_hours"])
def test_the_request_form_refuses_a_whole_number_written_otherwise(team_browser, world, field, value):
    response = team_browser.post(reverse("committee:request-create"), form_data(world, **{field: value}))
    assert response.status_code == 400
    assert [str(e) for e in response.context["forms"]["request"].errors[field]] == [f"{INTEGER_ERROR}, e.g. 1250."]
    assert INTEGER_ERROR in page_text(response)
    assert not GpuRequest.objects.exists()


@pytest.mark.parametrize("value", WRITTEN_OTHERWISE)
def test_the_request_form_refuses_alternative_gpu_hours_written_otherwise(team_browser, world, value):
    row = {"description": "Distilled", "gpu_hours": value, "feasible": "on"}
    response = team_browser.post(reverse("committee:request-create"), form_data(world, [row]))
    assert response.status_code == 400
    assert response.context["forms"]["alternatives"].forms[0].errors["gpu_hours"]
    assert not GpuRequest.objects.exists()


def test_a_number_in_digits_out_of_range_is_told_the_range(team_browser, world):
    data = form_data(world, **{"usage-mean_utilization_pct": "150", "usage-gpu_hours_used": "12345678901"})
    response = team_browser.post(reverse("committee:request-create"), data)
    assert response.status_code == 400
    errors = response.context["forms"]["usage"].errors
    assert errors["mean_utilization_pct"] == ["Ensure this value is less than or equal to 100."]
    assert errors["gpu_hours_used"] == ["Ensure that there are no more than 10 digits in total."]
    assert not GpuRequest.objects.exists()


def test_the_request_form_still_takes_numbers_in_digits(team_browser, world):
    row = {"description": "Distilled", "gpu_hours": "300", "cost_estimate": "1250.50", "feasible": "on"}
    data = form_data(world, [row], **{"usage-mean_utilization_pct": "99.5", "forecast-estimated_value": ".5"})
    response = team_browser.post(reverse("committee:request-create"), data)
    assert response.status_code == 302
    gpu_request = GpuRequest.objects.get()
    assert str(gpu_request.usage_report.mean_utilization_pct) == "99.5"
    assert str(gpu_request.impact_forecast.estimated_value) == "0.50"
    assert str(gpu_request.alternatives.get().cost_estimate) == "1250.50"


@pytest.mark.parametrize("value", [*WRITTEN_OTHERWISE, "40.0"])
def test_the_rubric_form_refuses_a_weight_written_otherwise(client, world, value):
    client.force_login(world.chair)
    data = {**NEW, "business_impact": value, "reason": "Quarterly review.", **{f"{c}_guidance": "Guide." for c in NEW}}
    response = client.post(reverse("committee:rubric-change"), data)
    assert response.status_code == 400
    assert [str(e) for e in response.context["form"].errors["business_impact"]] == [f"{INTEGER_ERROR}, e.g. 1250."]
    assert INTEGER_ERROR in page_text(response)
    assert not PolicyChange.objects.filter(number__gt=1).exists()  # nothing changed


@pytest.mark.parametrize("value", ["1_0", "１", "1E+1", "-0"])
def test_the_score_form_refuses_a_score_written_otherwise(client, world, value):
    a, _b = two_requests_in_review(world)
    client.force_login(world.reviewer)
    response = client.post(
        reverse("committee:review-score", args=[world.cycle.week, a.pk]),
        {"criterion": "business_impact", "value": value}, HTTP_HX_REQUEST="true",
    )
    # The grid and the API refuse a score in these words too (committee/services/scores.py).
    assert "A score is a whole number from 0 to 10." in page_text(response)
    assert not Score.objects.exists()


@pytest.mark.parametrize("value", ["1_0", "１０", "1E+1", "-0"])
def test_the_decision_form_refuses_a_gpu_count_written_otherwise(client, world, value):
    a, _b = two_requests_in_review(world)
    client.force_login(world.chair)
    response = client.post(
        reverse("committee:review-decision", args=[world.cycle.week, a.pk]),
        {"outcome": "partial", "granted_gpu_count": value, "rationale": "Half of it."},
    )
    assert response.status_code == 400
    assert [str(e) for e in response.context["form"].errors["granted_gpu_count"]] == [f"{INTEGER_ERROR}, e.g. 1250."]
    assert not Decision.objects.exists()
