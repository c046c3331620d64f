"""A month's statement of charges reconciles, to the cent, with the windows, the usage records and the budgets; the
CSV adds up to the page's total (docs/chargeback.md)."""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.urls import reverse

from allocations.models import AllocationWindow, Department, ElasticAction, ElasticActionKind, UsageRecord
from committee.selectors import department_charges
from reports.statements.selectors import statement_for_month
from tests.allocations.plans import W, publish
from tests.clock import FIXED_NOW
from tests.conftest import require
from tests.factories import file_request
from tests.governed.version_one import pool_prices_set
from tests.readable import assert_readable

pytestmark = pytest.mark.django_db


def printed_text(content: bytes) -> str:
    require(shutil.which("pdftotext") is not None, "pdftotext (apt-get install poppler-utils)")
    return " ".join(subprocess.run(["pdftotext", "-", "-"], input=content, capture_output=True,
                                   check=True).stdout.decode().split())


@pytest.fixture
def month(world: Any) -> dict[int, AllocationWindow]:
    research = Department.objects.create(name="Research", slug="research")
    world.team_a.department = research
    world.team_a.save()
    pool_prices_set({world.a100: "2.50", world.h100: "4.1234"})
    # 2026-W49 starts on Monday 30 November: a window at its first hour is November's.
    # The windows' refs (1001 to 1005, keyed 1 to 5) name no request: an emergency a test files is not among them.
    first = publish([W(world.a100, world.team_a, 8, 0, 24, ref=1001),
                     W(world.a100, world.team_a, 8, 48, 72, ref=1002),
                     W(world.h100, world.team_a, 4, 48, 58, ref=1003, tier="preemptible"),
                     W(world.a100, world.team_b, 2, 50, 53, ref=1004)])
    second = publish([W(world.h100, world.team_a, 3, 0, 7, ref=1005, tier="priority")], week="2026-W50")
    windows = {(w.request_ref or 0) - 1000: w for w in [*first.windows.all(), *second.windows.all()]}
    for key, (ref, hours) in enumerate([(2, "100"), (2, "50.5"), (3, "30"), (4, "6")]):
        window = windows[ref]
        UsageRecord.objects.create(pool=window.pool, team=window.team, window=window, period_start=window.start,
                                   period_end=window.end, gpu_hours_used=Decimal(hours), mean_utilization_pct=90,
                                   idempotency_key=f"u{key}")
    return windows


def test_a_months_statement_reconciles_with_the_windows_and_usage_to_the_cent(world, month):
    december = statement_for_month(month="2026-12")
    # W-2 standard 8 × 24 h × 2.50 = 480.00; W-3 preemptible 4 × 10 h × 4.1234 × 50 % = 82.468 → 82.47;
    # W-4 team B standard 2 × 3 h × 2.50 = 15.00; W-5 priority 3 × 7 h × 4.1234 = 86.5914 → 86.59.
    assert [(line.window_id, line.charge) for line in december.lines] == [
        (month[2].pk, Decimal("480.00")), (month[3].pk, Decimal("82.47")), (month[4].pk, Decimal("15.00")),
        (month[5].pk, Decimal("86.59"))]
    assert december.charge == Decimal("664.06")
    # The usage column is the usage records of each window; W-5 had none reported.
    assert [line.used_gpu_hours for line in december.lines] == [Decimal("150.5"), Decimal(30), Decimal(6), None]
    assert december.used_gpu_hours == sum(
        r.gpu_hours_used for r in UsageRecord.objects.filter(window__in=[month[k] for k in (2, 3, 4, 5)]))
    assert december.gpu_hours == sum(Decimal(str(month[k].gpu_hours)) for k in (2, 3, 4, 5))
    # A department's months add up to what its budget was charged in the quarter.
    research = Department.objects.get(slug="research")
    by_month = [statement_for_month(month=m, department=research) for m in ("2026-10", "2026-11", "2026-12")]
    assert [s.charge for s in by_month] == [Decimal(0), Decimal("480.00"), Decimal("649.06")]
    assert sum(s.charge for s in by_month) == department_charges(quarter="2026-Q4")[research.pk]
    assert [(t.team, t.charge) for t in by_month[2].teams()] == [("Team A", Decimal("649.06"))]


def test_the_page_and_its_csv_show_the_same_lines_and_total(client, world, month):
    client.force_login(world.finance)
    url = reverse("reports:statement", args=["2026-12"])
    page = client.get(url).content.decode()
    assert_readable(page)
    assert "Total USD 664.06 for" in page
    window = month[2]
    assert f'href="/windows/?week=2026-W49#window-{window.pk}">W-{window.pk}</a>' in page
    response = client.get(reverse("reports:statement-csv", args=["2026-12"]))
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [row["window"] for row in rows] == [f"W-{month[k].pk}" for k in (2, 3, 4, 5)]
    assert sum(Decimal(row["charge"]) for row in rows) == Decimal("664.06")
    assert rows[1]["tier"] == "preemptible" and rows[1]["discount_pct"] == "50" and rows[3]["used_gpu_hours"] == ""
    # One department's statement: its teams only.
    research_page = client.get(url, {"department": "research"}).content.decode()
    assert "Statement of Research, 2026-12" in research_page and "Total USD 649.06 for" in research_page
    research_rows = list(csv.DictReader(io.StringIO(
        client.get(reverse("reports:statement-csv", args=["2026-12"]), {"department": "research"}).content.decode())))
    assert sum(Decimal(row["charge"]) for row in research_rows) == Decimal("649.06")


