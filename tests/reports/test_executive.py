"""The executive summary of a month: revenue at risk (deferred, declined, not placed, placed after the deadline), delays
avoided by emergencies, utilization and idle month over month, purchases deferred and the buffer fund, each linked to
its source; bad months are not found and months without data say so; the PDF carries the same figures."""

from __future__ import annotations

import shutil
import subprocess
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from allocations.models import UsageRecord
from committee.models import GpuRequest, ImpactForecast
from governed.models import ChangeSource
from governed.services import policy_change_record
from reports.dashboards import monthly
from reports.executive import selectors, services
from reports.records import decision_record_slug
from tests.browser import browser_page, sign_in  # noqa: F401
from tests.clock import FIXED_NOW
from tests.committee.contended import contended_week
from tests.conftest import require
from tests.reports.executive_data import budgets_set, placed_emergency


def _forecast(gpu_request: GpuRequest, value: str, *, kind: str = "revenue", unit: str = "USD/week") -> None:
    ImpactForecast.objects.filter(request=gpu_request).update(estimated_value=Decimal(value), kind=kind,
                                                               value_unit=unit)


def test_revenue_at_risk_counts_deferred_unplaced_and_late_work_with_its_forecast(world):
    week = contended_week(world)  # 2026-W50, published: placed, shortened, not placed, deferred
    _forecast(week.placed, "50000")
    _forecast(week.shortened, "70000")  # shortened but placed by its (absent) deadline: not at risk
    _forecast(week.unplaced, "20000")
    _forecast(week.deferred, "30000")
    # The placed request's window ends Thursday 00:00; its deadline was Wednesday noon: placed late.
    GpuRequest.objects.filter(pk=week.placed.pk).update(deadline=world.cycle.starts_at + timedelta(days=2, hours=12))
    summary = selectors.executive_summary(month="2026-12", now=FIXED_NOW)
    assert summary.weeks == ("2026-W50",)
    reasons = {row.title: (row.reason, row.value) for row in summary.at_risk}
    assert reasons == {
        "Ranker retrain": ("late", Decimal("50000.00")),
        "Speech model": ("not_placed", Decimal("20000.00")),
        "Search index": ("deferred", Decimal("30000.00")),
    }
    assert [(t.unit, t.value, t.requests) for t in summary.totals_by_unit] == [("USD/week", Decimal("100000.00"), 3)]
    assert summary.revenue_forecasts == 4


def test_only_revenue_forecasts_count_and_units_are_not_added_together(world):
    week = contended_week(world)
    _forecast(week.unplaced, "20000", unit="USD")
    _forecast(week.deferred, "12", kind="retention", unit="% churn")
    summary = selectors.executive_summary(month="2026-12", now=FIXED_NOW)
    assert [(t.unit, t.value) for t in summary.totals_by_unit] == [("USD", Decimal("20000.00"))]
    assert summary.revenue_forecasts == 3


def test_the_page_links_each_week_at_risk_to_its_decision_record(world, client):
    week = contended_week(world)
    _forecast(week.deferred, "30000")
    client.force_login(world.member_a)  # anyone signed in: the archive is theirs too
    html = client.get(reverse("reports:executive-summary", args=["2026-12"])).content.decode()
    assert reverse("reports:page", args=[decision_record_slug("2026-W50")]) in html
    assert "Search index" in html and "30,000.00 USD/week" in html and "deferred" in html


def test_delays_avoided_are_the_hours_from_an_emergencys_placement_to_the_next_weekly_plan(world, clock, client):
    emergency = placed_emergency(world, clock)  # placed Wednesday 2 December 10:00; W50 starts Monday 7 December
    summary = selectors.executive_summary(month="2026-12", now=FIXED_NOW + timedelta(hours=1))
    (avoided,) = summary.avoided
    assert (avoided.title, avoided.hours_avoided, avoided.gpu_hours) == ("Fraud hotfix", Decimal("110.0"), 24)
    assert summary.avoided_a100_gpu_hours == 24  # a100 weighs 1 until a change
    assert summary.hours_avoided == Decimal("110.0")
    client.force_login(world.chair)
    html = client.get(reverse("reports:executive-summary", args=["2026-12"])).content.decode()
    assert "110.0 hours" in html and reverse("committee:emergency-detail", args=[emergency.pk]) in html
    assert selectors.executive_summary(month="2026-11", now=FIXED_NOW).avoided == ()


