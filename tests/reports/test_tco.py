"""Total cost of ownership: the seed's V100-vs-A100 case from docs/tco.md, the sensitivities, the page and its PDF."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.urls import reverse

from allocations.models import UsageRecord
from committee.models import GpuRequest, ImpactForecast
from reports.dashboards import tco
from tests.browser import require_chromium
from tests.conftest import require
from tests.factories import file_request
from tests.governed.version_one import pool_prices_set

CENT = Decimal("0.01")


def totals(scenario: tco.Scenario = tco.SEED_SCENARIO, a100: tco.HardwareOption = tco.SEED_A100,
           v100: tco.HardwareOption = tco.SEED_V100) -> tuple[tco.OptionCost, tco.OptionCost, Decimal]:
    comparison = tco.compare(options=[a100, v100], scenario=scenario)
    a, v = comparison.options
    return a, v, (v.total - a.total) * 100 / a.total


def test_the_seed_case_reproduces_the_worked_example_step_by_step():
    a, v, more_pct = totals()
    # docs/tco.md, step 1: the load grows linearly from 16 to 20.8 A100-equivalents over 26 weeks.
    assert a.weeks[0].load_gpus.quantize(Decimal("0.0001")) == Decimal("16.1846")
    assert a.weeks[-1].load_gpus == Decimal("20.8") and v.weeks[-1].needed_gpus == Decimal(52)
    # Step 2: the A100s ordered in week 1 arrive in week 7 (six weeks), the V100s in week 2.
    assert [w.installed_gpus > 0 for w in a.weeks[:7]] == [False] * 6 + [True]
    assert [w.installed_gpus > 0 for w in v.weeks[:2]] == [False, True]
    assert a.gpus_bought.quantize(Decimal("0.0001")) == Decimal("19.6923")  # the load of week 20
    assert v.gpus_bought.quantize(Decimal("0.0001")) == Decimal("51.5385")  # the load of week 25 / 0.4
    # Steps 3 to 6: the figures of the example's table.
    assert [x.quantize(CENT) for x in (a.capex, a.energy, a.maintenance, a.waiting_gpu_hours, a.queue, a.total)] == [
        Decimal("196923.08"), Decimal("5424.59"), Decimal("5519.53"), Decimal("20501.17"), Decimal("68268.89"),
        Decimal("276136.09")]
    assert [x.quantize(CENT) for x in (v.capex, v.energy, v.maintenance, v.waiting_gpu_hours, v.queue, v.total)] == [
        Decimal("283461.54"), Decimal("13041.00"), Decimal("17692.31"), Decimal("3494.40"), Decimal("11636.35"),
        Decimal("325831.20")]
    # The seed's FAQ: the used V100s cost 18% more over six months.
    assert more_pct.quantize(Decimal("0.1")) == Decimal("18.0")
    assert a.work_gpu_hours == v.work_gpu_hours == Decimal("80774.4")
    assert a.cost_per_work_gpu_hour.quantize(CENT) == Decimal("3.42")
    assert v.cost_per_work_gpu_hour.quantize(CENT) == Decimal("4.03")
    # The chart's line: before the A100s arrive only the queue costs; in week 7 their hardware is paid.
    cumulative = [x.quantize(CENT) for x in a.cumulative()]
    assert cumulative[5] == Decimal("55875.15") and cumulative[6] == Decimal("218834.69")
    assert cumulative[-1] == a.total.quantize(CENT)


def test_more_growth_makes_the_slower_option_worse():
    margins = [totals(replace(tco.SEED_SCENARIO, growth_pct=Decimal(g)))[2] for g in (0, 30, 60, 100)]
    assert margins == sorted(margins) and margins[0] < 15 < 18 < margins[2]


def test_dearer_energy_makes_the_hungrier_option_worse():
    margins = [totals(replace(tco.SEED_SCENARIO, energy_price_per_kwh=Decimal(p)))[2] for p in ("0.10", "0.30")]
    assert margins[0] < totals()[2] < margins[1]


def test_a_dearer_queue_or_a_longer_wait_favours_buying_now():
    dearer_queue = totals(replace(tco.SEED_SCENARIO, queue_cost_per_gpu_hour=Decimal(6)))[2]
    longer_wait = totals(a100=replace(tco.SEED_A100, delivery_weeks=10))[2]
    assert dearer_queue < 18 and longer_wait < 18
    # With no queue cost the waiting is free and only the hardware counts: V100s are 51% dearer.
    assert totals(replace(tco.SEED_SCENARIO, queue_cost_per_gpu_hour=Decimal(0)))[2].quantize(Decimal(1)) == 51


def test_an_option_delivered_at_once_never_makes_work_wait():
    now = replace(tco.SEED_V100, delivery_weeks=0)
    _a, v, _ = totals(v100=now)
    assert v.waiting_gpu_hours == 0 and v.queue == 0 and v.gpus_bought == Decimal(52)


# --- the page --------------------------------------------------------------------------------------------

SEED_QUERY = {
    "horizon_weeks": "26", "start_load_gpus": "16", "growth_pct": "30", "energy_price_per_kwh": "0.15", "pue": "1.5",
    "queue_cost_per_gpu_hour": "3.33",
    "o1_name": "A100 (new)", "o1_price": "10000", "o1_relative_performance": "1", "o1_watts": "400",
    "o1_maintenance_per_year": "800", "o1_delivery_weeks": "6",
    "o2_name": "V100 (used)", "o2_price": "5500", "o2_relative_performance": "0.4", "o2_watts": "300",
    "o2_maintenance_per_year": "800", "o2_delivery_weeks": "1",
}


def _pool_history(world: Any) -> None:
    """Week 2026-W47 on atlas/a100 (64 GPUs at 2.00): 1,536 GPU-hours used of 10,752 and a 30-minute queue."""
    pool_prices_set({world.a100: "2"})
    monday = datetime(2026, 11, 16, tzinfo=UTC)
    for day in range(2):
        UsageRecord.objects.create(
            pool=world.a100, team=world.team_a, period_start=monday + timedelta(days=day),
            period_end=monday + timedelta(days=day + 1), gpu_hours_used=Decimal(768), mean_utilization_pct=90,
            mean_queue_wait_minutes=Decimal(30), idempotency_key=f"d{day}",
        )
    from committee.models import ReviewCycle
    from committee.weeks import cycle_schedule
    cycle = ReviewCycle.objects.create(week="2026-W47", **cycle_schedule("2026-W47"))
    for team, title, value, unit in [(world.team_a, "Ranker", "16800", "USD/week"),
                                     (world.team_b, "Churn model", "2", "% churn")]:
        request = file_request(world, team=team, title=title)
        GpuRequest.objects.filter(pk=request.pk).update(cycle=cycle, pool=world.a100)
        ImpactForecast.objects.update_or_create(request=request, defaults={
            "kind": "revenue", "estimated_value": Decimal(value), "value_unit": unit, "confidence": "high",
            "narrative": "x"})


@pytest.mark.django_db
def test_the_committee_sees_the_pools_costs_and_the_seed_case(client, world):
    _pool_history(world)
    client.force_login(world.finance)
    body = client.get(reverse("reports:tco"), {"last_week": "2026-W47", "weeks": "1"}).content.decode()
    # 64 GPUs × 168 h × 2.00 = 21,504 over 1,536 used GPU-hours: 14.00 per effective GPU-hour, at 14.3% used.
    assert "<td>14.3%</td>" in body and "<td>14.00</td>" in body
    # Queue-time cost: 16,800 USD/week is 100 an hour, × 0.5 h of measured wait; the "% churn" forecast has no price.
    assert "<td>50 <small>(1 forecast in another unit not counted)</small></td>" in body
    # With no calculator input, the seed's case: the V100s cost 18.0% more.
    assert "+18.0%" in body and "276,136" in body and "325,831" in body
    assert 'data-figure-id="chart-tco"' in body and "/static/plotly/plotly.min.js" in body
    assert client.get(reverse("reports:tco"), SEED_QUERY).content.decode().count("+18.0%") == 1


@pytest.mark.django_db
def test_every_bad_field_is_named_at_once_and_nothing_is_computed(client, world):
    client.force_login(world.chair)
    bad = {**SEED_QUERY, "o2_relative_performance": "0", "pue": "0.5", "o1_price": "cheap", "o1_delivery_weeks": "26",
           "o3_name": "H100", "horizon_weeks": ""}
    response = client.get(reverse("reports:tco"), bad)
    body = response.content.decode()
    assert response.status_code == 400 and 'id="tco-table"' not in body
    for field in ("o2_relative_performance", "pue", "o1_price", "o3_price", "o3_watts", "horizon_weeks"):
        assert f'data-field="{field}"' in body, field
    assert "Ensure this value is greater than or equal to 0.01." in body
    assert "Fill in every field of the third option, or none." in body
    assert client.get(reverse("reports:tco"), {**SEED_QUERY, "o1_delivery_weeks": "26"}).status_code == 400
    assert "The delivery must come within the horizon." in client.get(
        reverse("reports:tco"), {**SEED_QUERY, "o1_delivery_weeks": "26"}).content.decode()
    assert client.get(reverse("reports:tco-pdf"), bad).status_code == 400


@pytest.mark.django_db
def test_a_third_option_joins_the_comparison(client, world):
    client.force_login(world.chair)
    third = {"o3_name": "H100", "o3_price": "25000", "o3_relative_performance": "2.5", "o3_watts": "700",
             "o3_maintenance_per_year": "1500", "o3_delivery_weeks": "12"}
    body = client.get(reverse("reports:tco"), {**SEED_QUERY, **third}).content.decode()
    assert body.count("<td><strong>H100</strong></td>") == 1 and "cheapest" in body


@pytest.mark.django_db
def test_the_page_is_the_committees(client, world):
    client.force_login(world.member_a)
    assert client.get(reverse("reports:tco")).status_code == 403
    assert client.get(reverse("reports:tco-pdf")).status_code == 403


@pytest.mark.django_db
def test_the_pdf_has_the_seed_case_and_its_chart(client, world):
    _pool_history(world)
    client.force_login(world.finance)
    response = client.get(reverse("reports:tco-pdf"), {"last_week": "2026-W47", "weeks": "1"})
    assert response.status_code == 200 and response.content.startswith(b"%PDF")
    require(shutil.which("pdftotext") is not None, "pdftotext (apt-get install poppler-utils)")
    require_chromium(", which draws the PDF's charts,")
    text = subprocess.run(["pdftotext", "-layout", "-", "-"], input=response.content, capture_output=True,
                          check=True).stdout.decode()
    assert "Cost of ownership" in text and "atlas/a100" in text and "14.00" in text
    assert "V100 (used)" in text and "+18.0%" in text and "276,136" in text and "325,831" in text
    assert "Energy 0.15 USD per kWh, PUE 1.5, queue cost 3.33 USD per waiting A100-hour." in text
    assert "10,000" in text and "5,500" in text
    # The chart: its caption and its axis title, drawn as text in the SVG.
    assert "Cumulative cost over the horizon" in text and "cumulative cost" in text


@pytest.mark.django_db
def test_changing_the_span_keeps_the_calculators_case(client, world):
    client.force_login(world.chair)
    body = client.get(reverse("reports:tco"), {**SEED_QUERY, "queue_cost_per_gpu_hour": "0"}).content.decode()
    assert '<input type="hidden" name="queue_cost_per_gpu_hour" value="0">' in body and "+51.2%" in body
