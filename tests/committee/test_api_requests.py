"""The requests API: teams file, submit and withdraw; the same rules as the portal."""

from __future__ import annotations

from committee.models import GpuRequest
from tests.committee.review_api import API, as_user, request_body
from tests.factories import file_request


def test_teams_read_their_own_requests_and_the_committee_all(api, world):
    a = file_request(world)
    b = file_request(world, team=world.team_b, pool=world.h100, title="Vision", gpu_count=8, min_gpu_count=4)

    def listed(user):
        return {r["id"] for r in as_user(api, user).get(f"{API}/requests/").json()["results"]}

    assert listed(world.lead_a) == {a.pk}
    assert listed(world.member_b) == {b.pk}
    assert listed(world.reviewer) == {a.pk, b.pk}
    assert listed(world.outsider) == set()
    assert as_user(api, world.member_b).get(f"{API}/requests/{a.pk}/").status_code == 404
    detail = as_user(api, world.lead_a).get(f"{API}/requests/{a.pk}/").json()
    assert detail["usage_report"]["gpu_hours_used"] == "600.0" and detail["team"] == "team-a"
    assert as_user(api, world.reviewer).get(f"{API}/requests/", {"team": "team-b"}).json()["count"] == 1


def test_team_files_submits_and_withdraws_over_the_api(api, world):
    as_user(api, world.member_a)
    # What a client must not set is refused, naming it (it used to be ignored silently).
    response = api.post(f"{API}/teams/team-a/requests/", request_body(world, status="decided", team="team-b"),
                        format="json")
    assert response.status_code == 400 and set(response.json()) == {"status", "team"}
    assert not GpuRequest.objects.exists()
    response = api.post(f"{API}/teams/team-a/requests/", request_body(world), format="json")
    assert response.status_code == 201, response.json()
    created = response.json()
    assert created["status"] == "draft" and created["team"] == "team-a"
    assert created["alternatives"][0]["description"] == "Distilled"
    submitted = api.post(f"{API}/requests/{created['id']}/submit/")
    assert submitted.json()["status"] == "submitted"
    updated = api.put(f"{API}/requests/{created['id']}/", request_body(world, title="Smaller retrain"), format="json")
    assert updated.status_code == 200 and updated.json()["title"] == "Smaller retrain"
    assert api.post(f"{API}/requests/{created['id']}/withdraw/").json()["status"] == "withdrawn"


def test_filing_for_another_team_is_refused(api, world):
    response = as_user(api, world.member_b).post(f"{API}/teams/team-a/requests/", request_body(world), format="json")
    assert response.status_code == 403 and not GpuRequest.objects.exists()


def test_bad_request_input_is_a_clear_400_and_writes_nothing(api, world):
    as_user(api, world.member_a)
    response = api.post(f"{API}/teams/team-a/requests/", request_body(world, gpu_count=65), format="json")
    assert response.status_code == 400 and "gpu_count" in response.json()
    response = api.post(f"{API}/teams/team-a/requests/", request_body(world, usage_report={}), format="json")
    assert response.status_code == 400 and "usage_report" in response.json()
    assert not GpuRequest.objects.exists()