def _use(world: Any, month: str, share: Decimal) -> None:
    """Use `share` of every pool's GPU-hours in the month (64 + 32 GPUs), as one record per pool."""
    start, end = monthly.month_bounds(month)
    hours = Decimal(int((end - start).total_seconds())) / 3600
    for pool in (world.a100, world.h100):
        UsageRecord.objects.create(
            pool=pool, team=world.team_a, period_start=start, period_end=start + timedelta(hours=1),
            gpu_hours_used=pool.gpu_count * hours * share, mean_utilization_pct=80, mean_queue_wait_minutes=5,
            idempotency_key=f"{month}-{pool.slug}",
        )


def test_utilization_and_idle_month_over_month(world, client):
    _use(world, "2026-10", Decimal("0.5"))
    _use(world, "2026-11", Decimal("0.6"))
    summary = selectors.executive_summary(month="2026-11", now=FIXED_NOW)
    assert [(m.month, m.utilization_pct) for m in summary.trend] == [
        ("2026-06", None), ("2026-07", None), ("2026-08", None), ("2026-09", None),
        ("2026-10", Decimal("50.0")), ("2026-11", Decimal("60.0")),
    ]
    assert (summary.current.idle_pct, summary.utilization_change_pp) == (Decimal("40.0"), Decimal("10.0"))
    client.force_login(world.finance)
    html = client.get(reverse("reports:executive-summary", args=["2026-11"])).content.decode()
    assert "60.0% used" in html and "40.0% idle" in html and "+10.0 points from 2026-10" in html
    assert reverse("reports:monthly-review") + "?month=2026-11" in html  # the committee's source, linked
    client.force_login(world.member_a)
    html = client.get(reverse("reports:executive-summary", args=["2026-11"])).content.decode()
    assert "60.0% used" in html and reverse("reports:monthly-review") not in html  # not a page they may open


def test_purchases_deferred_and_the_buffer_fund_of_the_months_quarter(world, client):
    budgets_set(world, research="300000.00", product="180000.00")  # a buffer of 24,000.00
    fund = services.buffer_fund_open(actor=world.chair, quarter="2026-Q4", now=FIXED_NOW)
    services.purchase_deferred_record(actor=world.finance, fund=fund, amount="96000.00", item="Second H100 node",
                                      deferred_at=datetime.fromisoformat("2026-11-20T10:00:00+00:00"),
                                      reason="Not yet.", now=FIXED_NOW)
    services.buffer_spend_record(actor=world.finance, fund=fund, amount="6400.00", item="Cloud burst",
                                 spent_at=FIXED_NOW - timedelta(hours=2), reason="Emergency.", now=FIXED_NOW)
    november = selectors.executive_summary(month="2026-11", now=FIXED_NOW)
    assert (november.month_deferred_total, november.month_spent) == (Decimal("96000.00"), Decimal(0))
    assert november.fund is not None and november.fund.balance == Decimal("17600.00")
    december = selectors.executive_summary(month="2026-12", now=FIXED_NOW)
    assert (december.month_deferred_total, december.month_spent) == (Decimal(0), Decimal("6400.00"))
    client.force_login(world.member_b)
    html = client.get(reverse("reports:executive-summary", args=["2026-11"])).content.decode()
    assert "96,000.00 USD" in html and "Second H100 node" in html and "17,600.00 USD" in html
    assert reverse("reports:buffer-fund", args=["2026-Q4"]) in html
    assert "No buffer fund was opened for 2026-Q3." in client.get(
        reverse("reports:executive-summary", args=["2026-09"])).content.decode()


@pytest.mark.parametrize("month", ["2026-13", "2026-00", "november", "2026-1", "2027-01"])
def test_a_bad_or_future_month_is_not_found(world, client, month):
    client.force_login(world.chair)
    response = client.get(f"/archive/executive/{month}/")
    assert response.status_code == 404
    assert "give a month that has begun, as 2026-11" in response.content.decode()
    assert client.get(f"/archive/executive/{month}/pdf/").status_code == 404


def test_a_month_without_data_says_so_instead_of_showing_zeros(world, client):
    client.force_login(world.chair)
    html = client.get(reverse("reports:executive-summary", args=["2026-05"])).content.decode()
    assert "Docket holds nothing for 2026-05 yet" in html
    assert "No usage was reported for 2026-05" in html and "No emergency was placed in 2026-05." in html
    assert "0.0%" not in html and "0.00 USD" not in html


