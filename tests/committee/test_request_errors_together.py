"""Every rule checked at once, every error shown together: the request form, the API, the rubric and decision forms.

A person who makes five mistakes hears of all five in the first answer, not one round at a time, and
nothing is stored.
"""

from __future__ import annotations

from datetime import timedelta

from django.urls import reverse

from committee.models import GpuRequest
from governed.models import PolicyChange
from tests.committee.filing import form_data, local
from tests.committee.review_api import API, as_user, request_body
from tests.committee.reviewing import two_requests_in_review
from tests.factories import file_request

WEEK_BEFORE = "The window must lie within week 2026-W50: start at Mon 7 Dec 2026, 00:00 UTC or later."
WEEK_AFTER = "The window must lie within week 2026-W50: end by Mon 14 Dec 2026, 00:00 UTC."


def _errors(response) -> dict[str, list[str]]:
    forms = response.context["forms"]
    found = {name: [str(e) for e in errors] for name, errors in forms["request"].errors.items()}
    found.update({f"usage.{n}": [str(e) for e in v] for n, v in forms["usage"].errors.items()})
    for index, alt in enumerate(forms["alternatives"].forms):
        found.update({f"alternatives.{index}.{n}": [str(e) for e in v] for n, v in alt.errors.items()})
    return found


def test_the_form_lists_every_broken_rule_in_one_answer(client, world):
    client.force_login(world.lead_a)
    start = world.cycle.starts_at
    data = form_data(
        world,
        alternatives=({"description": "Bigger model", "gpu_hours": "5000"},),
        title="",  # a field error …
        earliest_start=local(start - timedelta(hours=2)),  # … and, at the same time, every rule
        latest_end=local(world.cycle.ends_at + timedelta(hours=1)),
        deadline=local(start - timedelta(hours=3)),  # before the window opens
        baseline_gpu_hours="500",
        min_gpu_count="32",
        **{"usage-mean_utilization_pct": "150"},
    )
    response = client.post(reverse("committee:request-create"), data)
    assert response.status_code == 400
    errors = _errors(response)
    assert errors["title"] == ["This field is required."]
    assert errors["earliest_start"] == [WEEK_BEFORE]
    assert errors["latest_end"] == [WEEK_AFTER]
    assert errors["deadline"] == [
        "The deadline is before the window opens: the work can start Sun 6 Dec 2026, 22:00 UTC at the earliest."]
    assert "smaller than this request (768 GPU-hours)" in errors["baseline_gpu_hours"][0]
    assert "needs 5,000 GPU-hours, more than the 768 requested" in errors["alternatives.0.gpu_hours"][0]
    assert errors["min_gpu_count"] == ["The minimum cannot be more than the GPUs requested."]
    assert "less than or equal to 100" in errors["usage.mean_utilization_pct"][0]
    body = response.content.decode()
    assert "The request was not saved: 8 things to correct." in body
    for message in (WEEK_BEFORE, WEEK_AFTER, "This field is required.", "more than the 768 requested"):
        assert message in body
    assert not GpuRequest.objects.exists()


def test_a_rule_of_good_fields_shows_beside_a_bad_number(client, world):
    """Django skips a form's cross-field checks when a field fails; the rules are still checked on the rest."""
    client.force_login(world.lead_a)
    data = form_data(world, gpu_count="sixteen", earliest_start=local(world.cycle.starts_at - timedelta(days=1)))
    response = client.post(reverse("committee:request-create"), data)
    errors = _errors(response)
    assert set(errors) == {"gpu_count", "earliest_start"}
    assert errors["earliest_start"] == [WEEK_BEFORE]
    assert not GpuRequest.objects.exists()


def test_the_week_s_own_bounds_are_accepted(client, world):
    client.force_login(world.lead_a)
    data = form_data(world, earliest_start=local(world.cycle.starts_at), latest_end=local(world.cycle.ends_at))
    response = client.post(reverse("committee:request-create"), data)
    assert response.status_code == 302
    stored = GpuRequest.objects.get()
    assert (stored.earliest_start, stored.latest_end) == (world.cycle.starts_at, world.cycle.ends_at)


def test_a_minute_outside_the_week_is_refused(client, world):
    client.force_login(world.lead_a)
    data = form_data(world, earliest_start=local(world.cycle.starts_at - timedelta(minutes=1)))
    assert _errors(client.post(reverse("committee:request-create"), data)) == {"earliest_start": [WEEK_BEFORE]}
    assert not GpuRequest.objects.exists()


