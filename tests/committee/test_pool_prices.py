"""A pool's price per GPU-hour is a governed value with effective weeks: a change from week W+1 leaves week W's charges,
statements and costs as they were, and a month across the change prices each week at its own price
(docs/chargeback.md)."""

from __future__ import annotations

import csv
import io
from decimal import Decimal
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from allocations.models import Department, UsageRecord
from allocations.selectors import pool_prices
from committee import selectors
from committee.selectors import department_charges
from governed.models import ChangeSource, PolicyChange
from governed.services import policy_change_record
from policy import parameters
from reports.statements.selectors import statement_for_month
from tests.allocations.plans import W, publish, week_start
from tests.governed.version_one import pool_prices_set
from tests.readable import assert_readable

pytestmark = pytest.mark.django_db

A100_PRICE = "pool.atlas/a100.price_per_gpu_hour"


def _reprice(price: str, week: str) -> PolicyChange:
    return policy_change_record(actor=None, changes={A100_PRICE: price}, effective_week=week,
                                reason="The new rate card.", source=ChangeSource.LAB)


@pytest.fixture
def two_weeks(world: Any) -> dict[int, Any]:
    """Research's team A: 8 GPUs × 24 h on atlas/a100 in 2026-W49 (2 December) and in 2026-W50 (7 December)."""
    research = Department.objects.create(name="Research", slug="research")
    world.team_a.department = research
    world.team_a.save()
    pool_prices_set({world.a100: "2.50"})
    first = publish([W(world.a100, world.team_a, 8, 48, 72, ref=1)])
    second = publish([W(world.a100, world.team_a, 8, 0, 24, ref=2)], week="2026-W50")
    return {w.request_ref or 0: w for w in [*first.windows.all(), *second.windows.all()]}


def test_a_price_change_from_next_week_leaves_this_weeks_charges_and_prices_next_week_at_the_new_price(
    world, two_weeks
):
    before = department_charges(quarter="2026-Q4")
    assert list(before.values()) == [Decimal("960.00")]  # 2 × 192 GPU-hours × 2.50
    _reprice("3.1234", "2026-W50")
    december = statement_for_month(month="2026-12")
    # W49's window keeps 2.50; W50's is priced at the price in force in its week: 192 × 3.1234 = 599.6928 → 599.69.
    assert [(line.week, line.price_per_gpu_hour, line.charge) for line in december.lines] == [
        ("2026-W49", Decimal("2.50"), Decimal("480.00")), ("2026-W50", Decimal("3.1234"), Decimal("599.69"))]
    assert december.charge == Decimal("1079.69") == sum(department_charges(quarter="2026-Q4").values())
    assert pool_prices(keys=[(world.a100.pk, "2026-W49"), (world.a100.pk, "2026-W50")]) == {
        (world.a100.pk, "2026-W49"): Decimal("2.50"), (world.a100.pk, "2026-W50"): Decimal("3.1234")}
    # The admin shows this week's (2026-W49) price.
    assert world.a100.price_per_gpu_hour == Decimal("2.50")


def test_the_statement_page_and_csv_show_each_weeks_price(client, world, two_weeks):
    _reprice("3", "2026-W50")
    client.force_login(world.finance)
    page = client.get(reverse("reports:statement", args=["2026-12"])).content.decode()
    assert_readable(page)
    assert "2.50" in page and "3.00" in page and "1,056.00" in page  # 480.00 + 576.00
    rows = list(csv.DictReader(io.StringIO(
        client.get(reverse("reports:statement-csv", args=["2026-12"])).content.decode())))
    assert [(row["week"], row["price_per_gpu_hour"], row["charge"]) for row in rows] == [
        ("2026-W49", "2.5", "480.00"), ("2026-W50", "3", "576.00")]


@pytest.mark.parametrize("bad", ["-1", "2.12345", "cheap", "1000001"])
def test_a_bad_price_is_refused_and_changes_nothing(world, two_weeks, bad):
    changes = PolicyChange.objects.count()
    with pytest.raises(ValidationError):
        _reprice(bad, "2026-W50")
    assert PolicyChange.objects.count() == changes
    assert statement_for_month(month="2026-12").charge == Decimal("960.00")
    _parsed, problems = parameters.changes_errors({"pool.a100.price_per_gpu_hour": bad})
    assert problems  # the policy lab's form refuses it in the same terms
    assert parameters.changes_errors({"pool.a100.price_per_gpu_hour": "3.1234"})[1] == []  # four decimals are fine


def test_a_price_change_is_in_the_policy_history_as_a_price(world, two_weeks):
    _reprice("3", "2026-W50")
    (entry,) = [c for c in selectors.policy_history() if c.kind_code == "prices"]
    assert entry.reason == "The new rate card." and [(f.field, f.new) for f in entry.changes] == [
        (A100_PRICE, "3")]
    assert not [c for c in selectors.policy_history() if c.kind_code == "pool_reserves"]


def test_the_team_history_costs_each_weeks_usage_at_its_own_price(client, world, two_weeks):
    _reprice("3", "2026-W50")
    for key, week in enumerate(("2026-W49", "2026-W50")):
        start = week_start(week)
        UsageRecord.objects.create(pool=world.a100, team=world.team_a, period_start=start,
                                   period_end=start.replace(hour=start.hour + 1), gpu_hours_used=Decimal(10),
                                   mean_utilization_pct=90, idempotency_key=f"p{key}")
    client.force_login(world.member_a)
    history = client.get(reverse("reports:team-history", args=[world.team_a.slug]),
                         {"until": "2026-W50"}).context["history"]
    costs = {row.week: row.cost for row in history.weeks if row.week in ("2026-W49", "2026-W50")}
    assert costs == {"2026-W49": Decimal("25.00"), "2026-W50": Decimal("30.00")}
