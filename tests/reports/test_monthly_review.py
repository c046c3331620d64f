"""The monthly review: utilization, queue wait and cost against the three months before; more than 10% off is
flagged (9% is not, 11% is), and a flag opens the archive page where the committee records its parameter review."""

from __future__ import annotations

import csv
import io
import re
from datetime import datetime, timedelta
from decimal import Decimal

import pytest
from django.urls import reverse

from allocations.models import UsageRecord
from reports.dashboards import monthly
from reports.dashboards.services import monthly_review_page_open
from reports.models import Page, PageKind
from reports.selectors import revision_latest
from tests.governed.version_one import pool_prices_set
from tests.readable import assert_readable

MONTH = "2027-05"
BASELINE = ("2027-02", "2027-03", "2027-04")
AFTER = datetime.fromisoformat("2027-06-15T12:00:00+00:00")
RATE = Decimal(20)  # GPU-hours used per hour of the month on a100, in the baseline months


def _month_hours(month: str) -> Decimal:
    start, end = monthly.month_bounds(month)
    return Decimal(int((end - start).total_seconds())) / 3600


def _use(pool, team, month: str, gpu_hours: Decimal, wait: Decimal = Decimal(10), key: str = "") -> None:
    start, _end = monthly.month_bounds(month)
    UsageRecord.objects.create(
        pool=pool, team=team, period_start=start, period_end=start + timedelta(hours=1), gpu_hours_used=gpu_hours,
        mean_utilization_pct=80, mean_queue_wait_minutes=wait, idempotency_key=key or f"{month}-{pool.slug}",
    )


@pytest.fixture
def priced(world):
    pool_prices_set({world.a100: "2.50", world.h100: "4.00"})
    for month in BASELINE:  # the same use per hour every month, whatever the month's length
        _use(world.a100, world.team_a, month, RATE * _month_hours(month))
    return world


def _metric(review, pool, key):
    row = next(row for row in review.rows if row.key == pool)
    return next(metric for metric in row.metrics if metric.key == key)


@pytest.mark.parametrize(("value", "flagged"), [
    (Decimal("109"), False), (Decimal("111"), True), (Decimal("110"), False), (Decimal("90"), False),
    (Decimal("89"), True), (Decimal("100"), False),
])
def test_flagged_only_beyond_ten_percent_either_way(value, flagged):
    assert monthly.is_flagged(value=value, baseline=Decimal(100)) is flagged


def test_no_baseline_no_flag():
    assert not monthly.is_flagged(value=Decimal(5), baseline=None)
    assert not monthly.is_flagged(value=Decimal(5), baseline=Decimal(0))
    assert monthly.deviation_pct(value=Decimal(5), baseline=None) is None


@pytest.mark.parametrize(("factor", "flagged"), [(Decimal("1.09"), False), (Decimal("1.11"), True)])
def test_utilization_and_cost_flagged_at_11_not_at_9_percent(priced, factor, flagged):
    _use(priced.a100, priced.team_a, MONTH, RATE * factor * _month_hours(MONTH))
    review = monthly.monthly_review(month=MONTH, now=AFTER)
    assert review.baseline_months == BASELINE and not review.to_date
    utilization = _metric(review, "atlas/a100", "utilization")
    assert utilization.baseline == RATE * 100 / 64
    assert utilization.value == RATE * factor * 100 / 64
    assert utilization.deviation_pct == (factor - 1) * 100
    cost = _metric(review, "atlas/a100", "cost")
    assert cost.value == RATE * factor * _month_hours(MONTH) * Decimal("2.50")
    assert cost.baseline == RATE * Decimal("2.50") * _month_hours(MONTH)
    assert utilization.flagged is flagged and cost.flagged is flagged
    assert _metric(review, "atlas/a100", "queue_wait").flagged is False  # 10 minutes every month
    assert review.flagged is flagged


def test_queue_wait_is_weighted_by_gpu_hours_and_compared_with_its_mean(priced):
    _use(priced.a100, priced.team_a, MONTH, Decimal(900), wait=Decimal(10), key="may-1")
    _use(priced.a100, priced.team_b, MONTH, Decimal(100), wait=Decimal(30), key="may-2")
    wait = _metric(monthly.monthly_review(month=MONTH, now=AFTER), "atlas/a100", "queue_wait")
    assert wait.value == Decimal(12) and wait.baseline == Decimal(10)  # (900×10 + 100×30) / 1000
    assert wait.flagged  # 20% up


