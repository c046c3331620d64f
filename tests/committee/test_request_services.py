"""The request services: what a team can file, change, submit and withdraw, and when."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone

from committee import services
from committee.models import GpuRequest, RequestStatus
from tests.factories import file_request, forecast_fields, request_fields, usage_fields


def test_team_member_files_a_draft_with_evidence(world):
    gpu_request = file_request(
        world,
        submit=False,
        alternatives=[{"description": "Distilled", "gpu_hours": 200, "feasible": True},
                      {"description": "bf16", "gpu_hours": 500, "quality_change": "AUC -0.001"}],
    )
    assert gpu_request.status == RequestStatus.DRAFT
    assert gpu_request.usage_report.gpu_hours_used == 600
    assert gpu_request.impact_forecast.kind == "revenue"
    assert [a.description for a in gpu_request.alternatives.all()] == ["Distilled", "bf16"]
    assert list(gpu_request.events.values_list("action", flat=True)) == ["created"]


def test_outsider_cannot_file_for_a_team(world):
    with pytest.raises(PermissionDenied):
        file_request(world, actor=world.member_b)  # member of B filing for A
    assert GpuRequest.objects.count() == 0


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"gpu_count": 65}, "gpu_count"),
        ({"min_gpu_count": 32, "gpu_count": 16}, "min_gpu_count"),
        ({"duration_hours": 200}, "duration_hours"),
    ],
)
def test_invalid_request_is_refused_with_field_error_and_writes_nothing(world, overrides, field):
    with pytest.raises(ValidationError) as excinfo:
        file_request(world, submit=False, **overrides)
    assert field in excinfo.value.message_dict
    assert GpuRequest.objects.count() == 0


def test_invalid_alternative_names_its_row_and_writes_nothing(world):
    with pytest.raises(ValidationError) as excinfo:
        file_request(world, submit=False, alternatives=[{"description": "ok", "gpu_hours": 10},
                                                        {"description": "", "gpu_hours": 10}])
    assert "alternatives.1.description" in excinfo.value.message_dict
    assert GpuRequest.objects.count() == 0


def test_second_active_request_for_same_pool_is_refused(world):
    file_request(world)
    with pytest.raises(ValidationError) as excinfo:
        file_request(world, title="again")
    assert "already has an active request" in str(excinfo.value)


def test_edit_replaces_alternatives_and_keeps_submitted_status(world):
    gpu_request = file_request(world, alternatives=[{"description": "old", "gpu_hours": 10}])
    services.request_update(
        actor=world.member_a,
        gpu_request=gpu_request,
        fields=request_fields(world, title="Renamed"),
        usage=usage_fields(),
        forecast=forecast_fields(),
        alternatives=[{"description": "new", "gpu_hours": 20}],
    )
    gpu_request.refresh_from_db()
    assert gpu_request.title == "Renamed"
    assert gpu_request.status == RequestStatus.SUBMITTED
    assert [a.description for a in gpu_request.alternatives.all()] == ["new"]


def test_submit_then_withdraw(world):
    gpu_request = file_request(world)
    assert gpu_request.status == RequestStatus.SUBMITTED and gpu_request.submitted_by == world.lead_a
    with pytest.raises(ValidationError):
        services.request_submit(actor=world.lead_a, gpu_request=gpu_request)
    withdrawn = services.request_withdraw(actor=world.member_a, gpu_request=gpu_request)
    assert withdrawn.status == RequestStatus.WITHDRAWN
    assert list(withdrawn.events.values_list("action", flat=True)) == ["created", "submitted", "withdrawn"]


def test_nothing_changes_after_intake_closes(world):
    gpu_request = file_request(world, submit=False)
    world.cycle.intake_closes_at = timezone.now() - timedelta(minutes=1)
    world.cycle.save()
    gpu_request.refresh_from_db()
    for service in (services.request_submit, services.request_withdraw):
        with pytest.raises(ValidationError, match="closed"):
            service(actor=world.lead_a, gpu_request=gpu_request)
    with pytest.raises(ValidationError, match="closed"):
        file_request(world, pool=world.h100)
    gpu_request.refresh_from_db()
    assert gpu_request.status == RequestStatus.DRAFT
