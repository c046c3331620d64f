"""POST /api/v1/usage/: validated, scoped to the token's cluster, idempotent on the client's key.

Reports that cannot be true are refused with 400 naming the field, and nothing is stored: more
GPU-hours than the pool holds together with its other reports, a period before the retention
horizon, a team with no account on the cluster and no window on the pool. docs/adapters.md
("Usage reports Docket refuses") states the rule.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from rest_framework.test import APIClient

from allocations.models import ClusterAccount, UsageRecord
from committee import weeks
from tests.allocations.plans import W, bearer, publish, token_for
from tests.clock import FIXED_NOW

URL = "/api/v1/usage/"


@pytest.fixture
def api(world) -> APIClient:
    ClusterAccount.objects.create(cluster=world.atlas, team=world.team_a, account="team-a-acct")
    client = APIClient()
    client.credentials(**bearer(token_for(world.atlas, "slurm-sync")))
    return client


def payload(**overrides):
    end = FIXED_NOW.replace(minute=0, second=0, microsecond=0)
    data = {
        "team": "team-a",
        "pool": "a100",
        "period_start": (end - timedelta(hours=24)).isoformat(),
        "period_end": end.isoformat(),
        "gpu_hours_used": "300.50",
        "mean_utilization_pct": "81.5",
        "mean_queue_wait_minutes": "12.0",
        "idempotency_key": "atlas-2026-12-01-team-a-a100",
    }
    data.update(overrides)
    return data


def test_usage_is_stored_with_who_reported_it(world, api):
    response = api.post(URL, payload(), format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["cluster"] == "atlas" and body["team"] == "team-a" and body["reported_by"] == "slurm-sync"
    record = UsageRecord.objects.get()
    assert str(record.gpu_hours_used) == "300.50" and record.pool == world.a100 and record.window is None


def test_same_key_again_changes_nothing_and_answers_the_same(world, api):
    first = api.post(URL, payload(), format="json")
    again = api.post(URL, payload(), format="json")
    assert again.status_code == first.status_code == 201
    assert again.json() == first.json() and again["Idempotent-Replayed"] == "true"
    assert UsageRecord.objects.count() == 1


def test_same_key_with_other_data_is_a_conflict_and_changes_nothing(world, api):
    api.post(URL, payload(), format="json")
    response = api.post(URL, payload(gpu_hours_used="999"), format="json")
    assert response.status_code == 409 and "idempotency_key" in response.json()
    assert UsageRecord.objects.get().gpu_hours_used == pytest.approx(300.5)


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"mean_utilization_pct": "120"}, "mean_utilization_pct"),
        ({"gpu_hours_used": "-1"}, "gpu_hours_used"),
        ({"gpu_hours_used": "abc"}, "gpu_hours_used"),
        ({"gpu_hours_used": "1537"}, "gpu_hours_used"),  # 64 GPUs × 24 h = 1536 GPU-hours at most
        ({"period_end": "2020-01-01T00:00:00Z"}, "period_end"),  # before the start
        ({"period_start": "2999-01-01T00:00:00Z", "period_end": "2999-01-02T00:00:00Z"}, "period_end"),
        ({"period_start": "0001-01-01T00:00:00Z"}, "period_start"),  # long before the retention horizon
        ({"team": "team-b"}, "team"),  # no account on atlas, no window on a100
        ({"team": "no-such-team"}, "team"),
        ({"pool": "h100"}, "pool"),  # orion's pool: not this token's cluster
        ({"idempotency_key": ""}, "idempotency_key"),
        ({"window": 0}, "window"),
    ],
)
def test_bad_usage_is_400_with_field_errors_and_nothing_stored(world, api, overrides, field):
    response = api.post(URL, payload(**overrides), format="json")
    assert response.status_code == 400
    assert field in response.json()
    assert UsageRecord.objects.count() == 0


def test_missing_fields_are_named(world, api):
    response = api.post(URL, {"team": "team-a"}, format="json")
    assert response.status_code == 400
    assert {"pool", "period_start", "period_end", "gpu_hours_used", "idempotency_key"} <= set(response.json())


def test_window_must_be_the_teams_on_that_pool_and_overlap(world, api):
    last_week = weeks.week_label(FIXED_NOW.date() - timedelta(days=7))
    plan = publish([W(world.a100, world.team_a, 8, 0, 24, ref=1), W(world.a100, world.team_b, 8, 0, 24, ref=2)],
                   week=last_week)
    windows = {w.request_ref: w for w in plan.windows.all()}
    period = {"period_start": windows[1].start.isoformat(), "period_end": windows[1].end.isoformat()}
    stored = api.post(URL, payload(window=windows[1].pk, idempotency_key="k1", **period), format="json")
    assert stored.status_code == 201 and stored.json()["window"] == windows[1].pk
    other_team = api.post(URL, payload(window=windows[2].pk, idempotency_key="k2", **period), format="json")
    assert other_team.status_code == 400 and "window" in other_team.json()
    after_end = windows[1].end + timedelta(hours=1)
    later = {"period_start": windows[1].end.isoformat(), "period_end": after_end.isoformat()}
    no_overlap = api.post(URL, payload(window=windows[1].pk, idempotency_key="k3", gpu_hours_used="8", **later),
                          format="json")
    assert no_overlap.status_code == 400 and "window" in no_overlap.json()
    assert UsageRecord.objects.count() == 1


def test_token_of_another_cluster_cannot_report_here(world):
    api = APIClient()
    api.credentials(**bearer(token_for(world.orion)))
    response = api.post(URL, payload(), format="json")  # a100 is atlas's
    assert response.status_code == 400 and "pool" in response.json()
    assert UsageRecord.objects.count() == 0


def test_anonymous_gets_nothing(world):
    assert APIClient().post(URL, payload(), format="json").status_code == 401
    assert UsageRecord.objects.count() == 0


# --- reports that cannot be true -------------------------------------------------------------

HOUR = FIXED_NOW.replace(minute=0, second=0, microsecond=0) - timedelta(hours=6)  # a past hour of the test day


def span(start_h: float, end_h: float) -> dict[str, str]:
    """A period as offsets in hours from HOUR."""
    return {"period_start": (HOUR + timedelta(hours=start_h)).isoformat(),
            "period_end": (HOUR + timedelta(hours=end_h)).isoformat()}


def post(api: APIClient, key: str, gpu_hours: str, start_h: float, end_h: float, team: str = "team-a"):
    return api.post(URL, payload(team=team, idempotency_key=key, gpu_hours_used=gpu_hours, **span(start_h, end_h)),
                    format="json")


def stored() -> list[tuple[str, str]]:
    return [(r.idempotency_key, str(r.gpu_hours_used)) for r in UsageRecord.objects.order_by("pk")]


def test_five_full_reports_of_one_hour_store_only_the_first(world, api):
    """The issue's case: 5 × 64 GPU-hours for one hour of a 64-GPU pool would store 320 for an hour that holds 64."""
    assert post(api, "k1", "64", 0, 1).status_code == 201
    for key in ("k2", "k3", "k4", "k5"):
        response = post(api, key, "64", 0, 1)
        assert response.status_code == 400, response.json()
        assert list(response.json()) == ["gpu_hours_used"]
        assert "128.00 GPU-hours; the pool holds 64.00" in response.json()["gpu_hours_used"][0]
    assert stored() == [("k1", "64.00")]