def test_a_month_to_date_is_compared_per_hour_not_flagged_for_being_short(priced):
    now = datetime.fromisoformat("2027-05-16T00:00:00+00:00")
    _use(priced.a100, priced.team_a, MONTH, RATE * 15 * 24)  # 15 days at the usual rate
    review = monthly.monthly_review(month=MONTH, now=now)
    assert review.to_date
    cost = _metric(review, "atlas/a100", "cost")
    assert cost.baseline == RATE * Decimal("2.50") * 15 * 24 and not cost.flagged
    assert not _metric(review, "atlas/a100", "utilization").flagged


def test_months_without_usage_are_left_out_of_the_baseline(priced):
    UsageRecord.objects.filter(idempotency_key="2027-02-a100").delete()
    _use(priced.h100, priced.team_b, MONTH, Decimal(1000))
    _use(priced.a100, priced.team_a, MONTH, RATE * _month_hours(MONTH))
    review = monthly.monthly_review(month=MONTH, now=AFTER)
    assert _metric(review, "atlas/a100", "utilization").baseline == RATE * 100 / 64  # March and April only
    h100 = _metric(review, "orion/h100", "cost")
    assert h100.value == Decimal(4000) and h100.baseline is None and not h100.flagged  # a new pool: no baseline


def test_all_pools_together(priced):
    for month in BASELINE:
        _use(priced.h100, priced.team_b, month, Decimal(10) * _month_hours(month))
    _use(priced.a100, priced.team_a, MONTH, RATE * _month_hours(MONTH))
    _use(priced.h100, priced.team_b, MONTH, Decimal(10) * _month_hours(MONTH) * 2)
    review = monthly.monthly_review(month=MONTH, now=AFTER)
    utilization = _metric(review, monthly.ALL_POOLS, "utilization")
    assert utilization.value == (RATE + 20) * 100 / 96 and utilization.baseline == (RATE + 10) * 100 / 96
    cost = _metric(review, monthly.ALL_POOLS, "cost")
    assert cost.value == (RATE * Decimal("2.50") + 20 * 4) * _month_hours(MONTH)
    assert cost.flagged


def test_the_page_and_its_csv_for_the_committee_only(client, priced, monkeypatch):
    monkeypatch.setattr("reports.dashboards.views.timezone.now", lambda: AFTER)
    _use(priced.a100, priced.team_a, MONTH, RATE * Decimal("1.11") * _month_hours(MONTH))
    url = reverse("reports:monthly-review")
    client.force_login(priced.member_a)
    assert client.get(url, {"month": MONTH}).status_code == 403
    assert client.get(reverse("reports:monthly-review-csv"), {"month": MONTH}).status_code == 403
    client.force_login(priced.finance)
    body = client.get(url, {"month": MONTH}).content.decode()
    assert "2027-02, 2027-03, 2027-04" in body and "11.0%" in body and "Open the parameter review" in body
    rows = list(csv.DictReader(io.StringIO(client.get(reverse("reports:monthly-review-csv"),
                                                      {"month": MONTH}).content.decode())))
    flagged = {(row["Pool"], row["Metric"]) for row in rows if row["Flagged"] == "yes"}
    used = "Share of pool capacity used"
    assert flagged == {("atlas/a100", used), ("atlas/a100", "Cost"), ("All pools", used), ("All pools", "Cost")}
    assert client.get(url, {"month": "May"}).status_code == 400
    assert client.get(url, {"month": MONTH, "baseline": "0"}).status_code == 400


def test_a_flag_opens_the_archive_page_of_the_parameter_review(client, priced, monkeypatch):
    monkeypatch.setattr("reports.dashboards.views.timezone.now", lambda: AFTER)
    _use(priced.a100, priced.team_a, MONTH, RATE * Decimal("1.11") * _month_hours(MONTH))
    client.force_login(priced.reviewer)
    response = client.post(reverse("reports:monthly-review-open", args=[MONTH]), {"baseline": "3"})
    page = Page.objects.get(source_key=f"monthly-review:{MONTH}")
    assert response.status_code == 302 and response["Location"] == reverse("reports:page-edit", args=[page.slug])
    assert page.slug == "monthly-review-2027-05" and page.kind == PageKind.POLICY
    body = revision_latest(page=page).body
    assert "## Parameter review" in body and "atlas/a100: share of pool capacity used" in body and "(11.0%)" in body
    # The committee writes its review; the figures, opened again, are brought up to date around it.
    client.post(reverse("reports:page-edit", args=[page.slug]), {
        "title": page.title, "summary": "The review", "base_revision_id": page.latest_revision_id,
        "body": body.replace("_The committee records here", "We raise the a100 burst reserve to 25%. _Was"),
    })
    page.refresh_from_db()
    assert revision_latest(page=page).number == 2
    again = monthly_review_page_open(actor=priced.chair, month=MONTH, now=AFTER)
    assert again.pk == page.pk and revision_latest(page=again).number == 2  # nothing changed: no revision
    _use(priced.h100, priced.team_b, MONTH, Decimal(50))  # new figures for the month
    updated = monthly_review_page_open(actor=priced.chair, month=MONTH, now=AFTER)
    assert revision_latest(page=updated).number == 3
    assert "We raise the a100 burst reserve to 25%." in revision_latest(page=updated).body


