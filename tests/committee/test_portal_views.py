"""The team portal in the browser's terms: form posts and the pages they lead to."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from committee.models import GpuRequest, RequestStatus
from tests.factories import file_request


def _dt(value):
    return timezone.localtime(value).strftime("%Y-%m-%dT%H:%M")


def form_data(world, alternatives=(), **overrides):
    start = world.cycle.starts_at + timedelta(hours=8)
    data = {
        "team": world.team_a.pk,
        "title": "Ranker retrain",
        "pool": world.a100.pk,
        "gpu_count": "16",
        "min_gpu_count": "8",
        "duration_hours": "48",
        "earliest_start": _dt(start),
        "latest_end": _dt(start + timedelta(hours=96)),
        "baseline_gpu_hours": "",
        "deadline": "",
        "slip_consequence": "",
        "usage-gpu_hours_granted": "800",
        "usage-gpu_hours_used": "400",
        "usage-mean_utilization_pct": "50",
        "usage-notes": "",
        "forecast-kind": "revenue",
        "forecast-estimated_value": "120000",
        "forecast-value_unit": "USD/week",
        "forecast-confidence": "high",
        "forecast-narrative": "Lift in conversion.",
        "alt-TOTAL_FORMS": str(len(alternatives)),
        "alt-INITIAL_FORMS": "0",
        "alt-MIN_NUM_FORMS": "0",
        "alt-MAX_NUM_FORMS": "20",
    }
    for index, alt in enumerate(alternatives):
        for key, value in alt.items():
            data[f"alt-{index}-{key}"] = value
    data.update(overrides)
    return data


def test_anonymous_is_sent_to_sign_in(client, world):
    response = client.get(reverse("committee:portal"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_sign_in_and_out(client, world):
    response = client.post(reverse("login"), {"username": "lead_a", "password": "pw"}, follow=True)
    assert response.status_code == 200
    assert b"My team" in response.content
    response = client.post(reverse("logout"), follow=True)
    assert b"Sign in" in response.content


def test_team_member_files_request_with_two_alternatives(client, world):
    client.force_login(world.lead_a)
    alternatives = [
        {"description": "Distilled student", "gpu_hours": "300", "quality_change": "NDCG -0.4%", "feasible": "on"},
        {"description": "bf16", "gpu_hours": "500", "cost_estimate": "1200"},
    ]
    response = client.post(reverse("committee:request-create"), form_data(world, alternatives), follow=True)
    assert response.status_code == 200
    gpu_request = GpuRequest.objects.get()
    assert gpu_request.team == world.team_a and gpu_request.created_by == world.lead_a
    assert [(a.description, a.feasible) for a in gpu_request.alternatives.all()] == [
        ("Distilled student", True),
        ("bf16", False),
    ]
    assert b"Distilled student" in response.content
    response = client.post(reverse("committee:request-submit", args=[gpu_request.pk]), follow=True)
    assert b"Submitted to the committee" in response.content
    assert GpuRequest.objects.get().status == RequestStatus.SUBMITTED
    portal = client.get(reverse("committee:portal"))
    assert b"Ranker retrain" in portal.content and b"Submitted" in portal.content


def test_invalid_form_shows_errors_where_they_are_and_saves_nothing(client, world):
    client.force_login(world.lead_a)
    data = form_data(world, [{"description": "", "gpu_hours": "-3"}], gpu_count="100", min_gpu_count="200",
                     **{"usage-mean_utilization_pct": "140"})
    response = client.post(reverse("committee:request-create"), data)
    assert response.status_code == 400
    errors = response.context["forms"]
    assert "only 64 GPUs" in str(errors["request"].errors["gpu_count"])
    assert "minimum cannot be more" in str(errors["request"].errors["min_gpu_count"])
    assert "mean_utilization_pct" in errors["usage"].errors
    assert "description" in errors["alternatives"].forms[0].errors
    assert "gpu_hours" in errors["alternatives"].forms[0].errors
    assert b"The request was not saved" in response.content
    assert GpuRequest.objects.count() == 0


def test_edit_adds_and_removes_alternatives(client, world):
    gpu_request = file_request(world, alternatives=[{"description": "A", "gpu_hours": 10},
                                                    {"description": "B", "gpu_hours": 20}])
    client.force_login(world.member_a)
    edit_url = reverse("committee:request-edit", args=[gpu_request.pk])
    page = client.get(edit_url)
    assert page.status_code == 200 and b'value="A"' in page.content
    data = form_data(world, [{"description": "A", "gpu_hours": "10", "DELETE": "on"},
                             {"description": "B", "gpu_hours": "20"},
                             {"description": "C", "gpu_hours": "30"}], title="Edited")
    data["alt-INITIAL_FORMS"] = "2"
    response = client.post(edit_url, data)
    assert response.status_code == 302
    gpu_request.refresh_from_db()
    assert gpu_request.title == "Edited"
    assert [a.description for a in gpu_request.alternatives.all()] == ["B", "C"]


def test_withdraw_from_the_page(client, world):
    gpu_request = file_request(world)
    client.force_login(world.lead_a)
    response = client.post(reverse("committee:request-withdraw", args=[gpu_request.pk]), {"confirm": "yes"},
                           follow=True)
    assert b"Request withdrawn" in response.content
    gpu_request.refresh_from_db()
    assert gpu_request.status == RequestStatus.WITHDRAWN


def test_withdraw_asks_first_and_says_what_is_lost(client, world):
    gpu_request = file_request(world, alternatives=[{"description": "Distilled", "gpu_hours": 100}])
    client.force_login(world.lead_a)
    detail = client.get(reverse("committee:request-detail", args=[gpu_request.pk])).content.decode()
    url = reverse("committee:request-withdraw", args=[gpu_request.pk])
    assert f'href="{url}"' in detail  # the page's button opens the confirmation, it does not post
    page = client.get(url).content.decode()
    assert "Withdraw “Ranker retrain”?" in page and "It cannot be undone" in page
    assert "the committee will not review, score or decide it" in page
    assert "1 cheaper alternative" in page and "file a new request for atlas/a100" in page
    for data in ({}, {"confirm": ""}):  # without `confirm`, the same page again and nothing changes
        response = client.post(url, data)
        assert response.status_code == 200 and "It cannot be undone" in response.content.decode()
        gpu_request.refresh_from_db()
        assert gpu_request.status == RequestStatus.SUBMITTED
    assert not gpu_request.events.filter(action="withdrawn").exists()
    client.post(url, {"confirm": "yes"})
    gpu_request.refresh_from_db()
    assert gpu_request.status == RequestStatus.WITHDRAWN


def test_a_withdrawn_request_has_no_confirmation_page(client, world):
    gpu_request = file_request(world)
    client.force_login(world.lead_a)
    url = reverse("committee:request-withdraw", args=[gpu_request.pk])
    client.post(url, {"confirm": "yes"})
    response = client.get(url, follow=True)
    assert "A withdrawn request cannot be withdrawn." in response.content.decode()


def test_request_is_read_only_after_intake_closes(client, world):
    gpu_request = file_request(world)
    world.cycle.intake_closes_at = timezone.now() - timedelta(minutes=1)
    world.cycle.save()
    client.force_login(world.lead_a)
    detail = client.get(reverse("committee:request-detail", args=[gpu_request.pk]))
    assert b"read-only" in detail.content
    assert reverse("committee:request-edit", args=[gpu_request.pk]).encode() not in detail.content
    response = client.post(reverse("committee:request-edit", args=[gpu_request.pk]), form_data(world, title="Late"))
    assert response.status_code == 302
    response = client.post(reverse("committee:request-withdraw", args=[gpu_request.pk]), follow=True)
    assert b"closed" in response.content
    gpu_request.refresh_from_db()
    assert (gpu_request.title, gpu_request.status) == ("Ranker retrain", RequestStatus.SUBMITTED)


@pytest.mark.parametrize("name", ["request-detail", "request-edit"])
def test_member_of_another_team_gets_404(client, world, name):
    gpu_request = file_request(world)
    client.force_login(world.member_b)
    assert client.get(reverse(f"committee:{name}", args=[gpu_request.pk])).status_code == 404


@pytest.mark.parametrize("name", ["request-submit", "request-withdraw", "request-edit"])
def test_member_of_another_team_cannot_change_request(client, world, name):
    gpu_request = file_request(world, submit=False)
    client.force_login(world.member_b)
    assert client.post(reverse(f"committee:{name}", args=[gpu_request.pk]), form_data(world)).status_code == 404
    gpu_request.refresh_from_db()
    assert gpu_request.status == RequestStatus.DRAFT


def test_user_without_team_cannot_open_the_form(client, world):
    client.force_login(world.outsider)
    assert client.get(reverse("committee:request-create")).status_code == 403


def test_member_cannot_file_for_a_team_they_are_not_in(client, world):
    client.force_login(world.member_b)
    response = client.post(reverse("committee:request-create"), form_data(world))  # team = team A
    assert response.status_code == 400
    assert "team" in response.context["team_form"].errors
    assert GpuRequest.objects.count() == 0