def test_a_full_hour_stays_full_whatever_team_reports_it(world, api):
    ClusterAccount.objects.create(cluster=world.atlas, team=world.team_b, account="team-b-acct")
    assert post(api, "a", "40", 0, 1).status_code == 201
    refused = post(api, "b", "24.01", 0, 1, team="team-b")
    assert refused.status_code == 400 and "gpu_hours_used" in refused.json()
    assert post(api, "b", "24", 0, 1, team="team-b").status_code == 201  # exactly full is true, and accepted
    assert post(api, "c", "0.01", 0.5, 1, team="team-b").status_code == 400
    assert stored() == [("a", "40.00"), ("b", "24.00")]


def test_a_single_report_may_fill_its_own_period_exactly(world, api):
    assert post(api, "full", "64", 0, 1).status_code == 201
    assert post(api, "over", "64.01", 1, 2).status_code == 400
    assert stored() == [("full", "64.00")]


def test_partial_overlaps_count_the_whole_span_they_cover(world, api):
    # [0, 2) is full (128 of 128); [1, 3) then fits only in what [0, 3) has left: 192 − 128 = 64.
    assert post(api, "first", "128", 0, 2).status_code == 201
    assert post(api, "too-much", "64.01", 1, 3).status_code == 400
    assert post(api, "rest", "64", 1, 3).status_code == 201
    # Now [0, 3) holds 192 of 192: a report lying inside it, or reaching into it, has nothing left.
    inside = post(api, "inside", "1", 2, 3)
    assert inside.status_code == 400
    assert "between" in inside.json()["gpu_hours_used"][0]
    assert post(api, "reaching", "65", 2.5, 4).status_code == 400  # [0, 4) holds 256; 192 + 65 = 257
    assert post(api, "after", "64", 3, 4).status_code == 201  # the next hour is free
    assert stored() == [("first", "128.00"), ("rest", "64.00"), ("after", "64.00")]


def test_a_long_report_beside_a_short_one_is_not_prorated(world, api):
    """A day's 64 GPU-hours may all lie outside the hour another report fills: both can be true."""
    assert post(api, "day", "64", -18, 6).status_code == 201
    assert post(api, "hour", "64", 0, 1).status_code == 201
    # Twelve hours around the full hour hold 12 × 64 = 768: 704 are left beside the hour's 64 (the day's 64
    # need not lie there, and the day's span holds 1536).
    assert post(api, "half-day", "704.01", -10, 2).status_code == 400
    assert post(api, "half-day", "704", -10, 2).status_code == 201
    assert len(stored()) == 3


