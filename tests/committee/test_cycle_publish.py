"""cycle_publish: a finalized week's grants, in ranking order, become the week's published windows."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from allocations import selectors as allocation_selectors
from allocations import services as allocation_services
from allocations.explanations import REASON_CODES, explanation_text
from allocations.models import AllocationPlan, AllocationWindow, PlanExplanation, WindowWithdrawal
from committee import services
from committee.models import CycleStatus
from reports.models import Page
from tests.committee.reviewing import close, decide, score
from tests.factories import file_request


@pytest.fixture
def finalized(world):
    """Team A's 16-GPU a100 request ranked first and granted; team B's a100 request partly granted
    (8 of 24); team B's h100 request deferred. The week is finalized."""
    first = file_request(world, title="Ranker retrain", gpu_count=16, min_gpu_count=8)
    second = file_request(world, team=world.team_b, title="Vision model", gpu_count=24, min_gpu_count=8)
    third = file_request(world, team=world.team_b, pool=world.h100, title="Speech", gpu_count=8, min_gpu_count=4)
    close(world)
    for member in (world.chair, world.reviewer, world.finance):
        score(member, first, 9, 8, 9)
        score(member, second, 6, 6, 5)
        score(member, third, 3, 3, 3)
    decide(world, first)
    decide(world, second, outcome="partial", granted_gpu_count=8)
    decide(world, third, outcome="defer", rationale="Next week.")
    world.cycle = services.cycle_finalize(cycle=world.cycle, actor=world.chair)
    return first, second, third


def test_chair_publishes_the_grants_as_version_one(world, finalized, django_capture_on_commit_callbacks):
    first, second, _third = finalized
    with django_capture_on_commit_callbacks(execute=True):
        plan = services.cycle_publish(actor=world.chair, cycle=world.cycle)
    world.cycle.refresh_from_db()
    assert world.cycle.status == CycleStatus.PUBLISHED
    assert (plan.week, plan.version, plan.source_ref) == (world.cycle.week, 1, f"review-cycle:{world.cycle.pk}")
    windows = {w.request_ref: w for w in allocation_selectors.plan_window_list(plan=plan)}
    assert set(windows) == {first.pk, second.pk}  # the deferral asks for nothing
    assert windows[first.pk].gpu_count == 16 and windows[first.pk].tier == "priority"
    assert windows[second.pk].gpu_count == 8 and windows[second.pk].tier == "standard"
    for request, window in ((first, windows[first.pk]), (second, windows[second.pk])):
        assert request.earliest_start <= window.start < window.end <= request.latest_end
        assert (window.end - window.start).total_seconds() == request.duration_hours * 3600
    assert [e.request_ref for e in plan.explanations.all()] == [first.pk, second.pk]
    assert first.events.filter(action="published").exists()
    record = Page.objects.select_related("latest_revision").get(source_key=f"cycle:{world.cycle.week}")
    assert record.latest_revision is not None
    assert record.latest_revision.summary == "Updated: plan version 1 published"


def test_only_the_chair_publishes_and_only_a_finalized_week(world, finalized):
    with pytest.raises(PermissionDenied):
        services.cycle_publish(actor=world.reviewer, cycle=world.cycle)
    open_cycle = services.cycle_create(week="2031-W02")
    with pytest.raises(ValidationError, match="finalize it first"):
        services.cycle_publish(actor=world.chair, cycle=open_cycle)
    assert not AllocationPlan.objects.exists()


def test_a_correction_needs_a_reason_and_supersedes_the_published_version(world, finalized):
    first_plan = services.cycle_publish(actor=world.chair, cycle=world.cycle)
    ids = set(AllocationWindow.objects.values_list("pk", flat=True))
    with pytest.raises(ValidationError, match="why"):
        services.cycle_publish(actor=world.chair, cycle=world.cycle)
    world.a100.gpu_count = 32  # half the pool went down for maintenance
    world.a100.save()
    second_plan = services.cycle_publish(actor=world.chair, cycle=world.cycle, reason="Half of atlas/a100 is down.")
    assert (second_plan.version, second_plan.supersedes, second_plan.note) == (2, first_plan,
                                                                               "Half of atlas/a100 is down.")
    live = list(allocation_selectors.plan_window_list(plan=second_plan))
    standard_capacity = 32 - 32 * 20 // 100 - 32 * 10 // 100
    assert sum(w.gpu_count for w in live if w.start < live[0].end and live[0].start < w.end) <= standard_capacity
    withdrawn = set(WindowWithdrawal.objects.values_list("window_id", flat=True))
    assert withdrawn <= ids and withdrawn  # the 16+8 GPUs no longer fit side by side on 22 GPUs


def test_republishing_the_same_decisions_keeps_every_window(world, finalized):
    services.cycle_publish(actor=world.chair, cycle=world.cycle)
    services.cycle_publish(actor=world.chair, cycle=world.cycle, reason="Re-run after a scheduler restart.")
    assert not WindowWithdrawal.objects.exists() and AllocationWindow.objects.count() == 2


def test_review_page_button_publishes(world, finalized, client):
    client.force_login(world.reviewer)
    assert client.post(f"/review/{world.cycle.week}/publish/").status_code == 403
    client.force_login(world.chair)
    response = client.post(f"/review/{world.cycle.week}/publish/", {"confirm": "1"}, follow=True)
    assert response.status_code == 200
    assert "plan version 1" in response.content.decode()
    again = client.post(f"/review/{world.cycle.week}/publish/", {"confirm": "1"}, follow=True)  # no reason: refused
    assert "Say why" in again.content.decode() and AllocationPlan.objects.count() == 1


