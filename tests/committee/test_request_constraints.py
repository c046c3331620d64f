"""Each request invariant is refused by the database itself, whichever code path writes."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction

from committee.models import Alternative, GpuRequest, ImpactForecast, UsageReport
from tests.factories import file_request, request_fields


def _insert(world, **overrides):
    fields = request_fields(world, **overrides)
    return GpuRequest.objects.create(team=world.team_a, cycle=world.cycle, **fields)


@pytest.mark.parametrize(
    "overrides",
    [
        {"gpu_count": 0},
        {"min_gpu_count": 0},
        {"gpu_count": 4, "min_gpu_count": 8},
        {"duration_hours": 0},
        {"baseline_gpu_hours": 0},
    ],
    ids=["zero-gpus", "zero-minimum", "minimum-above-count", "zero-hours", "zero-baseline"],
)
def test_database_refuses_bad_counts(world, overrides):
    with pytest.raises(IntegrityError), transaction.atomic():
        _insert(world, **overrides)
    assert GpuRequest.objects.count() == 0


def test_database_refuses_end_before_start(world):
    start = world.cycle.starts_at
    with pytest.raises(IntegrityError), transaction.atomic():
        _insert(world, earliest_start=start, latest_end=start - timedelta(hours=1))


def test_database_refuses_window_shorter_than_duration(world):
    start = world.cycle.starts_at
    with pytest.raises(IntegrityError), transaction.atomic():
        _insert(world, earliest_start=start, latest_end=start + timedelta(hours=47), duration_hours=48)
    _insert(world, earliest_start=start, latest_end=start + timedelta(hours=48), duration_hours=48)
    assert GpuRequest.objects.count() == 1


def test_database_allows_one_active_request_per_team_pool_cycle(world):
    _insert(world)
    with pytest.raises(IntegrityError), transaction.atomic():
        _insert(world, title="Second")
    GpuRequest.objects.update(status="withdrawn")
    _insert(world, title="Refiled after withdrawal")
    assert GpuRequest.objects.filter(status="draft").count() == 1


@pytest.mark.parametrize("utilization", [-1, 100.1])
def test_database_refuses_utilization_outside_0_100(world, utilization):
    gpu_request = file_request(world, submit=False)
    UsageReport.objects.filter(request=gpu_request).delete()
    with pytest.raises(IntegrityError), transaction.atomic():
        UsageReport.objects.create(
            request=gpu_request, gpu_hours_granted=1, gpu_hours_used=1, mean_utilization_pct=utilization
        )


def test_database_refuses_negative_evidence(world):
    gpu_request = file_request(world, submit=False)
    with pytest.raises(IntegrityError), transaction.atomic():
        Alternative.objects.create(request=gpu_request, description="x", gpu_hours=0)
    with pytest.raises(IntegrityError), transaction.atomic():
        Alternative.objects.create(request=gpu_request, description="x", gpu_hours=5, cost_estimate=-1)
    ImpactForecast.objects.filter(request=gpu_request).delete()
    with pytest.raises(IntegrityError), transaction.atomic():
        ImpactForecast.objects.create(
            request=gpu_request, kind="revenue", estimated_value=-5, value_unit="USD", confidence="low", narrative="x"
        )


def test_submitted_request_must_carry_its_submission_time(world):
    with pytest.raises(IntegrityError), transaction.atomic():
        _insert(world, status="submitted")
