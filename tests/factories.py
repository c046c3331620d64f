"""Valid request data, to be varied one field at a time by the tests."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

from committee import services
from committee.models import GpuRequest


def request_fields(world: Any, **overrides: Any) -> dict[str, Any]:
    start = world.cycle.starts_at + timedelta(hours=8)
    fields = {
        "pool": world.a100,
        "title": "Ranker retrain",
        "gpu_count": 16,
        "min_gpu_count": 8,
        "duration_hours": 48,
        "earliest_start": start,
        "latest_end": start + timedelta(hours=96),
        "preemptible_ok": False,
        "baseline_gpu_hours": None,
        "deadline": None,
        "slip_consequence": "",
    }
    fields.update(overrides)
    return fields


def usage_fields(**overrides: Any) -> dict[str, Any]:
    data = {"gpu_hours_granted": Decimal(800), "gpu_hours_used": Decimal(600), "mean_utilization_pct": Decimal(75),
            "notes": ""}
    data.update(overrides)
    return data


def forecast_fields(**overrides: Any) -> dict[str, Any]:
    data = {"kind": "revenue", "estimated_value": Decimal(50000), "value_unit": "USD/week", "confidence": "medium",
            "narrative": "Fresh model lifts conversion."}
    data.update(overrides)
    return data


def file_request(world: Any, *, team: Any = None, actor: Any = None, submit: bool = True,
                 alternatives: list[dict[str, Any]] | None = None, **overrides: Any) -> GpuRequest:
    """File (and by default submit) a request through the services, as a team member would."""
    team = team or world.team_a
    actor = actor or (world.lead_a if team == world.team_a else world.member_b)
    gpu_request = services.request_create(
        actor=actor,
        team=team,
        cycle=world.cycle,
        fields=request_fields(world, **overrides),
        usage=usage_fields(),
        forecast=forecast_fields(),
        alternatives=alternatives or [],
    )
    if submit:
        gpu_request = services.request_submit(actor=actor, gpu_request=gpu_request)
    return gpu_request
