"""Usage records and last week's windows pre-fill a team's next usage report: the team and pool it is filed for."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

from django.utils import timezone

from allocations import selectors
from allocations.models import UsageRecord
from committee import weeks
from committee.models import GpuRequest, TeamMembership
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


def _record(world, team, pool, hours, utilization, *, key, start=None, days=2):
    _label, (since, _until) = _last_week()
    start = start or since
    return UsageRecord.objects.create(pool=pool, team=team, period_start=start,
                                      period_end=start + timedelta(days=days), gpu_hours_used=hours,
                                      mean_utilization_pct=utilization, idempotency_key=key)


def test_the_form_pre_fills_the_week_before_intake(world):
    # Filed in the week before the allocation week (intake): last week is two weeks before the allocation week.
    label, _bounds = _last_week()
    assert weeks.reported_usage_week(world.cycle.week) == label


def test_selector_counts_only_the_pool_asked_for(world):
    _label, (since, until) = _last_week()
    _record(world, world.team_a, world.a100, 240, 75, key="a")
    _record(world, world.team_a, world.h100, 100, 50, key="h")
    on_a100 = selectors.usage_report_initial(team=world.team_a, pool=world.a100, since=since, until=until)
    assert on_a100 == {"gpu_hours_used": Decimal("240.0"), "mean_utilization_pct": Decimal("75.0")}
    on_h100 = selectors.usage_report_initial(team=world.team_a, pool=world.h100, since=since, until=until)
    assert on_h100 == {"gpu_hours_used": Decimal("100.0"), "mean_utilization_pct": Decimal("50.0")}


def test_new_request_form_is_pre_filled_for_the_team_and_pool_chosen(world, client):
    label, _bounds = _last_week()
    publish([W(world.a100, world.team_a, 10, 0, 48, ref=1)], week=label)
    _record(world, world.team_a, world.a100, 240, 75, key="k")
    client.force_login(world.lead_a)
    response = client.get("/requests/new/", {"team": world.team_a.pk, "pool": world.a100.pk})
    form = response.context["forms"]["usage"]
    assert form["gpu_hours_granted"].value() == Decimal("480.0")
    assert form["gpu_hours_used"].value() == Decimal("240.0")
    assert form["mean_utilization_pct"].value() == Decimal("75.0")
    assert response.context["forms"]["request"]["pool"].value() == world.a100.pk
    body = response.content.decode()
    assert (f"The schedulers measured 240 GPU-hours used at 75.0% mean utilization for Team A on atlas/a100 "
            f"in week {label}.") in body


def test_a_member_of_two_teams_gets_the_usage_of_the_team_chosen(world, client):
    """lead_a is in team A and team B: each team's own measurement, not the first team's for both."""
    TeamMembership.objects.create(user=world.lead_a, team=world.team_b)
    _record(world, world.team_a, world.a100, 240, 75, key="a")
    _record(world, world.team_b, world.a100, 96, 40, key="b")
    client.force_login(world.lead_a)
    for team, used, utilization in ((world.team_a, "240.0", "75.0"), (world.team_b, "96.0", "40.0")):
        response = client.get("/requests/new/", {"team": team.pk, "pool": world.a100.pk})
        assert response.status_code == 200
        form = response.context["forms"]["usage"]
        assert (form["gpu_hours_used"].value(), form["mean_utilization_pct"].value()) == (
            Decimal(used), Decimal(utilization))
        assert response.context["team_form"]["team"].value() == team.pk
        # What htmx swaps in when the team select changes: the same figures, from the same selector.
        fragment = client.get("/requests/new/usage/", {"team": team.pk, "pool": world.a100.pk},
                              headers={"HX-Request": "true"})
        assert fragment.status_code == 200
        html = fragment.content.decode()
        assert f'name="usage-gpu_hours_used" value="{used}"' in html
        assert f'name="usage-mean_utilization_pct" value="{utilization}"' in html
        assert f"for {team.name} on atlas/a100" in html


def test_no_measurement_is_said_plainly_and_leaves_the_figures_to_the_team(world, client):
    label, _bounds = _last_week()
    TeamMembership.objects.create(user=world.lead_a, team=world.team_b)
    _record(world, world.team_a, world.h100, 240, 75, key="a")  # team A's, not team B's
    client.force_login(world.lead_a)
    for response in (client.get("/requests/new/", {"team": world.team_b.pk, "pool": world.h100.pk}),
                     client.get("/requests/new/usage/", {"team": world.team_b.pk, "pool": world.h100.pk})):
        assert response.status_code == 200
        body = response.content.decode()
        assert (f"No usage measured for Team B on orion/h100 last week ({label}); enter your own figure."
                in body)
        assert 'name="usage-gpu_hours_used" value=' not in body


def test_without_a_pool_nothing_is_pre_filled_and_the_form_says_why(world, client):
    _record(world, world.team_a, world.a100, 240, 75, key="a")
    client.force_login(world.lead_a)
    response = client.get("/requests/new/")
    assert response.context["forms"]["usage"]["gpu_hours_used"].value() is None
    assert "Choose the GPU pool above" in response.content.decode()


def test_nothing_to_pre_fill_leaves_the_form_empty(world, client):
    client.force_login(world.member_b)
    form = client.get("/requests/new/", {"team": world.team_b.pk, "pool": world.a100.pk}).context["forms"]["usage"]
    assert form["gpu_hours_used"].value() is None


def test_another_teams_usage_is_refused(world, client):
    """member_b is only in team B: asking for team A's figures is refused, and shows none of them."""
    _record(world, world.team_a, world.a100, 240, 75, key="a")
    client.force_login(world.member_b)
    page = client.get("/requests/new/", {"team": world.team_a.pk, "pool": world.a100.pk})
    assert page.status_code == 400
    body = page.content.decode()
    assert "Choose one of your own teams and an existing GPU pool." in body
    assert "240.0" not in body and "Team A" not in body
    for params in ({"team": world.team_a.pk, "pool": world.a100.pk}, {"team": world.team_b.pk, "pool": 9999},
                   {"team": "x"}):
        fragment = client.get("/requests/new/usage/", params)
        assert fragment.status_code == 400
        assert "240.0" not in fragment.content.decode()
    assert GpuRequest.objects.count() == 0


