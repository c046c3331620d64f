"""A team's history page: week by week what it asked for, what was decided and placed, what it used, its fair share
and its cost, for its members and the committee only, a quarter a page."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from allocations.models import AllocationWindow, UsageRecord
from committee import weeks
from committee.models import FairShareSnapshot
from reports.dashboards.teams import HISTORY_WEEKS, team_history
from tests.committee.appealing import finalize_week, publish
from tests.governed.version_one import pool_prices_set, version_1_set

pytestmark = pytest.mark.django_db


def url(team: Any, until: str | None = None) -> str:
    return reverse("reports:team-history", args=[team.slug]) + (f"?until={until}" if until else "")


def row_of(history: Any, week: str) -> Any:
    (row,) = [w for w in history.weeks if w.week == week]
    return row


def placed_hours(team: Any, week: str) -> Decimal:
    return sum(
        (Decimal(w.gpu_count) * Decimal(int((w.end - w.start).total_seconds())) / 3600
         for w in AllocationWindow.objects.filter(team=team, week=week, withdrawal__isnull=True)),
        Decimal(0),
    )


def test_a_published_week_shows_asked_decided_placed_used_fair_share_and_cost(world: Any, client: Any) -> None:
    finalize_week(world)  # A: 16 GPUs × 48 h granted; B: 24 × 48 partly (8) and 8 × 48 on h100 deferred
    publish(world)
    week = world.cycle.week
    start = weeks.week_bounds(week)[0]
    pool_prices_set({world.a100: "2.50"})
    for hour, used in ((10, Decimal("100.5")), (40, Decimal("60"))):
        UsageRecord.objects.create(
            pool=world.a100, team=world.team_b, period_start=start + timedelta(hours=hour),
            period_end=start + timedelta(hours=hour + 1), gpu_hours_used=used, mean_utilization_pct=Decimal(90),
            mean_queue_wait_minutes=Decimal(3), idempotency_key=f"th-{hour}",
        )
    client.force_login(world.member_b)
    response = client.get(url(world.team_b))
    assert response.status_code == 200
    history = response.context["history"]
    row = row_of(history, week)
    assert row.requests == 2
    assert row.asked_a100_gpu_hours == 24 * 48 + 8 * 48
    assert row.decided_a100_gpu_hours == 8 * 48  # the partial grant; the deferral decides nothing
    assert row.placed_a100_gpu_hours == placed_hours(world.team_b, week) > 0
    assert row.used_a100_gpu_hours == Decimal("160.5")
    assert row.cost == Decimal("401.25")  # 160.5 GPU-h × 2.50
    # A week sums both pools: with an H100-hour at two A100-hours, B's 8 × 48 h on h100 count twice; money does not.
    version_1_set({"pool.orion/h100.billing_weight": "2"})
    weighted = row_of(client.get(url(world.team_b)).context["history"], week)
    assert (weighted.asked_a100_gpu_hours, weighted.cost) == (24 * 48 + 2 * 8 * 48, Decimal("401.25"))
    snapshot = FairShareSnapshot.objects.get(cycle=world.cycle, team=world.team_b)
    assert row.fair_share_factor == Decimal(str(round(snapshot.share().factor, 3)))
    page = response.content.decode()
    assert "401.25" in page and "1,536" in page
    # The decided week links to its decision record in the archive.
    assert reverse("reports:page", kwargs={"slug": f"decision-record-{week.lower()}"}) in page


def test_an_open_week_shows_what_was_asked_and_not_a_decision(world: Any, client: Any) -> None:
    from tests.factories import file_request

    file_request(world, title="Ranker retrain", gpu_count=16, duration_hours=48)
    client.force_login(world.lead_a)
    history = client.get(url(world.team_a)).context["history"]
    row = row_of(history, world.cycle.week)
    assert (row.asked_a100_gpu_hours, row.decided_a100_gpu_hours, row.used_a100_gpu_hours, row.cost) == (
        768, None, None, None)
    assert "not decided yet" in client.get(url(world.team_a)).content.decode()


def test_another_teams_member_is_refused_with_the_reason_and_the_committee_may_look(world: Any, client: Any) -> None:
    client.force_login(world.member_b)
    refused = client.get(url(world.team_a))
    assert refused.status_code == 403
    assert "open to its members and to the committee" in refused.content.decode()
    client.force_login(world.finance)
    assert client.get(url(world.team_a)).status_code == 200


def test_a_malformed_week_is_a_clear_400(world: Any, client: Any) -> None:
    client.force_login(world.lead_a)
    for bad in ("2026-W54", "W49", "2026-13"):
        response = client.get(url(world.team_a, bad))
        assert response.status_code == 400, bad
        assert "ISO week" in response.content.decode()


def test_pages_go_back_a_quarter_at_a_time_across_the_year_boundary(world: Any, pinned: Any) -> None:
    from django.utils import timezone

    now = timezone.now()
    # A record long ago makes an older page exist.
    UsageRecord.objects.create(
        pool=world.a100, team=world.team_a, period_start=weeks.week_bounds("2026-W01")[0],
        period_end=weeks.week_bounds("2026-W01")[0] + timedelta(hours=1), gpu_hours_used=Decimal(1),
        mean_utilization_pct=Decimal(50), mean_queue_wait_minutes=Decimal(0), idempotency_key="old",
    )
    latest = team_history(team=world.team_a, until="2027-W30", now=now)  # the future is clipped to next week
    assert latest.weeks[0].week == weeks.next_week_label(now) == "2026-W50"
    assert len(latest.weeks) == HISTORY_WEEKS and latest.newer is None
    assert latest.older is not None
    older = team_history(team=world.team_a, until=latest.older, now=now)
    assert older.weeks[0].week == "2026-W37" and older.newer == "2026-W50"
    # 2026 has 53 ISO weeks: a page ending in 2027-W02 holds 2026-W53 and starts in 2026-W43.
    boundary = team_history(team=world.team_a, until="2027-W02", now=now + timedelta(weeks=5))
    assert [w.week for w in boundary.weeks][:4] == ["2027-W02", "2027-W01", "2026-W53", "2026-W52"]
    assert boundary.weeks[-1].week == "2026-W43"


def test_a_page_costs_the_same_queries_with_a_year_of_history(world: Any, client: Any) -> None:
    client.force_login(world.lead_a)
    start = weeks.week_bounds("2026-W10")[0]
    # One hour of recent usage first: fair share weighs usage by the pools' billing weights in force (read once,
    # whatever the weeks).
    UsageRecord.objects.create(pool=world.a100, team=world.team_a, period_start=start + timedelta(hours=6217),
                               period_end=start + timedelta(hours=6218), gpu_hours_used=Decimal(2),
                               mean_utilization_pct=Decimal(50), mean_queue_wait_minutes=Decimal(1),
                               idempotency_key="first")
    with CaptureQueriesContext(connection) as empty:
        assert client.get(url(world.team_a)).status_code == 200
    UsageRecord.objects.bulk_create(
        UsageRecord(pool=world.a100, team=world.team_a, period_start=start + timedelta(hours=h),
                    period_end=start + timedelta(hours=h + 1), gpu_hours_used=Decimal(2),
                    mean_utilization_pct=Decimal(50), mean_queue_wait_minutes=Decimal(1), idempotency_key=f"y{h}")
        for h in range(0, 24 * 7 * 40, 5)
    )
    with CaptureQueriesContext(connection) as year:
        assert client.get(url(world.team_a)).status_code == 200
    assert len(year) == len(empty)