def test_publish_button_template(world, finalized):
    from django.template.loader import render_to_string

    html = render_to_string("committee/_publish_button.html", {"cycle": world.cycle, "is_chair": True})
    assert 'id="publish-plan"' in html
    assert render_to_string("committee/_publish_button.html", {"cycle": world.cycle, "is_chair": False}).strip() == ""


def test_api_publish_is_for_the_chair_only(world, finalized):
    api = APIClient()
    url = f"/api/v1/cycles/{world.cycle.week}/publish/"
    api.force_login(world.lead_a)
    assert api.post(url, {}, format="json").status_code == 403
    scheduler = APIClient()
    token = allocation_services.scheduler_client_create(cluster=world.atlas, name="slurm").token
    scheduler.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert scheduler.post(url, {}, format="json").status_code == 403  # a scheduler is not a person
    api.force_login(world.chair)
    response = api.post(url, {}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert body["version"] == 1 and body["window_count"] == 2 and len(body["explanations"]) == 2
    correction = api.post(url, {}, format="json")
    assert correction.status_code == 400 and "reason" in correction.json()


def test_command_publishes_and_prints_the_explanations(world, finalized):
    out = StringIO()
    call_command("publish_plan", week=world.cycle.week, stdout=out)
    text = out.getvalue()
    assert "plan version 1" in text and "placed" in text
    with pytest.raises(CommandError, match="why"):
        call_command("publish_plan", week=world.cycle.week)
    with pytest.raises(CommandError, match="No cycle"):
        call_command("publish_plan", week="2031-W05")


def test_team_sees_its_windows_and_the_engines_explanation(world, finalized, client):
    first, _second, third = finalized
    services.cycle_publish(actor=world.chair, cycle=world.cycle)
    client.force_login(world.member_a)
    html = client.get(f"/requests/{first.pk}/").content.decode()
    assert 'id="allocation"' in html and 'id="engine-explanation"' in html and "placed" in html
    client.force_login(world.member_b)
    deferred = client.get(f"/requests/{third.pk}/").content.decode()
    assert 'id="allocation"' not in deferred  # nothing was asked of the engine for a deferral


def test_review_page_offers_the_chair_the_publish_button(world, finalized, client):
    client.force_login(world.chair)
    assert 'id="publish-plan"' in client.get(f"/review/{world.cycle.week}/").content.decode()
    client.force_login(world.reviewer)
    assert 'id="publish-plan"' not in client.get(f"/review/{world.cycle.week}/").content.decode()


def test_a_correction_keeps_the_windows_that_have_started(world, finalized):
    first, second, _third = finalized
    services.cycle_publish(actor=world.chair, cycle=world.cycle)
    before = {w.request_ref: w for w in AllocationWindow.objects.all()}
    running = min(before.values(), key=lambda w: w.start)
    now = running.start + (running.end - running.start) / 2  # mid-run
    world.a100.gpu_count = 32  # half the pool went down while the first window runs
    world.a100.save()
    plan = services.cycle_publish(actor=world.chair, cycle=world.cycle, reason="Half of atlas/a100 is down.", now=now)
    live = {w.request_ref: w for w in allocation_selectors.plan_window_list(plan=plan)}
    kept = live[running.request_ref]
    assert (kept.pk, kept.start, kept.end, kept.gpu_count) == (running.pk, running.start, running.end,
                                                              running.gpu_count)
    assert not WindowWithdrawal.objects.filter(window=running).exists()
    explanations = {e.request_ref: e.text for e in plan.explanations.all()}
    assert running.request_ref is not None
    assert explanations[running.request_ref].startswith("kept as published: running since")
    other = next(ref for ref in (first.pk, second.pk) if ref != running.request_ref)
    assert other in explanations  # the rest was placed again around the running window


def test_api_publish_returns_each_explanations_reasons_beside_its_text(world, finalized):
    first, second, _third = finalized
    api = APIClient()
    api.force_login(world.chair)
    body = api.post(f"/api/v1/cycles/{world.cycle.week}/publish/", {}, format="json").json()
    explanations = {e["request_id"]: e for e in body["explanations"]}
    assert set(explanations) == {first.pk, second.pk}
    placed = explanations[first.pk]["reasons"]
    assert [r["code"] for r in placed] == ["placed"]
    assert placed[0]["params"]["gpu_count"] == 16 and placed[0]["params"]["preemptible"] is False
    assert set(placed[0]["params"]) == {"start", "end", "gpu_count", "gpu_model", "preemptible"}
    assert explanations[second.pk]["reasons"][-1]["params"]["gpu_count"] == 8
    stored = {e.request_ref: e for e in PlanExplanation.objects.filter(plan__week=world.cycle.week)}
    for request_id, explanation in explanations.items():
        assert explanation["text"] == stored[request_id].text  # the words as published
        assert explanation["text"] == explanation_text(explanation["reasons"], week_start=world.cycle.starts_at)
        assert explanation["text"].startswith("placed ")


def test_api_publish_documents_the_reasons(client):
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()
    components = schema["components"]["schemas"]
    explanation = components["PlanExplanation"]["properties"]
    assert explanation["reasons"]["type"] == "array" and explanation["reasons"]["readOnly"]
    assert "reason codes" in explanation["reasons"]["description"]
    reason = components[explanation["reasons"]["items"]["$ref"].rsplit("/", 1)[-1]]["properties"]
    assert reason["code"]["allOf"] == [{"$ref": "#/components/schemas/ReasonCodeEnum"}]
    code = components["ReasonCodeEnum"]
    assert set(code["enum"]) == set(REASON_CODES) and {"placed", "pool_full", "kept"} <= set(code["enum"])
    assert reason["params"]["type"] == "object" and "docs/engine.md" in reason["params"]["description"]
