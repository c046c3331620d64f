"""Dashboards: every chart's numbers (its table and CSV) equal the same aggregates computed here, independently,
from the rows; filters narrow them; each person sees what they may."""

from __future__ import annotations

import csv
import io
import json
import re
from collections import defaultdict
from decimal import ROUND_HALF_UP, Decimal
from typing import Any
from zoneinfo import ZoneInfo

import plotly.graph_objects as go
import pytest
from django.conf import settings as django_settings
from django.urls import reverse

from allocations.models import AllocationWindow, UsageRecord
from committee import scoring
from committee.models import FairShareSnapshot, Score
from tests.reports.dashboard_data import WEEK_1, WEEK_2, build

URL = "/archive/dashboards/"
RANGE = {"first_week": WEEK_1, "last_week": WEEK_2}


@pytest.fixture
def dash(world, settings):
    settings.TIME_ZONE = "Europe/Berlin"  # weeks are the committee's, not UTC's
    return build(world)


def r(value, places=1):
    if value is None:
        return ""
    return str(Decimal(str(value)).quantize(Decimal(1).scaleb(-places), ROUND_HALF_UP))


def iso_week(moment):
    year, week, _day = moment.astimezone(ZoneInfo(django_settings.TIME_ZONE)).date().isocalendar()
    return f"{year}-W{week:02d}"


def csv_rows(client, key, **params):
    response = client.get(reverse("reports:dashboard-csv", args=[key]), {**RANGE, **params})
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/csv")
    return list(csv.DictReader(io.StringIO(response.content.decode())))


def pool_name(pool):
    return f"{pool.cluster.slug}/{pool.slug}"


def granted_by(key):
    totals: defaultdict[Any, Decimal] = defaultdict(Decimal)
    for window in AllocationWindow.objects.filter(withdrawal__isnull=True).select_related("team", "pool__cluster"):
        hours = Decimal(int((window.end - window.start).total_seconds())) / 3600
        totals[key(window)] += window.gpu_count * hours
    return totals


def usage_in_range():
    return [u for u in UsageRecord.objects.select_related("team", "pool__cluster") if iso_week(u.period_start)
            in (WEEK_1, WEEK_2)]


def test_granted_vs_used_per_team_and_week(client, dash):
    client.force_login(dash.world.chair)
    granted = granted_by(lambda w: (w.week, w.team.name))
    used: defaultdict[Any, Decimal] = defaultdict(Decimal)
    for record in usage_in_range():
        used[(iso_week(record.period_start), record.team.name)] += record.gpu_hours_used
    rows = csv_rows(client, "granted-used")
    assert [(row["Week"], row["Team"]) for row in rows] == [
        (WEEK_1, "Team A"), (WEEK_1, "Team B"), (WEEK_2, "Team A"), (WEEK_2, "Team B")]
    for row in rows:
        key = (row["Week"], row["Team"])
        assert row["Placed A100-eq GPU-h"] == r(granted[key])
        assert row["Used A100-eq GPU-h"] == r(used[key])
        assert row["Share of placed GPU-hours used %"] == (r(100 * used[key] / granted[key]) if granted[key] else "")
    # The corrected week counts the correction's 48-hour window, not the withdrawn 24-hour one.
    assert granted[(WEEK_2, "Team A")] == 8 * 48 + 2 * 30


def test_utilization_and_queue_wait_per_pool(client, dash):
    client.force_login(dash.world.chair)
    sums: list[defaultdict[Any, Decimal]] = [defaultdict(Decimal) for _ in range(5)]
    used, weighted_util, weighted_wait, plain_wait, count = sums
    for record in usage_in_range():
        key = (iso_week(record.period_start), pool_name(record.pool))
        used[key] += record.gpu_hours_used
        weighted_util[key] += record.gpu_hours_used * record.mean_utilization_pct
        weighted_wait[key] += record.gpu_hours_used * record.mean_queue_wait_minutes
        plain_wait[key] += record.mean_queue_wait_minutes
        count[key] += 1
    utilization = csv_rows(client, "utilization")
    busy = csv_rows(client, "gpu-busy")
    waits = csv_rows(client, "queue-wait")
    assert len(utilization) == len(busy) == len(waits) == 4
    for row in utilization:
        key = (row["Week"], row["Pool"])
        capacity = {"atlas/a100": 64, "orion/h100": 32}[row["Pool"]] * 168
        assert row["Capacity GPU-h"] == r(capacity)
        assert row["Used GPU-h"] == r(used[key])
        assert row["Share of pool capacity used %"] == r(100 * used[key] / capacity)
        assert "GPU busy time %" not in row  # the other meaning of "utilization" has its own chart
    for row in busy:
        key = (row["Week"], row["Pool"])
        assert row["GPU busy time %"] == r(weighted_util[key] / used[key])
    for row in waits:
        key = (row["Week"], row["Pool"])
        assert row["Mean queue wait (min)"] == r(weighted_wait[key] / used[key])
        assert row["Measured usage records"] == str(count[key])