def test_the_default_month_is_the_last_whole_one_and_the_page_is_for_people_signed_in(world, client):
    assert client.get(reverse("reports:executive")).status_code == 302
    assert "/accounts/login/" in client.get(reverse("reports:executive-summary", args=["2026-11"])).url
    client.force_login(world.outsider)
    assert client.get(reverse("reports:executive")).url == reverse("reports:executive-summary", args=["2026-11"])
    assert reverse("reports:executive") in client.get(reverse("reports:dashboards")).content.decode()


def _pdf_text(content: bytes, tmp_path: Path) -> str:
    path = tmp_path / "summary.pdf"
    path.write_bytes(content)
    result = subprocess.run(["pdftotext", "-layout", str(path), "-"], capture_output=True, text=True,
                            check=True, timeout=60)
    return " ".join(result.stdout.split())


def test_the_pdf_carries_the_key_figures(world, client, tmp_path):
    require(shutil.which("pdftotext") is not None, "pdftotext (apt-get install poppler-utils)")
    week = contended_week(world)
    _forecast(week.deferred, "30000")
    _forecast(week.unplaced, "20000")
    _use(world, "2026-11", Decimal("0.25"))
    budgets_set(world)  # 200,000.00: a buffer of 10,000.00
    fund = services.buffer_fund_open(actor=world.chair, quarter="2026-Q4", now=FIXED_NOW)
    services.purchase_deferred_record(actor=world.chair, fund=fund, amount="96000.00", item="Second H100 node",
                                      deferred_at=FIXED_NOW, reason="Not yet.", now=FIXED_NOW)
    client.force_login(world.member_a)
    response = client.get(reverse("reports:executive-summary-pdf", args=["2026-12"]))
    assert response.status_code == 200 and response["Content-Type"] == "application/pdf"
    assert 'filename="docket-executive-summary-2026-12.pdf"' in response["Content-Disposition"]
    text = _pdf_text(response.content, tmp_path)
    assert "Executive summary 2026-12 (to date)" in text
    assert "50,000.00 USD/week from 2 requests" in text
    assert "Speech model" in text and "granted, not placed" in text and "Search index" in text
    assert "No usage was reported for 2026-12" in text  # November's use is not December's
    assert "96,000.00 USD of purchases deferred in 2026-12" in text
    assert "10,000.00 USD (5% of the departments' budgets for the quarter, 200,000.00 USD)" in text


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_the_executive_page_renders_in_a_browser(browser_page, world):  # noqa: F811
    _use(world, "2026-10", Decimal("0.5"))
    _use(world, "2026-11", Decimal("0.6"))
    budgets_set(world, research="300000.00", product="180000.00")  # a buffer of 24,000.00
    services.buffer_fund_open(actor=world.chair, quarter="2026-Q4", now=timezone.now())
    page = browser_page
    sign_in(page, "member_a")
    page.goto("/archive/dashboards/")
    page.get_by_role("link", name="Executive summary").click()
    page.wait_for_url("**/archive/executive/2026-11/")
    headline = page.locator("#headline")
    assert "60.0% / 40.0%" in headline.inner_text()
    assert "24,000.00 USD" in headline.inner_text()
    assert page.locator("#utilization progress").count() == 2  # one bar per month with usage
    page.get_by_role("link", name="← 2026-10").click()
    page.wait_for_url("**/archive/executive/2026-10/")
    assert "50.0% used" in page.locator("#utilization").inner_text()


