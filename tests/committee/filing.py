"""Helpers for the filing tests: the request form's post, and a week's deferred request."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from committee import services
from committee.models import CycleStatus, Decision, DecisionOutcome, GpuRequest, RequestStatus, ReviewCycle
from tests.factories import file_request


def local(value: datetime) -> str:
    """A moment as the request form's 24-hour inputs take it, in the committee's zone."""
    return timezone.localtime(value).strftime("%Y-%m-%d %H:%M")


def form_data(world: Any, alternatives: tuple[dict[str, str], ...] = (), **overrides: Any) -> dict[str, Any]:
    start = world.cycle.starts_at + timedelta(hours=8)
    data: dict[str, Any] = {
        "team": world.team_a.pk, "title": "Ranker retrain", "pool": world.a100.pk, "gpu_count": "16",
        "min_gpu_count": "8", "duration_hours": "48", "earliest_start": local(start),
        "latest_end": local(start + timedelta(hours=96)), "baseline_gpu_hours": "", "deadline": "",
        "slip_consequence": "", "usage-gpu_hours_granted": "800", "usage-gpu_hours_used": "400",
        "usage-mean_utilization_pct": "50", "usage-notes": "", "forecast-kind": "revenue",
        "forecast-estimated_value": "120000", "forecast-value_unit": "USD/week", "forecast-confidence": "high",
        "forecast-narrative": "Lift in conversion.", "alt-TOTAL_FORMS": str(len(alternatives)),
        "alt-INITIAL_FORMS": "0", "alt-MIN_NUM_FORMS": "0", "alt-MAX_NUM_FORMS": "20",
    }
    for index, alt in enumerate(alternatives):
        for key, value in alt.items():
            data[f"alt-{index}-{key}"] = value
    data.update(overrides)
    return data


def deferred_request(world: Any, *, status: str = CycleStatus.PUBLISHED, **overrides: Any) -> GpuRequest:
    """Team A's request of world.cycle, deferred by the committee, the week then `status`; the next week
    (2026-W51) opens for intake and becomes world.cycle."""
    gpu_request = file_request(world, **overrides)
    cycle = world.cycle
    GpuRequest.objects.filter(pk=gpu_request.pk).update(status=RequestStatus.DECIDED)
    Decision.objects.create(
        request=gpu_request, cycle=cycle, outcome=DecisionOutcome.DEFER, requested_gpu_count=gpu_request.gpu_count,
        rationale="Not this week: the pool is full.", decided_by_name="chair", team_name=gpu_request.team.name,
        request_title=gpu_request.title, cycle_week=cycle.week,
    )
    ReviewCycle.objects.filter(pk=cycle.pk).update(status=status)
    world.cycle = services.cycle_create(week="2026-W51")
    gpu_request.refresh_from_db()
    return gpu_request