def test_demand_vs_capacity_per_week(client, dash):
    client.force_login(dash.world.chair)
    requested: defaultdict[Any, Decimal] = defaultdict(Decimal)
    for request in dash.requests:
        if request.status in ("submitted", "decided"):
            requested[request.cycle.week] += request.gpu_count * request.duration_hours
    granted = granted_by(lambda w: w.week)
    # What the engine can place: both pools keep the default 10% cold standby in whole GPUs, 6 of 64 and 3 of 32.
    allocatable = Decimal((58 + 29) * 168)
    rows = csv_rows(client, "demand-capacity")
    assert [row["Week"] for row in rows] == [WEEK_1, WEEK_2]
    for row in rows:
        week = row["Week"]
        assert row["Requested A100-eq GPU-h"] == r(requested[week])
        assert row["Placed A100-eq GPU-h"] == r(granted[week])
        assert row["Allocatable A100-eq GPU-h"] == r(allocatable)
        assert row["Requested / allocatable %"] == r(100 * requested[week] / allocatable)
    assert requested[WEEK_1] == 32 * 50 + 4 * 10 + 8 * 24  # the draft does not count


def test_fair_share_frozen_where_a_cycle_froze_it_computed_elsewhere(client, dash, settings):
    client.force_login(dash.world.chair)
    rows = {(row["Week"], row["Team"]): row for row in csv_rows(client, "fair-share")}
    # Week 2: the snapshot. U_A = 300/400, S_A = 2/3, F = 2^(−0.75/0.6667).
    frozen = rows[(WEEK_2, "Team A")]
    assert frozen["Basis"] == "frozen at intake close"
    assert frozen["Factor F"] == r(2 ** (-0.75 / (2 / 3)), 3)
    assert frozen["Usage share U %"] == "75.0" and frozen["Entitled share S %"] == "66.7"
    # Week 1: computed from the usage reported in the trailing weeks before its intake closed.
    as_of = dash.cycles[0].intake_closes_at
    trailing = settings.DOCKET_FAIRSHARE_TRAILING_WEEKS
    weekly: list[defaultdict[Any, float]] = [defaultdict(float) for _ in range(trailing)]
    for record in UsageRecord.objects.all():
        age = as_of - record.period_start
        if record.period_start < as_of and age.total_seconds() < trailing * 7 * 86400:
            weekly[min(trailing - 1, int(age.total_seconds() // (7 * 86400)))][record.team_id] += float(
                record.gpu_hours_used)
    half_life = settings.DOCKET_FAIRSHARE_HALF_LIFE_WEEKS
    decayed = {team_id: sum(week.get(team_id, 0.0) * 2 ** (-k / half_life) for k, week in enumerate(weekly))
               for team_id in (dash.world.team_a.pk, dash.world.team_b.pk)}
    total = sum(decayed.values())
    for team, weight in ((dash.world.team_a, 2), (dash.world.team_b, 1)):
        row = rows[(WEEK_1, team.name)]
        assert row["Basis"] == "computed"
        assert row["Factor F"] == r(2 ** (-(decayed[team.pk] / total) / (weight / 3)), 3)
    assert FairShareSnapshot.objects.filter(cycle=dash.cycles[0]).count() == 0


def test_score_distribution_per_criterion(client, dash):
    client.force_login(dash.world.chair)
    rows = csv_rows(client, "scores")
    assert len(rows) == 3 * 11
    counts: defaultdict[Any, int] = defaultdict(int)
    for score in Score.objects.all():
        counts[(score.criterion, score.value)] += 1
    labels = {"Business impact": scoring.BUSINESS_IMPACT, "Feasibility of alternatives": scoring.FEASIBILITY,
              "Time urgency": scoring.URGENCY}
    for row in rows:
        assert int(row["Scores given"]) == counts[(labels[row["Criterion"]], int(row["Score"]))]
    assert sum(int(row["Scores given"]) for row in rows) == Score.objects.count() == 15


def test_filters_narrow_every_chart(client, dash):
    client.force_login(dash.world.chair)
    orion = csv_rows(client, "utilization", cluster="orion")
    assert {row["Pool"] for row in orion} == {"orion/h100"}
    demand = csv_rows(client, "demand-capacity", pool=dash.world.a100.pk, team="team-b")
    assert [row["Requested A100-eq GPU-h"] for row in demand] == [r(4 * 10), r(0)]
    assert [row["Allocatable A100-eq GPU-h"] for row in demand] == [r(Decimal(58 * 168))] * 2  # 64 GPUs less 6 standby
    team_b = csv_rows(client, "granted-used", team="team-b")
    assert {row["Team"] for row in team_b} == {"Team B"}
    scores = csv_rows(client, "scores", team="team-b")
    assert sum(int(row["Scores given"]) for row in scores) == 6  # chair's and reviewer's of B's requests
    one_week = csv_rows(client, "queue-wait", first_week=WEEK_2, last_week=WEEK_2)
    assert {row["Week"] for row in one_week} == {WEEK_2}


def test_a_pool_not_on_the_chosen_cluster_is_an_error(client, dash):
    client.force_login(dash.world.chair)
    response = client.get(URL, {**RANGE, "cluster": "orion", "pool": dash.world.a100.pk})
    assert response.status_code == 200 and "This pool is not on the chosen cluster." in response.content.decode()
    bad = client.get(reverse("reports:dashboard-csv", args=["utilization"]), {"first_week": WEEK_2,
                                                                               "last_week": WEEK_1})
    assert bad.status_code == 400


def test_the_page_draws_each_chart_with_the_apps_own_plotly_and_shows_its_table(client, dash):
    client.force_login(dash.world.chair)
    body = client.get(URL, RANGE).content.decode()
    assert '<script src="/static/plotly/plotly.min.js" defer></script>' in body
    assert not re.search(r"https?://[^\"']*(cdn|plot\.ly)", body)
    for key in ("granted-used", "department-used", "utilization", "gpu-busy", "queue-wait", "demand-capacity",
                "fair-share", "scores"):
        assert f'id="chart-{key}"' in body and f'data-table="{key}"' in body
        assert f"/archive/dashboards/{key}.csv?" in body
        data = re.search(rf'<script id="chart-{key}" type="application/json">(.*?)</script>', body, re.S)
        assert data is not None, key
        figure = json.loads(data.group(1))
        assert figure["data"], key
        # Built as plain data (no go.Figure, which deep-copies everything), yet exactly what plotly itself validates
        # and serializes: an unknown or misspelt property would raise here, a wrong shape differ.
        assert json.loads(go.Figure(figure).to_json()) == figure, key
        assert figure["layout"]["template"] == json.loads(go.Figure().to_json())["layout"]["template"]  # its look
    assert client.get("/static/plotly/plotly.min.js").status_code == 200


def test_each_departments_row_sums_its_teams_and_the_teams_in_none_are_one_row(client, dash):
    from allocations.models import Department

    research = Department.objects.create(name="Research", slug="research")
    dash.world.team_b.department = research
    dash.world.team_b.save()
    client.force_login(dash.world.chair)
    teams = csv_rows(client, "granted-used")
    rows = csv_rows(client, "department-used")
    assert [(row["Week"], row["Department"], row["Teams"]) for row in rows] == [
        (WEEK_1, "No department", "1"), (WEEK_1, "Research", "1"), (WEEK_2, "No department", "1"),
        (WEEK_2, "Research", "1")]
    by_team = {(row["Week"], row["Department"] or "No department"): row for row in teams}
    for row in rows:
        team = by_team[(row["Week"], row["Department"])]
        for column in ("Decided A100-eq GPU-h", "Placed A100-eq GPU-h", "Used A100-eq GPU-h",
                       "Share of placed GPU-hours used %"):
            assert row[column] == team[column], column
    # Both teams in one department: its row is their sum.
    dash.world.team_a.department = research
    dash.world.team_a.save()
    week_1, _week_2 = csv_rows(client, "department-used", department="research")
    assert week_1["Teams"] == "2"
    assert Decimal(week_1["Placed A100-eq GPU-h"]) == sum(
        Decimal(row["Placed A100-eq GPU-h"]) for row in teams if row["Week"] == WEEK_1)


def test_a_team_member_sees_only_their_own_teams_numbers(client, dash):
    client.force_login(dash.world.member_a)
    body = client.get(URL, RANGE).content.decode()
    assert 'data-table="granted-used"' in body and 'data-table="scores"' not in body
    assert "Team B" not in body
    assert {row["Team"] for row in csv_rows(client, "granted-used")} == {"Team A"}
    assert {row["Team"] for row in csv_rows(client, "fair-share")} == {"Team A"}
    assert client.get(reverse("reports:dashboard-csv", args=["scores"]), RANGE).status_code == 404
    # A department's total counts teams they do not see: the committee's only.
    assert 'data-table="department-used"' not in body
    assert client.get(reverse("reports:dashboard-csv", args=["department-used"]), RANGE).status_code == 404
    # Asking for another team's numbers is refused, and shows nothing of it.
    forged = client.get(URL, {**RANGE, "team": "team-b"})
    assert "Select a valid choice" in forged.content.decode() and "Team B" not in forged.content.decode()
    assert client.get(reverse("reports:dashboard-csv", args=["granted-used"]),
                      {**RANGE, "team": "team-b"}).status_code == 400
    # The pools' charts count everyone's use: they describe shared machines.
    everyone = csv_rows(client, "utilization")
    assert everyone == csv_rows(client, "utilization") and len(everyone) == 4


def test_someone_in_no_team_sees_the_pools_only(client, dash):
    client.force_login(dash.world.outsider)
    body = client.get(URL, RANGE).content.decode()
    assert 'data-table="utilization"' in body and 'data-table="granted-used"' not in body
    assert client.get(reverse("reports:dashboard-csv", args=["granted-used"]), RANGE).status_code == 404


def test_signed_out_people_are_sent_to_sign_in(client, dash):
    response = client.get(URL)
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


def test_the_number_of_queries_does_not_grow_with_the_rows(client, dash, django_assert_max_num_queries):
    from allocations.models import Department, Team

    Team.objects.filter(pk=dash.world.team_a.pk).update(
        department=Department.objects.create(name="Dept one", slug="dept-one"))
    client.force_login(dash.world.chair)
    client.get(URL, RANGE)  # warm the session and content types
    with django_assert_max_num_queries(40) as few:
        client.get(URL, RANGE)
    UsageRecord.objects.bulk_create(
        UsageRecord(pool=dash.world.a100, team=dash.world.team_a, period_start=dash.cycles[0].starts_at,
                    period_end=dash.cycles[0].starts_at + (dash.cycles[0].ends_at - dash.cycles[0].starts_at) / 2,
                    gpu_hours_used=1, mean_utilization_pct=50, idempotency_key=f"bulk-{i}") for i in range(200))
    # More departments (one of them a team's, the rest empty) add no query: the org chart is read with the teams.
    Department.objects.bulk_create(Department(name=f"Dept {i}", slug=f"dept-{i}") for i in range(20))
    Team.objects.filter(pk=dash.world.team_b.pk).update(department=Department.objects.get(slug="dept-7"))
    with django_assert_max_num_queries(len(few.captured_queries)):
        body = client.get(URL, RANGE).content.decode()
    assert "Dept one" in body and "Dept 7" in body


def test_a_team_name_a_spreadsheet_would_run_is_quoted_in_the_csv(client, dash):
    from allocations.models import Team

    Team.objects.create(name='=HYPERLINK("http://evil.example")', slug="evil")
    client.force_login(dash.world.chair)
    teams = {row["Team"] for row in csv_rows(client, "granted-used")}
    assert "'=HYPERLINK(\"http://evil.example\")" in teams and not any(t.startswith("=") for t in teams)


def test_the_index_shows_the_first_rows_of_a_long_table_and_the_csv_has_them_all(client, dash, monkeypatch):
    from reports.dashboards import views

    client.force_login(dash.world.chair)
    every = csv_rows(client, "granted-used")
    assert len(every) > 2
    monkeypatch.setattr(views, "INDEX_TABLE_ROWS", 2)  # at 250 teams the table has 1,000 rows; here a few
    body = client.get(URL, RANGE).content.decode()
    table = re.search(r'<table [^>]*data-table="granted-used".*?</table>', body, re.S)
    assert table is not None and table.group(0).count("<tr>") == 1 + 2  # the header and the first two rows
    assert f"The first 2 of {len(every)} rows; the CSV has every row." in body
    assert csv_rows(client, "granted-used") == every  # the CSV is not cut


def test_sums_across_pools_count_in_a100_equivalents_and_per_pool_figures_stay_raw(client, dash):
    from tests.governed.version_one import version_1_set

    version_1_set({"pool.orion/h100.billing_weight": "2"})  # an H100-hour is two A100-hours; A100 keeps 1
    client.force_login(dash.world.chair)
    # Week 1, by hand: team B holds 8 H100 × 24 h = 192 H100-hours (384 A100-eq) and 4 A100 × 24 h = 96.
    granted = {(row["Week"], row["Team"]): row for row in csv_rows(client, "granted-used")}
    assert granted[(WEEK_1, "Team B")]["Placed A100-eq GPU-h"] == "480.0"
    assert granted[(WEEK_1, "Team A")]["Placed A100-eq GPU-h"] == "768.0"  # 16 A100 × 48 h
    # Demand: 32 × 50 + 4 × 10 A100-hours and 8 × 24 H100-hours submitted: 1,600 + 40 + 2 × 192 = 2,024.
    # Allocatable: (64 − 6) × 168 A100-hours + 2 × (32 − 3) × 168 H100-hours = 9,744 + 9,744.
    demand = {row["Week"]: row for row in csv_rows(client, "demand-capacity")}[WEEK_1]
    assert demand["Requested A100-eq GPU-h"] == "2024.0"
    assert demand["Placed A100-eq GPU-h"] == "1248.0"  # 768 + 96 + 384
    assert demand["Allocatable A100-eq GPU-h"] == "19488.0"
    assert demand["Requested / allocatable %"] == r(100 * Decimal(2024) / 19488)
    # One pool's figures stay in its own GPU-hours.
    utilization = {(row["Week"], row["Pool"]): row for row in csv_rows(client, "utilization")}
    assert utilization[(WEEK_1, "orion/h100")]["Capacity GPU-h"] == r(32 * 168)
    page = client.get(URL, RANGE).content.decode()
    assert "Demand vs capacity per week, in A100-equivalent GPU-hours" in page
    assert "A100-equivalent GPU-hours decided, placed and used, per team and week" in page


def test_a_department_narrows_the_team_and_pool_charts_and_names_each_teams(client, dash):
    from allocations.models import Department, Team

    research = Department.objects.create(name="Research", slug="research", fair_share_weight=1)
    Team.objects.filter(pk=dash.world.team_b.pk).update(department=research)
    client.force_login(dash.world.chair)
    every = csv_rows(client, "granted-used")
    assert [(row["Department"], row["Team"]) for row in every[:2]] == [("", "Team A"), ("Research", "Team B")]
    rows = csv_rows(client, "granted-used", department="research")
    assert {(row["Department"], row["Team"]) for row in rows} == {("Research", "Team B")}
    assert {row["Team"] for row in csv_rows(client, "fair-share", department="research")} == {"Team B"}
    demand = csv_rows(client, "demand-capacity", department="research")
    assert [row["Requested A100-eq GPU-h"] for row in demand] == [r(4 * 10 + 8 * 24), r(16 * 20)]
    # A team outside the chosen department is an error, and the CSV refuses it.
    page = client.get(URL, {**RANGE, "department": "research", "team": "team-a"}).content.decode()
    assert "This team is not in the chosen department." in page
    assert client.get(reverse("reports:dashboard-csv", args=["granted-used"]),
                      {**RANGE, "department": "research", "team": "team-a"}).status_code == 400
    # Team A's member sees no department of another team's, and asking for one is refused.
    client.force_login(dash.world.member_a)
    assert '<select name="department"' not in client.get(URL, RANGE).content.decode()
    assert client.get(reverse("reports:dashboard-csv", args=["granted-used"]),
                      {**RANGE, "department": "research"}).status_code == 400
