"""A JSON body nested deeper than anything the API takes is a 400 on every endpoint that reads a body, never a 500."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import time_machine
from drf_spectacular.generators import SchemaGenerator
from rest_framework.test import APIClient

from tests.allocations.plans import bearer, token_for
from tests.factories import file_request

PINNED = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
SCHEDULER_PATHS = ("/api/v1/usage/", "/api/v1/windows/", "/api/v1/elastic/")


def operations_with_a_body() -> list[tuple[str, str]]:
    schema = SchemaGenerator().get_schema(public=True)
    return sorted((method, path) for path, ops in schema["paths"].items()
                  for method, op in ops.items() if "requestBody" in op)


@pytest.fixture
def client_for(world):
    with time_machine.travel(PINNED, tick=False):
        gpu_request = file_request(world)
        values = {"{week}": world.cycle.week, "{id}": str(gpu_request.pk), "{team}": world.team_a.slug}

        def build(path: str) -> tuple[APIClient, str, dict[str, str]]:
            for name, value in values.items():
                path = path.replace(name, value)
            api = APIClient()
            if path.startswith(SCHEDULER_PATHS):
                return api, path, bearer(token_for(world.atlas))
            api.force_authenticate(world.chair)
            return api, path, {}

        yield build


def test_every_body_reading_endpoint_is_listed():
    assert ("post", "/api/v1/usage/") in operations_with_a_body()
    assert ("put", "/api/v1/requests/{id}/") in operations_with_a_body()


@pytest.mark.parametrize("body", ["[" * 50_000, '{"a":' * 50_000, "[" * 40 + "]" * 40],
                         ids=["list-50000", "object-50000", "list-40"])
@pytest.mark.parametrize(("method", "path"), operations_with_a_body())
def test_a_deeply_nested_body_is_refused(client_for, method, path, body):
    api, url, headers = client_for(path)
    response = getattr(api, method)(url, body, content_type="application/json", **headers)
    assert response.status_code == 400, response.content[:200]
    assert "nested" in response.json()["detail"]
