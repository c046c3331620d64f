"""API-wide behaviours that no single endpoint owns (each found by the API fuzzing, tests/test_api_fuzz.py)."""

from __future__ import annotations

from typing import Any

from django.test import Client

from committee.services import personal_token_create


def token_client(user: Any) -> Client:
    _row, token = personal_token_create(user=user, name="contract")
    return Client(HTTP_AUTHORIZATION=f"Token {token}")


def test_a_path_that_matches_no_endpoint_answers_json_under_api_and_a_page_elsewhere(world: Any) -> None:
    client = token_client(world.reviewer)
    for path in ("/api/v1/requests/abc/", "/api/v1/archive/pages/not a slug/", "/api/v2/"):
        response = client.get(path)
        assert response.status_code == 404 and response["Content-Type"] == "application/json", path
        assert response.json() == {"detail": "Not found."}
    client.force_login(world.reviewer)
    page = client.get("/no-such-page/")
    assert page.status_code == 404 and page["Content-Type"].startswith("text/html")


def test_a_repeated_query_parameter_is_refused(world: Any) -> None:
    client = token_client(world.reviewer)
    response = client.get("/api/v1/requests/?team=team-a&team=team-b")
    assert response.status_code == 400 and response.json() == {"team": ["Give this parameter once."]}
    assert client.get("/api/v1/requests/?team=team-a").status_code == 200


def test_the_api_takes_json_only(world: Any) -> None:
    client = token_client(world.chair)
    form = client.post(f"/api/v1/cycles/{world.cycle.week}/publish/", {"reason": "x"})  # multipart
    assert form.status_code == 415
    urlencoded = client.post(f"/api/v1/cycles/{world.cycle.week}/publish/", "reason=x",
                             content_type="application/x-www-form-urlencoded")
    assert urlencoded.status_code == 415


def test_every_operation_documents_its_error_answers(client: Any) -> None:
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            codes = set(operation["responses"])
            assert {"401", "403"} <= codes, (method, path)
            if "{" in path or method == "get":
                assert "404" in codes, (method, path)
            if method in ("post", "put", "patch"):
                assert {"400", "409"} <= codes, (method, path)
                assert set(operation.get("requestBody", {}).get("content", {"application/json": 0})) == {
                    "application/json"
                }, (method, path)


def test_decimal_fields_document_exactly_what_they_take(client: Any) -> None:
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()
    usage = schema["components"]["schemas"]["UsageInputRequest"]["properties"]
    assert usage["mean_utilization_pct"]["pattern"] == r"^(?:\d{1,2}(?:\.\d{0,1})?|100(?:\.0{0,1})?|\.\d{1,1})$"
    assert usage["gpu_hours_used"]["pattern"] == r"^(?:\d{1,10}(?:\.\d{0,2})?|\.\d{1,2})$"


def test_slug_and_week_filters_refuse_what_cannot_be_a_slug_or_a_week(world: Any) -> None:
    client = token_client(world.reviewer)
    for query in ({"team": "{'a': 1}"}, {"week": "next week"}, {"team": "team a"}):
        assert client.get("/api/v1/requests/", query).status_code == 400, query
    assert client.get("/api/v1/requests/", {"team": "team-a", "week": world.cycle.week}).status_code == 200
    assert client.get("/api/v1/requests/", {"department": "not a slug"}).status_code == 400


def test_the_request_list_narrows_to_a_departments_teams(world: Any) -> None:
    from allocations.models import Department, Team
    from tests.factories import file_request

    research = Department.objects.create(name="Research", slug="research", fair_share_weight=1)
    Team.objects.filter(pk=world.team_b.pk).update(department=research)
    file_request(world, title="A's")
    file_request(world, team=world.team_b, title="B's")
    client = token_client(world.reviewer)
    titles = [row["title"] for row in client.get("/api/v1/requests/", {"department": "research"}).json()["results"]]
    assert titles == ["B's"]
    assert client.get("/api/v1/requests/", {"department": "sales"}).json()["results"] == []


def test_window_filters_refuse_what_cannot_be_a_slug(world: Any) -> None:
    from allocations.services import scheduler_client_create

    token = scheduler_client_create(cluster=world.atlas, name="contract").token
    client = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    assert client.get("/api/v1/windows/", {"cluster": "atlas", "pool": "a 100"}).status_code == 400
    assert client.get("/api/v1/windows/", {"cluster": "atlas", "team": "{}"}).status_code == 400
    assert client.get("/api/v1/windows/", {"cluster": "atlas", "pool": "a100", "team": "team-a"}).status_code == 200


def _limits_said(description: str) -> bool:
    return "±15:59" in description and "years 1 to 9999" in description and "UTC" in description


def test_date_times_document_the_offset_and_year_they_take(client: Any) -> None:
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()
    windows = {p["name"]: p for p in schema["paths"]["/api/v1/windows/"]["get"]["parameters"]}
    for name in ("active_at", "ends_after"):
        assert windows[name]["schema"]["format"] == "date-time"
        assert _limits_said(windows[name]["description"]), windows[name]
    assert windows["active_at"]["description"].startswith("Windows holding their GPUs at this time")
    usage = schema["components"]["schemas"]["UsageInputRequest"]["properties"]
    for name in ("period_start", "period_end"):
        assert usage[name]["format"] == "date-time"
        assert _limits_said(usage[name]["description"]), usage[name]
    # Every date-time a client sends says it, whichever serializer or filter it comes through.
    for path, operations in schema["paths"].items():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                if parameter["schema"].get("format") == "date-time":
                    assert _limits_said(parameter.get("description", "")), (path, parameter["name"])
    for component, body in schema["components"]["schemas"].items():
        for name, field in body.get("properties", {}).items():
            if field.get("format") == "date-time" and not field.get("readOnly") and component.endswith("Request"):
                assert _limits_said(field.get("description", "")), (component, name)


def test_the_schema_documents_placement_team_windows_and_pools(client: Any) -> None:
    schema = client.get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()
    assert {"/api/v1/pools/", "/api/v1/teams/{team}/windows/"} <= set(schema["paths"])
    components = schema["components"]["schemas"]
    request = components["Request"]["properties"]
    assert "placement" in request and "placement" in components["Request"]["required"]
    placement = components["Placement"]["properties"]
    assert {"status", "status_label", "summary", "decided_gpu_count", "decided_gpu_hours", "placed_gpu_count",
            "placed_gpu_hours", "windows", "explanation", "reasons"} <= set(placement)
    statuses = components["PlacementStatusEnum"]["enum"]
    assert statuses == ["as_decided", "shortened", "given_back", "preemptible", "not_placed", "not_published",
                        "not_recorded", "not_granted", "undecided"]
    assert {"id", "key", "gpu_model", "gpu_count", "burst_reserve_gpus", "standby_gpus"} <= set(
        components["Pool"]["properties"])
    assert "department" in components["Window"]["properties"]  # the team's department, or null
    assert "department" in components["Commitment"]["properties"]
    windows = schema["paths"]["/api/v1/windows/"]["get"]["parameters"]
    assert {"pool", "team", "department"} <= {p["name"] for p in windows if p["in"] == "query"}
    week = schema["paths"]["/api/v1/teams/{team}/windows/"]["get"]["parameters"]
    assert [p["name"] for p in week if p["in"] == "query"] == ["week"]