@pytest.mark.parametrize(("month", "query", "status"), [
    ("2026-13", {}, 404), ("december", {}, 404), ("2026-12", {"department": "no-such"}, 404)])
def test_a_bad_month_or_department_is_not_found(client, world, month, query, status):
    client.force_login(world.finance)
    for name in ("reports:statement", "reports:statement-csv", "reports:statement-pdf"):
        assert client.get(reverse(name, args=[month]), query).status_code == status


def test_only_the_committee_reads_the_statements(client, world, month):
    client.force_login(world.member_a)
    assert client.get(reverse("reports:statement", args=["2026-12"])).status_code == 403
    assert client.get(reverse("reports:statement-csv", args=["2026-12"])).status_code == 403
    assert client.get(reverse("reports:statement-pdf", args=["2026-12"])).status_code == 403


def test_a_standard_window_is_credited_for_the_hours_it_lent_and_others_used_and_the_month_reconciles(client, world):
    research = Department.objects.create(name="Research", slug="research")
    world.team_a.department = research
    world.team_a.save()
    pool_prices_set({world.a100: "2.50"})
    # atlas/a100 has 64 GPUs: team A's standard 8 and team B's standard 52 leave 4 free, where B's preemptible
    # window runs.
    plan = publish([W(world.a100, world.team_a, 8, 48, 72, ref=1), W(world.a100, world.team_b, 52, 48, 72, ref=2),
                    W(world.a100, world.team_b, 4, 48, 72, ref=3, tier="preemptible")])
    windows = {w.request_ref: w for w in plan.windows.all()}
    lender, preemptible = windows[1], windows[3]
    # The hourly evaluation found A's window idle from hour 52 to 56 and offered 6 of its GPUs to preemptible work.
    ElasticAction.objects.create(
        kind=ElasticActionKind.IDLE, pool=world.a100, window=lender, team=world.team_a, gpus=6,
        utilization_pct=Decimal("10.0"), span_start=lender.start, span_end=lender.start + timedelta(hours=4),
        policy_version=1, started_at=lender.start + timedelta(hours=4), ended_at=lender.start + timedelta(hours=8),
        explanation="Granted but idle.")
    # B's preemptible work used 10 GPU-hours an hour from hour 52 to 57: 4 on the free GPUs, 6 on A's lent ones while
    # A lent them (hours 52 to 56, 24 GPU-hours); after the lend ended nothing is A's to credit.
    for hour in range(4, 9):
        start = lender.start + timedelta(hours=hour)
        UsageRecord.objects.create(pool=world.a100, team=world.team_b, window=preemptible, period_start=start,
                                   period_end=start + timedelta(hours=1), gpu_hours_used=Decimal(10),
                                   mean_utilization_pct=100, idempotency_key=f"lent-{hour}")
    december = statement_for_month(month="2026-12")
    lines = {line.window_id: line for line in december.lines}
    # A: 8 × 24 × 2.50 = 480.00, less 24 lent GPU-hours × 2.50 = 60.00: 420.00. B's windows lent nothing.
    assert (lines[lender.pk].lent_gpu_hours, lines[lender.pk].credit, lines[lender.pk].charge) == (
        Decimal("24.00"), Decimal("60.00"), Decimal("420.00"))
    assert [(lines[w.pk].credit, lines[w.pk].charge) for w in (windows[2], preemptible)] == [
        (Decimal(0), Decimal("3120.00")), (Decimal(0), Decimal("120.00"))]  # 52 × 24 × 2.50; 4 × 24 × 2.50 × 50 %
    # To the cent: each window's GPU-hours at its price, less the credit, add up to the statement and the budget.
    gross = sum((line.gpu_hours * line.price_per_gpu_hour * (Decimal("0.5") if line.tier == "preemptible" else 1)
                 for line in december.lines), Decimal(0))
    assert december.charge == gross - december.credit == Decimal("3660.00")
    assert department_charges(quarter="2026-Q4")[research.pk] == Decimal("420.00")
    client.force_login(world.finance)
    page = client.get(reverse("reports:statement", args=["2026-12"])).content.decode()
    assert_readable(page)
    assert "Credited USD 60.00 for 24 GPU-hours lent and used by others." in page and "USD 3,660.00" in page
    rows = list(csv.DictReader(io.StringIO(
        client.get(reverse("reports:statement-csv", args=["2026-12"])).content.decode())))
    assert sum(Decimal(row["charge"]) for row in rows) == Decimal("3660.00")
    assert [(row["lent_gpu_hours"], row["credit"]) for row in rows if row["window"] == f"W-{lender.pk}"] == [
        ("24.00", "60.00")]
    # The PDF, linked from the page, prints the same lines and totals.
    pdf_url = reverse("reports:statement-pdf", args=["2026-12"])
    assert f'href="{pdf_url}"' in page
    response = client.get(pdf_url)
    assert response["Content-Type"] == "application/pdf"
    assert response["Content-Disposition"] == 'attachment; filename="statement-2026-12.pdf"'
    text = printed_text(response.content)
    assert "Total USD 3,660.00 for 1,536 GPU-hours held (50 measured as used)." in text
    assert "Credited USD 60.00 for 24 GPU-hours lent and used by others." in text
    for line in december.lines:  # each window with its charge, and the team totals
        assert f"W-{line.window_id}" in text and f"USD {line.charge:,.2f}" in text
    assert "USD 420.00 after −USD 60.00 for 24 GPU-hours lent and used by others" in text
    assert "Team B USD 3,240.00 1,344 50" in text and "Team A USD 420.00 192 0" in text


