"""The committee's REST API in tests: a persona's view of it, and a request body to file."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.test import Client
from rest_framework.test import APIClient

API = "/api/v1"


def as_user(api, user):
    api.force_authenticate(user=user)
    return api


def api_for(user: Any) -> APIClient:
    """A new API client signed in as `user`."""
    return as_user(APIClient(), user)


def browser_for(user: Any) -> Client:
    """A new test browser with `user`'s session."""
    client = Client()
    client.force_login(user)
    return client


def request_body(world, **overrides):
    start = world.cycle.starts_at.isoformat()
    end = (world.cycle.starts_at + timedelta(hours=96)).isoformat()
    body = {
        "pool": world.a100.pk, "title": "Ranker retrain", "gpu_count": 16, "min_gpu_count": 8, "duration_hours": 48,
        "earliest_start": start, "latest_end": end, "preemptible_ok": False, "baseline_gpu_hours": None,
        "deadline": None, "slip_consequence": "",
        "usage_report": {"gpu_hours_granted": "800", "gpu_hours_used": "600", "mean_utilization_pct": "75",
                         "notes": ""},
        "impact_forecast": {"kind": "revenue", "estimated_value": "50000", "value_unit": "USD/week",
                            "confidence": "medium", "narrative": "Lift."},
        "alternatives": [{"description": "Distilled", "gpu_hours": 300, "quality_change": "", "cost_estimate": None,
                          "feasible": True}],
    }
    body.update(overrides)
    return body
