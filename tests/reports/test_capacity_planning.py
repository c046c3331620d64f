"""Capacity planning: the peak-to-mean arithmetic, the burst reserve it implies, the demand turned away, the PDF."""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
from datetime import datetime, timedelta
from decimal import Decimal

import pytest
from django.urls import reverse

from committee import services
from committee.models import CycleStatus, Decision, GpuRequest, RequestStatus
from reports.dashboards import capacity
from tests.allocations.plans import W, publish
from tests.browser import require_chromium
from tests.conftest import require

NOW = datetime.fromisoformat("2027-03-10T12:00:00+00:00")  # in week 2027-W10


def test_peak_to_mean_arithmetic():
    ptm = capacity.peak_to_mean([Decimal(100), Decimal(100), Decimal(100), Decimal(140)])
    assert ptm is not None and ptm.ratio is not None
    assert ptm.mean == 110 and ptm.peak == 140 and ptm.ratio == Decimal(140) / Decimal(110)
    # (1 − 1/R) × (100 − standby): (1 − 110/140) × 90 = 19.2857…
    implied = capacity.implied_burst_reserve_pct(ratio=ptm.ratio, standby_pct=10)
    assert implied is not None
    assert implied.quantize(Decimal("0.0001")) == Decimal("19.2857")
    assert capacity.implied_burst_reserve_pct(ratio=Decimal(1), standby_pct=10) == 0  # steady demand: no reserve
    assert capacity.implied_burst_reserve_pct(ratio=Decimal(2), standby_pct=0) == 50  # peak twice the mean: half
    assert capacity.peak_to_mean([]) is None
    zero = capacity.peak_to_mean([Decimal(0), Decimal(0)])
    assert zero is not None
    assert zero.ratio is None and capacity.implied_burst_reserve_pct(ratio=zero.ratio, standby_pct=10) is None


def _request(world, cycle, title, gpus, hours, *, team=None, pool=None, status=RequestStatus.DECIDED):
    return GpuRequest.objects.create(
        team=team or world.team_a, cycle=cycle, pool=pool or world.a100, title=title, gpu_count=gpus, min_gpu_count=1,
        duration_hours=hours, earliest_start=cycle.starts_at, latest_end=cycle.ends_at, status=status,
        submitted_at=cycle.starts_at - timedelta(days=3),
    )


@pytest.fixture
def weeks_of_demand(world):
    """a100 demand 100, 100, 100 and 140 GPU-hours in W07–W10 (no cycle in W06); plans for W07–W09."""
    published = {week: services.cycle_create(week=week, status=CycleStatus.PUBLISHED)
                 for week in ("2027-W07", "2027-W08", "2027-W09")}
    in_review = services.cycle_create(week="2027-W10", status=CycleStatus.IN_REVIEW)
    _request(world, published["2027-W07"], "w7", 10, 10)
    _request(world, published["2027-W08"], "w8", 10, 10)
    _request(world, published["2027-W09"], "w9", 8, 10)
    rejected = _request(world, published["2027-W09"], "w9 rejected", 4, 5, team=world.team_b)
    Decision.objects.create(request=rejected, cycle=published["2027-W09"], outcome="reject", requested_gpu_count=4,
                            rationale="No.", decided_by_name="Chair", team_name="Team B", request_title="w9 rejected",
                            cycle_week="2027-W09")
    _request(world, in_review, "w10", 10, 10, status=RequestStatus.SUBMITTED)
    _request(world, in_review, "w10 more", 4, 10, team=world.team_b, status=RequestStatus.SUBMITTED)
    _request(world, in_review, "w10 draft", 30, 30, pool=world.h100, status=RequestStatus.DRAFT)  # not demand
    publish([W(world.a100, world.team_a, 10, 0, 10, 1)], week="2027-W07", refs_are_requests=False, explanations=[])
    publish([W(world.a100, world.team_a, 12, 0, 10, 1)], week="2027-W08", refs_are_requests=False, explanations=[])
    publish([W(world.a100, world.team_a, 6, 0, 10, 1)], week="2027-W09", refs_are_requests=False, explanations=[])
    return world