def test_nothing_flagged_opens_nothing_and_only_the_committee_opens(client, priced):
    from django.core.exceptions import PermissionDenied, ValidationError

    _use(priced.a100, priced.team_a, MONTH, RATE * _month_hours(MONTH))
    with pytest.raises(ValidationError):
        monthly_review_page_open(actor=priced.chair, month=MONTH, now=AFTER)
    with pytest.raises(PermissionDenied):
        monthly_review_page_open(actor=priced.member_a, month=MONTH, now=AFTER)
    assert not Page.objects.filter(kind=PageKind.POLICY, slug__startswith="monthly-review-").exists()


def test_people_cannot_take_the_address_of_a_review_page(client, priced):
    client.force_login(priced.chair)
    response = client.post(reverse("reports:page-create"), {"slug": "monthly-review-2027-05", "title": "Mine",
                                                             "body": "x", "summary": "First"})
    assert response.status_code == 400 and "reserved" in response.content.decode()


# --- which way is better -----------------------------------------------------------------------------


def test_each_metric_says_which_way_is_better_and_a_change_is_good_or_bad_by_it(priced):
    # Less used than the baseline (bad), shorter queue waits (good), lower cost (good): all three go down.
    _use(priced.a100, priced.team_a, MONTH, RATE * Decimal("0.8") * _month_hours(MONTH), wait=Decimal(8))
    review = monthly.monthly_review(month=MONTH, now=AFTER)
    used, wait, cost = (_metric(review, "atlas/a100", key) for key in ("utilization", "queue_wait", "cost"))
    assert (used.better, wait.better, cost.better) == (monthly.HIGHER, monthly.LOWER, monthly.LOWER)
    assert used.deviation_pct < 0 and wait.deviation_pct < 0 and cost.deviation_pct < 0
    assert (used.change_is_good, wait.change_is_good, cost.change_is_good) == (False, True, True)
    assert used.change_text == "−20.0%" and wait.change_text == "−20.0%"
    assert cost.value_text.startswith("USD ") and used.value_text.endswith("%")


def test_no_change_or_no_baseline_is_neither_good_nor_bad(priced):
    _use(priced.a100, priced.team_a, MONTH, RATE * _month_hours(MONTH))
    _use(priced.h100, priced.team_b, MONTH, Decimal(1000))
    review = monthly.monthly_review(month=MONTH, now=AFTER)
    assert _metric(review, "atlas/a100", "utilization").change_is_good is None  # exactly the baseline
    assert _metric(review, "orion/h100", "cost").change_is_good is None  # a new pool: no baseline
    assert _metric(review, "orion/h100", "cost").change_text == ""


def test_the_page_marks_the_direction_and_colours_the_change_by_it(client, priced, monkeypatch):
    monkeypatch.setattr("reports.dashboards.views.timezone.now", lambda: AFTER)
    _use(priced.a100, priced.team_a, MONTH, RATE * Decimal("0.8") * _month_hours(MONTH), wait=Decimal(8))
    client.force_login(priced.finance)
    body = client.get(reverse("reports:monthly-review"), {"month": MONTH}).content.decode()
    rows = dict(re.findall(r'<tr class="[^"]*" data-metric="([a-z_]+)">(.*?)</tr>', body, re.S)[:3])
    assert "↑ better" in rows["utilization"] and "↓ better" in rows["queue_wait"] and "↓ better" in rows["cost"]
    assert 'class="change change-bad"' in rows["utilization"] and "worse" in rows["utilization"]
    assert 'class="change change-good"' in rows["queue_wait"] and "better</small>" in rows["queue_wait"]
    assert 'class="change change-good"' in rows["cost"] and "USD " in rows["cost"]
    flags = re.search(r'<article class="message error" id="flags">(.*?)</article>', body, re.S)
    assert flags is not None
    assert re.search(r'<li class="change-bad">atlas/a100: share of pool capacity used [^<]*worse; ↑ better\)</li>',
                     flags[1])
    assert re.search(r'<li class="change-good">atlas/a100: queue wait [^<]*better; ↓ better\)</li>', flags[1])
    assert_readable(body)