def test_editing_checks_every_rule_at_once_too(client, world):
    gpu_request = file_request(world, submit=False)
    client.force_login(world.lead_a)
    data = form_data(world, title="", baseline_gpu_hours="10",
                     latest_end=local(world.cycle.ends_at + timedelta(days=1)))
    response = client.post(reverse("committee:request-edit", args=[gpu_request.pk]), data)
    assert response.status_code == 400
    assert set(_errors(response)) == {"title", "baseline_gpu_hours", "latest_end"}
    gpu_request.refresh_from_db()
    assert gpu_request.title == "Ranker retrain" and gpu_request.baseline_gpu_hours is None


def test_the_api_answers_every_error_in_one_400(api, world):
    file_request(world, title="This week's a100 request")
    start = world.cycle.starts_at
    body = request_body(
        world,
        title="",
        gpu_count="many",
        earliest_start=(start - timedelta(hours=3)).isoformat(),
        deadline=(start - timedelta(hours=4)).isoformat(),  # before the window opens, too
        alternatives=[{"description": "Bigger", "gpu_hours": 100_000, "quality_change": "", "cost_estimate": None,
                       "feasible": False}],
    )
    response = as_user(api, world.lead_a).post(f"{API}/teams/team-a/requests/", body, format="json")
    assert response.status_code == 400
    errors = response.json()
    assert set(errors) == {"title", "gpu_count", "earliest_start", "deadline", "pool"}, errors
    assert errors["earliest_start"] == [WEEK_BEFORE]
    assert "already has an active request for this pool in this cycle: “This week's a100 request”" in errors["pool"][0]
    assert GpuRequest.objects.count() == 1


def test_the_api_answers_every_rule_of_a_well_formed_body_in_one_400(api, world):
    start = world.cycle.starts_at
    body = request_body(
        world,
        latest_end=(world.cycle.ends_at + timedelta(hours=5)).isoformat(),
        deadline=(start - timedelta(minutes=1)).isoformat(),  # a minute before the window opens
        baseline_gpu_hours=700,
        alternatives=[
            {"description": "Distilled", "gpu_hours": 300, "quality_change": "", "cost_estimate": None,
             "feasible": True},
            {"description": "Bigger", "gpu_hours": 769, "quality_change": "", "cost_estimate": None,
             "feasible": False},
        ],
        usage_report={"gpu_hours_granted": "800", "gpu_hours_used": "600", "mean_utilization_pct": "75",
                      "notes": ""},
    )
    response = as_user(api, world.lead_a).post(f"{API}/teams/team-a/requests/", body, format="json")
    assert response.status_code == 400
    errors = response.json()
    assert set(errors) == {"latest_end", "deadline", "baseline_gpu_hours", "alternatives.1.gpu_hours"}
    assert errors["latest_end"] == [WEEK_AFTER]
    assert not GpuRequest.objects.exists()


def test_an_outsider_hears_only_the_body_s_own_errors(api, world):
    file_request(world)
    body = request_body(world, title="")
    response = as_user(api, world.member_b).post(f"{API}/teams/team-a/requests/", body, format="json")
    assert response.status_code == 400 and set(response.json()) == {"title"}  # nothing of team A's requests


def test_the_rubric_form_says_the_sum_and_the_missing_reason_together(client, world):
    client.force_login(world.chair)
    data = {"business_impact": "45", "feasibility": "20", "urgency": "20", "fairness": "20", "reason": "",
            **{f"{c}_guidance": "Guide." for c in ("business_impact", "feasibility", "urgency", "fairness")}}
    response = client.post(reverse("committee:rubric-change"), data)
    assert response.status_code == 400
    form = response.context["form"]
    assert [str(e) for e in form.errors["reason"]] == ["This field is required."]
    assert "105" in " ".join(form.non_field_errors()) or "100" in " ".join(form.non_field_errors())
    body = response.content.decode()
    assert "Please also correct the fields marked below." in body
    assert not PolicyChange.objects.filter(number__gt=1).exists()  # nothing changed


def test_the_decision_form_says_the_missing_gpu_count_and_rationale_together(client, world):
    a, _b = two_requests_in_review(world)
    client.force_login(world.chair)
    url = reverse("committee:review-decision", args=[world.cycle.week, a.pk])
    response = client.post(url, {"outcome": "partial", "rationale": ""})
    assert response.status_code == 400
    form = response.context["form"]
    assert [str(e) for e in form.errors["rationale"]] == ["This field is required."]
    assert [str(e) for e in form.errors["granted_gpu_count"]] == [
        "A partial grant gives from 8 to 15 GPUs (the request's minimum to one less than asked)."]
    response = client.post(url, {"outcome": "partial", "granted_gpu_count": "16", "rationale": ""})
    assert set(response.context["form"].errors) == {"rationale", "granted_gpu_count"}
    assert not hasattr(a, "decision") or a.decision is None
