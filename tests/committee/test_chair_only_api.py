"""Every chair-only endpoint refuses anyone else the same way, publishing included."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import time_machine
from rest_framework.test import APIClient

from committee.models import ReviewCycle


@pytest.fixture(autouse=True)
def clock():
    with time_machine.travel(datetime(2026, 12, 1, 10, 0, tzinfo=UTC), tick=False):
        yield


@pytest.mark.parametrize("who", ["reviewer", "lead_a"])
@pytest.mark.parametrize("action", ["close-intake", "finalize", "publish"])
def test_chair_only_endpoints_refuse_others_with_one_message(world, who, action):
    api = APIClient()
    api.force_authenticate(user=getattr(world, who))
    response = api.post(f"/api/v1/cycles/{world.cycle.week}/{action}/", {}, format="json")
    assert response.status_code == 403
    assert response.json()["detail"] == "Only the chair may use this endpoint."
    assert ReviewCycle.objects.get(pk=world.cycle.pk).status == world.cycle.status