def test_the_plan_of_a_pool(weeks_of_demand):
    plan = capacity.capacity_plan(now=NOW, trailing_weeks=5)
    assert plan.weeks == ("2027-W06", "2027-W07", "2027-W08", "2027-W09", "2027-W10")
    assert plan.counted_weeks == ("2027-W07", "2027-W08", "2027-W09", "2027-W10")  # W06 had no cycle
    a100 = next(p for p in plan.pools if p.label == "atlas/a100")
    assert [w.requested_gpu_hours for w in a100.weeks] == [100, 100, 100, 140]
    assert a100.peak_to_mean is not None and a100.implied_reserve_pct is not None
    assert a100.peak_to_mean.mean == 110 and a100.peak_week == "2027-W10"
    assert a100.implied_reserve_pct.quantize(Decimal("0.0001")) == Decimal("19.2857")  # (1 − 110/140) × 90
    assert a100.configured_reserve_gpu_hours == 64 * 168 * Decimal("0.2")
    # Turned away, published weeks only: W07 0; W08 0 (granted more than asked); W09 80 not rejected − 60 = 20.
    assert [w.turned_away_gpu_hours for w in a100.weeks] == [0, 0, 20, 0]
    assert a100.turned_away_gpu_hours == 20
    assert a100.turned_away_pct == Decimal(20) * 100 / 300
    h100 = next(p for p in plan.pools if p.label == "orion/h100")
    assert h100.peak_to_mean is not None and h100.peak_to_mean.ratio is None and h100.implied_reserve_pct is None


def test_the_page_csv_and_pdf_for_the_committee(client, weeks_of_demand, monkeypatch):
    monkeypatch.setattr("reports.dashboards.views.timezone.now", lambda: NOW)
    client.force_login(weeks_of_demand.member_a)
    assert client.get(reverse("reports:capacity-planning")).status_code == 403
    assert client.get(reverse("reports:capacity-planning-pdf")).status_code == 403
    client.force_login(weeks_of_demand.finance)
    body = client.get(reverse("reports:capacity-planning"), {"weeks": 5}).content.decode()
    assert "2027-W10 (peak)" in body and "implies a burst reserve of 19.3% of the pool; 20% is configured" in body
    assert '<script src="/static/plotly/plotly.min.js" defer></script>' in body
    rows = list(csv.DictReader(io.StringIO(
        client.get(reverse("reports:capacity-planning-csv"), {"weeks": 5}).content.decode())))
    a100 = next(row for row in rows if row["Pool"] == "atlas/a100")
    assert a100["Weeks counted"] == "4" and a100["Mean weekly demand GPU-h"] == "110.0"
    assert a100["Peak-to-mean"] == "1.273" and a100["Implied burst reserve %"] == "19.3"
    assert a100["Configured reserve GPU-h / week"] == "2150.4" and a100["Turned away GPU-h"] == "20.0"
    assert a100["Turned away % of demand"] == "6.7"
    response = client.get(reverse("reports:capacity-planning-pdf"), {"weeks": 5})
    assert response.status_code == 200 and response["Content-Type"] == "application/pdf"
    assert response.content.startswith(b"%PDF")
    require(shutil.which("pdftotext") is not None, "pdftotext (apt-get install poppler-utils)")
    require_chromium(", which draws the PDF's charts,")
    text = subprocess.run(["pdftotext", "-layout", "-", "-"], input=response.content, capture_output=True,
                          check=True).stdout.decode()
    assert "Capacity planning" in text and "19.3" in text and "atlas/a100" in text and "2027-W10 (peak)" in text
    # The chart: its caption, and the axis title and legend drawn as text inside the SVG.
    assert "Weekly demand per pool" in text and "GPU-hours requested" in text and "atlas/a100 demand" in text
    assert client.get(reverse("reports:capacity-planning"), {"weeks": "many"}).status_code == 400
    assert client.get(reverse("reports:capacity-planning"), {"weeks": "99"}).status_code == 400
