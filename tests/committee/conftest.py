"""Fixtures of the committee's tests: an API client, and two requests in review scored by two members."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.committee.reviewing import score, two_requests_in_review


@pytest.fixture
def api() -> APIClient:
    return APIClient()


@pytest.fixture
def scored(world: Any) -> tuple[Any, Any]:
    a, b = two_requests_in_review(world)
    for member in (world.chair, world.reviewer):
        score(member, a, 7, 6, 5)
        score(member, b, 5, 5, 5)
    return a, b