def test_a_replay_of_a_stored_report_still_answers_as_before_when_the_pool_is_full(world, api):
    first = post(api, "k1", "64", 0, 1)
    again = post(api, "k1", "64", 0, 1)
    assert again.status_code == 201 and again["Idempotent-Replayed"] == "true" and again.json() == first.json()
    assert stored() == [("k1", "64.00")]


def test_usage_older_than_the_retention_horizon_is_refused(world, api, clock, settings):
    clock.move_to(FIXED_NOW, tick=False)
    settings.DOCKET_USAGE_MAX_AGE_DAYS = 7
    horizon = FIXED_NOW - timedelta(days=7)
    too_old = api.post(URL, payload(idempotency_key="old", gpu_hours_used="1", period_start=(
        horizon - timedelta(seconds=1)).isoformat(), period_end=(horizon + timedelta(hours=1)).isoformat()),
        format="json")
    assert too_old.status_code == 400 and list(too_old.json()) == ["period_start"]
    assert "7 days" in too_old.json()["period_start"][0]
    assert UsageRecord.objects.count() == 0
    at_horizon = api.post(URL, payload(idempotency_key="edge", gpu_hours_used="1", period_start=horizon.isoformat(),
                                       period_end=(horizon + timedelta(hours=1)).isoformat()), format="json")
    assert at_horizon.status_code == 201, at_horizon.json()


def test_a_period_may_end_a_few_minutes_ahead_of_docket_but_not_more(world, api, clock):
    clock.move_to(FIXED_NOW, tick=False)
    start = FIXED_NOW - timedelta(hours=1)
    ahead = api.post(URL, payload(idempotency_key="skew", gpu_hours_used="1", period_start=start.isoformat(),
                                  period_end=(FIXED_NOW + timedelta(minutes=5)).isoformat()), format="json")
    assert ahead.status_code == 201, ahead.json()
    future = api.post(URL, payload(idempotency_key="future", gpu_hours_used="1", period_start=start.isoformat(),
                                   period_end=(FIXED_NOW + timedelta(minutes=5, seconds=1)).isoformat()),
                      format="json")
    assert future.status_code == 400 and list(future.json()) == ["period_end"]
    assert stored() == [("skew", "1.00")]


def test_a_team_reports_on_a_pool_only_with_an_account_on_its_cluster_or_a_window_on_it(world, api):
    ClusterAccount.objects.create(cluster=world.orion, team=world.team_b, account="team-b-acct")  # not atlas
    refused = post(api, "b1", "8", 0, 1, team="team-b")
    assert refused.status_code == 400 and list(refused.json()) == ["team"]
    assert "no account on cluster atlas and no window on pool a100" in refused.json()["team"][0]
    assert stored() == []
    last_week = weeks.week_label(FIXED_NOW.date() - timedelta(days=7))
    publish([W(world.a100, world.team_b, 8, 0, 24, ref=1)], week=last_week)
    assert post(api, "b1", "8", 0, 1, team="team-b").status_code == 201


def test_fragmented_reporting_is_refused_past_the_cap_per_team_pool_and_hour(world, api, settings):
    """Many tiny reports starting in one hour: the first DOCKET_USAGE_MAX_REPORTS_PER_HOUR are stored, then 400."""
    settings.DOCKET_USAGE_MAX_REPORTS_PER_HOUR = 3
    ClusterAccount.objects.create(cluster=world.atlas, team=world.team_b, account="team-b-acct")
    for n in range(3):
        assert post(api, f"k{n}", "0.01", n / 10, 2).status_code == 201
    response = post(api, "k3", "0.01", 0.5, 0.6)
    assert response.status_code == 400 and list(response.json()) == ["period_start"]
    assert response.json()["period_start"] == [
        f"Team team-a already has 3 usage reports on a100 starting between {HOUR.isoformat()} and "
        f"{(HOUR + timedelta(hours=1)).isoformat()}: at most 3 per team, pool and hour. Report longer periods."]
    assert UsageRecord.objects.count() == 3
    # Another team, or the next hour, is not held up.
    assert post(api, "b1", "0.01", 0.5, 0.6, team="team-b").status_code == 201
    assert post(api, "k4", "0.01", 1, 1.5).status_code == 201


def test_a_report_chained_to_too_many_stored_ones_is_refused_before_they_are_read(world, api, monkeypatch):
    """Nested reports (the issue's attack on the check's time): past the cap the report is refused, quickly."""
    from allocations import services

    monkeypatch.setattr(services.usage, "USAGE_MAX_CHAINED", 3)
    for n in range(4):  # the fourth is checked against three: not more than the cap
        assert post(api, f"k{n}", "0.01", 1 - n / 5, 2 + n / 5).status_code == 201
    response = post(api, "k9", "0.01", 1.5, 1.6)
    assert response.status_code == 400 and list(response.json()) == ["period_start"]
    assert response.json()["period_start"][0].startswith(
        "This report overlaps a chain of more than 3 reports stored for a100")
    assert UsageRecord.objects.count() == 4
    assert post(api, "k5", "0.01", 3, 4).status_code == 201  # reports that only touch do not chain
