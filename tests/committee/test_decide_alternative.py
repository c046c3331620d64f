"""Grant the cheaper alternative: the decision names one of the request's alternatives; it places its GPU-hours."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from rest_framework.test import APIClient

from allocations import selectors as allocation_selectors
from committee import services
from committee.models import Decision, Notification
from committee.services.notifications import notification_text
from reports.models import Page
from tests.committee.reviewing import close, decide, score
from tests.factories import file_request

DISTILLED = {"description": "Distilled ranker", "gpu_hours": 500, "quality_change": "-1% NDCG", "feasible": True}
INFEASIBLE = {"description": "Smaller batch", "gpu_hours": 400, "feasible": False}


@pytest.fixture
def in_review(world):
    """Team A asks 16 GPUs × 48 h (768 GPU-hours) with a feasible 500 GPU-hour alternative; team B asks too."""
    a = file_request(world, title="Ranker retrain", alternatives=[DISTILLED, INFEASIBLE])
    b = file_request(world, team=world.team_b, title="Vision model", gpu_count=8, min_gpu_count=4,
                     alternatives=[{"description": "B's own variant", "gpu_hours": 100, "feasible": True}])
    close(world)
    for member in (world.chair, world.reviewer, world.finance):
        score(member, a, 8, 6, 5)
        score(member, b, 5, 5, 5)
    return a, b


def _alt(gpu_request, description):
    return gpu_request.alternatives.get(description=description)


def test_granting_the_alternative_gives_its_gpu_hours_over_the_requests_duration(world, in_review):
    a, _b = in_review
    decision = decide(world, a, "alternative", alternative=_alt(a, "Distilled ranker").pk)
    # ceil(500 / 48) = 11 GPUs for the request's 48 hours: 528 GPU-hours, the fewest that hold 500.
    assert (decision.outcome, decision.granted_gpu_count, decision.requested_gpu_count) == ("alternative", 11, 16)
    assert (decision.alternative_description, decision.alternative_gpu_hours) == ("Distilled ranker", 500)
    assert decision.get_outcome_display() == "Grant the alternative"


def test_an_alternative_of_another_request_is_refused_and_nothing_changes(world, in_review):
    a, b = in_review
    decide(world, a, "grant")
    with pytest.raises(ValidationError) as excinfo:
        decide(world, a, "alternative", alternative=_alt(b, "B's own variant").pk)
    assert excinfo.value.message_dict["alternative"] == ["That is not one of this request's alternatives."]
    assert Decision.objects.get().outcome == "grant"


@pytest.mark.parametrize(
    ("alternative", "message"),
    [
        (None, "Choose which of the request's alternatives is granted."),
        (999_999, "That is not one of this request's alternatives."),
        ("Smaller batch", "The team marked “Smaller batch” as not feasible for it."),
    ],
)
def test_bad_alternatives_are_refused_naming_the_field(world, in_review, alternative, message):
    a, _b = in_review
    if isinstance(alternative, str):
        alternative = _alt(a, alternative).pk
    with pytest.raises(ValidationError) as excinfo:
        decide(world, a, "alternative", alternative=alternative)
    assert excinfo.value.message_dict == {"alternative": [message]}
    assert not Decision.objects.exists()


def test_an_alternative_no_cheaper_than_the_request_is_refused(world):
    a = file_request(world, alternatives=[{"description": "Same thing", "gpu_hours": 768, "feasible": True}])
    close(world)
    for member in (world.chair, world.reviewer):
        score(member, a, 8, 6, 5)
    with pytest.raises(ValidationError, match="no fewer than the 768 asked"):
        decide(world, a, "alternative", alternative=_alt(a, "Same thing").pk)
    assert not Decision.objects.exists()


def test_an_alternative_named_with_another_outcome_is_refused(world, in_review):
    a, _b = in_review
    with pytest.raises(ValidationError) as excinfo:
        decide(world, a, "grant", alternative=_alt(a, "Distilled ranker").pk)
    assert "alternative" in excinfo.value.message_dict
    assert not Decision.objects.exists()


def test_the_decision_form_offers_the_alternative_and_saves_it(world, in_review, client):
    a, _b = in_review
    client.force_login(world.chair)
    page = client.get(f"/review/{world.cycle.week}/").content.decode()
    assert "Grant the alternative" in page and "Distilled ranker (500 GPU-hours: 11 GPUs × 48 h)" in page
    url = f"/review/{world.cycle.week}/requests/{a.pk}/decision/"
    other = in_review[1].alternatives.get().pk
    refused = client.post(url, {"outcome": "alternative", "alternative": other, "rationale": "Cheaper."})
    assert refused.status_code == 400 and "not one of this request" in refused.content.decode()
    assert not Decision.objects.exists()
    client.post(url, {"outcome": "alternative", "alternative": _alt(a, "Distilled ranker").pk, "rationale": "Cheaper."})
    assert Decision.objects.get().alternative_gpu_hours == 500


def test_the_api_records_a_grant_of_the_alternative(world, in_review):
    a, b = in_review
    api = APIClient()
    api.force_authenticate(world.chair)
    url = f"/api/v1/requests/{a.pk}/decision/"
    listed = api.get(f"/api/v1/requests/{a.pk}/").json()["alternatives"]
    assert [alt["description"] for alt in listed] == ["Distilled ranker", "Smaller batch"] and listed[0]["id"]
    refused = api.put(url, {"outcome": "alternative", "alternative": b.alternatives.get().pk,
                             "rationale": "Cheaper."}, format="json")
    assert refused.status_code == 400 and "alternative" in refused.json()
    assert not Decision.objects.exists()
    answer = api.put(url, {"outcome": "alternative", "alternative": listed[0]["id"], "rationale": "Cheaper."},
                      format="json")
    assert answer.status_code == 200, answer.json()
    body = answer.json()
    assert (body["outcome"], body["granted_gpu_count"], body["alternative_gpu_hours"]) == ("alternative", 11, 500)
    assert body["alternative_description"] == "Distilled ranker"


def test_publish_places_the_alternatives_gpu_hours_and_every_surface_says_so(
    world, in_review, client, django_capture_on_commit_callbacks
):
    a, b = in_review
    decide(world, a, "alternative", alternative=_alt(a, "Distilled ranker").pk)
    decide(world, b, "defer", rationale="Next week.")
    world.cycle = services.cycle_finalize(cycle=world.cycle, actor=world.chair)
    with django_capture_on_commit_callbacks(execute=True):
        plan = services.cycle_publish(actor=world.chair, cycle=world.cycle)
    (window,) = allocation_selectors.plan_window_list(plan=plan)
    assert window.request_ref == a.pk
    assert window.gpu_count == 11 and (window.end - window.start).total_seconds() == 48 * 3600
    assert window.gpu_count * 48 >= 500
    client.force_login(world.lead_a)
    page = client.get(f"/requests/{a.pk}/").content.decode()
    decided = "Granted the alternative: Distilled ranker (500 GPU-hours), 11 GPUs (528 GPU-hours)"
    assert f'<mark class="outcome-alternative">{decided}</mark>' in page
    record = Page.objects.get(source_key=f"cycle:{world.cycle.week}").revisions.order_by("-number").first()
    assert record is not None and "granted the alternative: Distilled ranker (500 GPU-hours)" in record.body
    digest_line = notification_text(Notification.objects.get(recipient=world.lead_a, kind="decision_published"))
    assert digest_line.startswith(f"Team A: “Ranker retrain” — decided: {decided}; placed: 11 A100, ")
    assert digest_line.endswith(f", as decided (week {world.cycle.week}, plan version 1).")
