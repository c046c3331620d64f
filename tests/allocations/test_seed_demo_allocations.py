"""seed_demo's allocation side: accounts, demo scheduler tokens, four weeks of windows and usage."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from django.core.management import call_command
from django.db.models import Sum
from rest_framework.test import APIClient

from allocations.models import (
    AllocationPlan,
    AllocationWindow,
    ClusterAccount,
    SchedulerClient,
    UsageRecord,
    WindowSyncStatus,
)
from committee import weeks
from committee.demo import DEMO_SCHEDULER_TOKENS
from committee.models import ReviewCycle
from tests.clock import FIXED_NOW


def _counts():
    return [m.objects.count() for m in (AllocationPlan, AllocationWindow, UsageRecord, SchedulerClient,
                                        ClusterAccount)]


class TestTheSeededDemo:
    """What one seed_demo leaves for the schedulers (the class's tests share it: `seeded_demo`, tests/conftest.py)."""

    def test_demo_tokens_read_the_demo_windows(self, seeded_demo, db):
        out = seeded_demo.out
        assert DEMO_SCHEDULER_TOKENS["atlas"] in out and "DEMO ONLY" in out and "curl" in out
        last_week = weeks.week_label(FIXED_NOW.date() - timedelta(days=7))
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Bearer {DEMO_SCHEDULER_TOKENS['atlas']}")
        response = api.get("/api/v1/windows/", {"cluster": "atlas", "week": last_week})
        assert response.status_code == 200
        results = response.json()["results"]
        assert results and all(w["account"] == w["team"] for w in results)  # slurm account = team slug on atlas
        assert api.get("/api/v1/windows/", {"cluster": "orion"}).status_code == 404
        current = ReviewCycle.objects.filter(week=weeks.current_week_label(FIXED_NOW)).first()
        if current is not None:  # the review side seeds this week finalized: it is published, active now
            assert current.status == "published"
            live = api.get("/api/v1/windows/", {"cluster": "atlas", "active_at": FIXED_NOW.isoformat()})
            assert live.json()["count"] > 0
            assert WindowSyncStatus.objects.filter(state="short").count() == 1  # one node short, beside its window

    def test_four_weeks_of_usage_with_one_team_using_half(self, seeded_demo, db):
        history = [weeks.week_label(FIXED_NOW.date() - timedelta(weeks=back)) for back in range(1, 5)]
        # Each past week went through the review: published by its cycle, the engine's windows for its requests.
        plans = AllocationPlan.objects.filter(week__in=history)
        assert plans.count() == 4 and all(p.source_ref.startswith("review-cycle:") for p in plans)
        assert not AllocationWindow.objects.filter(week__in=history, request_ref__isnull=True).exists()
        for team in ("ads", "search"):
            granted = sum(w.gpu_hours for w in AllocationWindow.objects.filter(team__slug=team, pool__slug="a100",
                                                                               week__in=history))
            used = UsageRecord.objects.filter(team__slug=team, pool__slug="a100").aggregate(
                h=Sum("gpu_hours_used"))["h"]
            ratio = Decimal(used) / Decimal(granted)
            assert (Decimal("0.4") < ratio < Decimal("0.6")) == (team == "ads")
        assert UsageRecord.objects.values("period_start__date").distinct().count() >= 4 * 3


def test_seeding_twice_changes_nothing(db):
    call_command("seed_demo", "--i-know-this-is-not-production")
    first = _counts()
    call_command("seed_demo", "--i-know-this-is-not-production")
    assert _counts() == first