def test_each_department_reads_its_quarter_spend_forecast_values_and_idle_charges(world, client, clock):
    """By hand, 2026-W50 (contended_week): Research holds team A, whose 40-GPU × 48 h a100 grant is placed (50,000
    USD/week forecast) and whose h100 grant is not (20,000); Product holds team B, whose a100 grant is placed shortened
    (70,000). a100 costs 2.50 a GPU-hour and weighs 1.5 A100-equivalents."""
    from allocations.models import AllocationWindow, Department
    from committee import services as committee_services
    from reports.executive.departments import department_quarters
    from tests.governed.version_one import version_1_set

    research = Department.objects.create(name="Research", slug="research", fair_share_weight=1)
    product = Department.objects.create(name="Product", slug="product", fair_share_weight=1)
    world.team_a.department, world.team_b.department = research, product
    world.team_a.save()
    world.team_b.save()
    version_1_set({"pool.atlas/a100.billing_weight": "1.5", "pool.atlas/a100.price_per_gpu_hour": "2.50"})
    committee_services.department_budget_set(actor=world.finance, department=research, quarter="2026-Q4",
                                             quarterly=Decimal(10000), carry_over_pct=0, reason="Plan.", now=FIXED_NOW)
    week = contended_week(world)
    _forecast(week.placed, "50000")
    _forecast(week.shortened, "70000")
    _forecast(week.unplaced, "20000")
    _forecast(week.deferred, "30000")  # deferred: neither granted nor unplaced work
    ranker = AllocationWindow.objects.get(request_ref=week.placed.pk)
    # The schedulers measured 1,500 of the window's 40 × 48 = 1,920 GPU-hours: 420 idle, charged 420 × 2.50.
    UsageRecord.objects.create(pool=world.a100, team=world.team_a, window=ranker, period_start=ranker.start,
                               period_end=ranker.end, gpu_hours_used=1500, mean_utilization_pct=70,
                               idempotency_key="ranker")
    after = ranker.end + timedelta(days=7)
    rows = {row.slug: row for row in department_quarters(quarter="2026-Q4", now=after)}
    assert list(rows) == ["product", "research"]  # by name; no team is outside a department
    r, p = rows["research"], rows["product"]
    assert r.budget is not None and (r.budget.spent, r.budget.available, r.budget.used_pct) == (
        Decimal("4800.00"), Decimal(10000), Decimal("48.0"))
    assert [(t.unit, t.value) for t in r.granted_value] == [("USD/week", Decimal("50000.00"))]
    assert [(t.unit, t.value) for t in r.unplaced_value] == [("USD/week", Decimal("20000.00"))]
    assert (r.idle_charge, r.idle_a100_gpu_hours, r.unmeasured_windows) == (Decimal("1050.00"), Decimal(630), 0)
    assert p.budget is None and [(t.unit, t.value) for t in p.granted_value] == [("USD/week", Decimal("70000.00"))]
    assert (p.unplaced_value, p.idle_charge, p.unmeasured_windows) == ((), Decimal(0), 1)  # B's window: no report
    # Before the windows end nothing is idle yet.
    assert all(row.idle_charge == 0 for row in department_quarters(quarter="2026-Q4", now=FIXED_NOW))

    clock.move_to(after, tick=False)
    client.force_login(world.member_a)
    html = client.get(reverse("reports:executive-summary", args=["2026-12"])).content.decode()
    row = html.split('id="department-research"')[1].split("</tr>")[0]
    assert "USD 4,800.00 of USD 10,000.00 (48.0%)" in row and "50,000.00 USD/week" in row
    assert "20,000.00 USD/week" in row and "USD 1,050.00" in row and "630 A100-equivalent GPU-hours idle" in row
    assert "1 window not measured" in html.split('id="department-product"')[1].split("</tr>")[0]


def test_utilization_across_pools_counts_in_a100_equivalents_at_each_weeks_billing_weight(world, client):
    # From 2026-W46 (Monday 9 November) an H100-hour counts two A100-hours. November has 720 hours: the H100's first
    # 192 (1 November, then W45) at weight 1, its last 528 at weight 2.
    policy_change_record(actor=None, changes={"pool.orion/h100.billing_weight": "2"}, effective_week="2026-W46",
                         reason="An H100 does the work of two A100s.", source=ChangeSource.LAB)
    start = monthly.month_bounds("2026-11")[0] + timedelta(days=16)  # in W47
    for pool, hours in ((world.a100, 64 * 720 // 2), (world.h100, 32 * 720)):  # half the A100s', all the H100s'
        UsageRecord.objects.create(pool=pool, team=world.team_a, period_start=start,
                                   period_end=start + timedelta(hours=1), gpu_hours_used=hours,
                                   mean_utilization_pct=80, idempotency_key=f"a100eq-{pool.slug}")
    (month,) = [m for m in selectors.executive_summary(month="2026-11", now=FIXED_NOW).trend if m.month == "2026-11"]
    # Used 23,040 + 23,040 × 2 = 69,120; capacity 64 × 720 + 32 × (192 + 528 × 2) = 86,016: 80.4 %, where the
    # GPU-hours alone would say 46,080 of 69,120, 66.7 %.
    assert (month.a100_used_gpu_hours, month.a100_capacity_gpu_hours, month.utilization_pct) == (
        Decimal(69120), Decimal(86016), Decimal("80.4"))
    assert monthly.month_figures(months=["2026-11"], now=FIXED_NOW)["2026-11"]["orion/h100"].utilization_pct == 100
    client.force_login(world.finance)
    html = client.get(reverse("reports:executive-summary", args=["2026-11"])).content.decode()
    assert "80.4% used" in html and "69,120 / 86,016" in html and "across pools in A100-equivalent GPU-hours" in html
    assert "Realized value per A100-equivalent GPU-hour" in html  # every sum across pools names the common unit
