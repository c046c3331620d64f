"""The committee API's schema and docs, and requests refused across teams and types."""

from __future__ import annotations

from committee.models import GpuRequest, Score
from tests.committee.review_api import API, as_user, request_body
from tests.committee.reviewing import close
from tests.factories import file_request


def test_schema_and_docs_are_served_without_a_cdn(client, world):
    client.force_login(world.member_a)
    schema = client.get(f"{API}/schema/")
    assert schema.status_code == 200 and b"/api/v1/cycles/{week}/ranking/" in schema.content
    docs = client.get(f"{API}/docs/").content.decode()
    assert "cdn" not in docs.lower() and "/static/drf_spectacular_sidecar/" in docs


def test_schema_says_the_ranking_and_the_what_if_are_paged(client, world):
    client.force_login(world.member_a)
    schema = client.get(f"{API}/schema/", {"format": "json"}).json()
    ranking = schema["paths"]["/api/v1/cycles/{week}/ranking/"]["get"]
    what_if = schema["paths"]["/api/v1/cycles/{week}/what-if/"]["get"]
    assert "page" in [p["name"] for p in ranking["parameters"]] and "page" in [p["name"] for p in what_if["parameters"]]
    assert ranking["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith(
        "/PaginatedRankingRowList")
    assert {"count", "next", "previous"} <= set(schema["components"]["schemas"]["WhatIf"]["properties"])


def test_another_teams_request_cannot_be_changed_submitted_or_withdrawn(api, world):
    draft = file_request(world, submit=False)
    as_user(api, world.member_b)
    assert api.post(f"{API}/requests/{draft.pk}/submit/").status_code == 404
    assert api.post(f"{API}/requests/{draft.pk}/withdraw/").status_code == 404
    assert api.put(f"{API}/requests/{draft.pk}/", request_body(world), format="json").status_code == 404
    # The committee reads every request but files for no team: changing one is refused.
    as_user(api, world.reviewer)
    assert api.post(f"{API}/requests/{draft.pk}/submit/").status_code == 403
    assert GpuRequest.objects.get(pk=draft.pk).status == "draft"


def test_request_list_filters_by_pool_id_and_refuses_a_fraction(api, world):
    """The pool filter is an id: 1.5 is refused (found by the API fuzzing), an empty value is no filter."""
    a = file_request(world)
    as_user(api, world.reviewer)
    assert [r["id"] for r in api.get(f"{API}/requests/", {"pool": world.a100.pk}).json()["results"]] == [a.pk]
    assert api.get(f"{API}/requests/", {"pool": world.h100.pk}).json()["results"] == []
    assert api.get(f"{API}/requests/", {"pool": "1.5"}).status_code == 400
    assert api.get(f"{API}/requests/", {"pool": 2**70}).status_code == 400  # once a database overflow (500)
    assert api.get(f"{API}/requests/", {"pool": ""}).json()["count"] == 1
    pk = str(world.a100.pk)
    for written_otherwise in (f"{pk}.0", "0_" + pk, pk.translate(str.maketrans("0123456789", "０１２３４５６７８９"))):
        response = api.get(f"{API}/requests/", {"pool": written_otherwise})
        assert response.status_code == 400 and list(response.json()) == ["pool"], written_otherwise


def test_a_body_value_of_another_json_type_is_refused(api, world):
    """A string field does not take a number, an integer not a string (DRF would convert; the API fuzzing found it)."""
    a = file_request(world)
    close(world)
    as_user(api, world.reviewer)
    for body in ({"criterion": "urgency", "value": "5"}, {"criterion": "urgency", "value": 5, "note": 7},
                 {"criterion": "urgency", "value": True}):
        response = api.post(f"{API}/requests/{a.pk}/scores/", body, format="json")
        assert response.status_code == 400 and "Incorrect type" in str(response.json())
    assert not Score.objects.exists()