def test_an_emergencys_window_is_charged_to_the_capacity_buffer_line_and_the_lines_reconcile(client, world, month):
    from committee.models import EmergencyRequest, EmergencyStatus
    from committee.selectors import department_budgets
    from committee.services import department_budget_set

    research = Department.objects.get(slug="research")
    department_budget_set(actor=world.finance, department=research, quarter="2026-Q4", quarterly=Decimal("10000"),
                          carry_over_pct=0, reason="FY plan.", now=FIXED_NOW)
    # An emergency's window in 2026-W51: 4 A100 × 30 h at 2.50 = 300.00, to Research's buffer line (5 % of
    # 10,000.00 = 500.00); the month's other Research windows (480.00 + 82.47 + 86.59 = 649.06) to the plans' line.
    emergency = file_request(world, title="The outage")
    plan = publish([W(world.a100, world.team_a, 4, 0, 30, ref=emergency.pk)], week="2026-W51")
    EmergencyRequest.objects.create(request=emergency, justification="The outage.", filed_by_name="Alex Lead",
                                    status=EmergencyStatus.PLACED, plan=plan, placed_at=FIXED_NOW)
    december = statement_for_month(month="2026-12")
    (lines,) = december.budget_lines  # team B has no department, so no budget line
    assert (lines.budget.name, lines.plans, lines.buffer, lines.charge) == (
        "Research", Decimal("649.06"), Decimal("300.00"), Decimal("949.06"))
    assert december.buffer_charge == Decimal("300.00") and december.charge == Decimal("964.06")
    assert [line.budget_line for line in december.lines] == ["plans", "plans", "", "plans", "buffer"]
    # The quarter's months add up, line by line, to what /budgets/ shows.
    (q4,) = department_budgets(quarter="2026-Q4")
    by_month = [statement_for_month(month=m, department=research) for m in ("2026-10", "2026-11", "2026-12")]
    assert sum(s.budget_lines[0].buffer for s in by_month) == q4.buffer_drawn == Decimal("300.00")
    assert sum(s.budget_lines[0].plans for s in by_month) == q4.planned_spent == Decimal("1129.06")
    assert (q4.buffer, q4.buffer_left) == (Decimal("500.00"), Decimal("200.00"))

    client.force_login(world.finance)
    page = client.get(reverse("reports:statement", args=["2026-12"]), {"department": "research"}).content.decode()
    assert_readable(page)
    row = page.split('id="budget-lines-research"')[1].split("</tr>")[0]
    assert all(f"USD {amount}" in row for amount in ("649.06", "300.00", "500.00", "200.00"))
    assert "5% of the budget" in row
    assert ("Of the total, emergencies' windows charged USD 300.00 to their departments' capacity buffer "
            "lines.") in page
    assert "emergency: capacity buffer line" in page.split(f'id="line-{plan.windows.get().pk}"')[1].split("</tr>")[0]
    rows = list(csv.DictReader(io.StringIO(client.get(
        reverse("reports:statement-csv", args=["2026-12"]), {"department": "research"}).content.decode())))
    assert sum(Decimal(r["charge"]) for r in rows if r["budget_line"] == "buffer") == Decimal("300.00")
    assert sum(Decimal(r["charge"]) for r in rows if r["budget_line"] == "plans") == Decimal("649.06")
    text = printed_text(client.get(reverse("reports:statement-pdf", args=["2026-12"]),
                                   {"department": "research"}).content)
    assert "Of the total, emergencies' windows charged USD 300.00 to their departments' capacity buffer lines." in text
    assert "By budget line" in text and "Buffer of 2026-Q4" in text and "emergency: capacity buffer line" in text
    assert "USD 649.06 USD 300.00 Research" in text and "USD 500.00 USD 200.00 5% of the budget" in text
