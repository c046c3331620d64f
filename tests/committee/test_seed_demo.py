from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management import call_command

from allocations.models import Cluster, GpuPool, Team
from committee.models import CommitteeSeat, GpuRequest, RequestStatus, ReviewCycle

MODELS = (Cluster, GpuPool, Team, CommitteeSeat, GpuRequest, ReviewCycle)


def _counts():
    return {model.__name__: model.objects.count() for model in (*MODELS, get_user_model())}


def test_seed_demo_builds_the_demo_and_prints_logins(db, capsys):
    call_command("seed_demo")
    out = capsys.readouterr().out
    assert "search-lead" in out and "chair" in out and "docket-demo" in out
    assert sorted(Team.objects.values_list("slug", flat=True)) == sorted(
        ["search", "ads", "recommendations", "vision", "speech", "research"]
    )
    assert {(p.gpu_model, p.gpu_count) for p in GpuPool.objects.all()} == {("A100", 64), ("H100", 32)}
    assert CommitteeSeat.objects.count() == 4
    cycle = ReviewCycle.objects.get(status="open")
    submitted = GpuRequest.objects.filter(cycle=cycle, status=RequestStatus.SUBMITTED)
    assert submitted.count() >= 10
    for gpu_request in submitted:
        assert gpu_request.usage_report and gpu_request.impact_forecast
    # The cases a committee meets: an efficiency lever, a distilled variant at ~30%, an urgent launch.
    assert GpuRequest.objects.filter(baseline_gpu_hours__isnull=False).exists()
    assert GpuRequest.objects.filter(deadline__isnull=False).exists()


def test_seed_demo_twice_changes_nothing(db):
    call_command("seed_demo")
    first = _counts()
    call_command("seed_demo")
    assert _counts() == first
