"""Usage records and last week's windows pre-fill a team's next usage report."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from django.utils import timezone

from allocations import selectors
from allocations.models import UsageRecord
from committee import weeks
from tests.allocations.plans import W, publish


def _last_week():
    label = weeks.week_label(timezone.localdate() - timedelta(days=7))
    return label, weeks.week_bounds(label)


def test_selector_sums_granted_windows_and_reported_use(world):
    label, (since, until) = _last_week()
    publish([W(world.a100, world.team_a, 10, 0, 48, ref=1), W(world.a100, world.team_b, 8, 0, 10, ref=2)],
            week=label)
    for day, (used, util) in enumerate([(200, 90), (100, 60)]):
        UsageRecord.objects.create(pool=world.a100, team=world.team_a, period_start=since + timedelta(days=day),
                                   period_end=since + timedelta(days=day + 1), gpu_hours_used=used,
                                   mean_utilization_pct=util, idempotency_key=f"k{day}")
    initial = selectors.usage_report_initial(team=world.team_a, since=since, until=until)
    assert initial == {"gpu_hours_granted": Decimal("480.0"), "gpu_hours_used": Decimal("300.0"),
                       "mean_utilization_pct": Decimal("80.0")}
    # Team B had a window but reported no use: only what is known is filled in.
    assert selectors.usage_report_initial(team=world.team_b, since=since, until=until) == {
        "gpu_hours_granted": Decimal("80.0")}


def test_new_request_form_is_pre_filled(world, client):
    label, (since, _until) = _last_week()
    publish([W(world.a100, world.team_a, 10, 0, 48, ref=1)], week=label)
    UsageRecord.objects.create(pool=world.a100, team=world.team_a, period_start=since,
                               period_end=since + timedelta(days=2), gpu_hours_used=240, mean_utilization_pct=75,
                               idempotency_key="k")
    client.force_login(world.lead_a)
    form = client.get("/requests/new/").context["forms"]["usage"]
    assert form["gpu_hours_granted"].value() == Decimal("480.0")
    assert form["gpu_hours_used"].value() == Decimal("240.0")
    assert form["mean_utilization_pct"].value() == Decimal("75.0")


def test_nothing_to_pre_fill_leaves_the_form_empty(world, client):
    client.force_login(world.member_b)
    form = client.get("/requests/new/").context["forms"]["usage"]
    assert form["gpu_hours_used"].value() is None