def test_a_figure_the_member_typed_is_kept_when_the_team_changes(world, client):
    TeamMembership.objects.create(user=world.lead_a, team=world.team_b)
    _record(world, world.team_a, world.a100, 240, 75, key="a")
    _record(world, world.team_b, world.a100, 96, 40, key="b")
    client.force_login(world.lead_a)
    # Team A's figures were pre-filled; the member typed 50 over "used" and left utilization as it was.
    html = client.get("/requests/new/usage/", {
        "team": world.team_b.pk, "pool": world.a100.pk,
        "usage-gpu_hours_used": "50", "prefilled-gpu_hours_used": "240.0",
        "usage-mean_utilization_pct": "75.00", "prefilled-mean_utilization_pct": "75.0",
    }).content.decode()
    assert 'name="usage-gpu_hours_used" value="50"' in html
    assert 'name="usage-mean_utilization_pct" value="40.0"' in html
    assert 'name="prefilled-gpu_hours_used" value="96.0"' in html


def test_editing_shows_the_measurement_beside_the_teams_own_figures(world, client):
    from tests.factories import file_request

    label, _bounds = _last_week()
    _record(world, world.team_a, world.a100, 240, 75, key="a")
    draft = file_request(world, submit=False)  # the team stated 600 GPU-hours used at 75%
    client.force_login(world.lead_a)
    response = client.get(f"/requests/{draft.pk}/edit/")
    form = response.context["forms"]["usage"]
    assert form["gpu_hours_used"].value() == Decimal("600.0")  # the team's figure, not overwritten
    body = response.content.decode()
    assert (f"The schedulers measured 240 GPU-hours used at 75.0% mean utilization for Team A on atlas/a100 "
            f"in week {label}.") in body
    assert "The committee sees your figures next to it." in body
    assert "hx-get" not in body[body.index('id="usage-prefill"'):][:400]  # the team is fixed: nothing to follow
