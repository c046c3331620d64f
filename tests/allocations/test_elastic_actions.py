"""The hourly elastic evaluation: actions recorded once, ended when their condition stops, carried to schedulers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from rest_framework.test import APIClient

from allocations import tasks
from allocations.elastic import services
from allocations.models import AllocationWindow, ElasticAction, GpuPool, Team, UsageRecord
from docket_scheduler import kueue
from docket_scheduler.base import parse_windows
from tests.allocations.plans import W, bearer, publish, token_for
from tests.clock import FIXED_NOW
from tests.elastic_policy import elastic_version_one_as_migrated

H = timedelta(hours=1)
NOW = FIXED_NOW  # Wednesday 10:00 UTC, 58 hours into week 2026-W49


def usage(window: AllocationWindow, *, util: float | list[float], until: datetime = NOW, hours: int = 4,
          wait: float = 0, team: Team | None = None, pool: GpuPool | None = None) -> None:
    """One record per hour of [until − hours, until), as a collector posts them."""
    utils = util if isinstance(util, list) else [util] * hours
    for i, value in enumerate(utils):
        start = until - (len(utils) - i) * H
        UsageRecord.objects.create(
            pool=pool or window.pool, team=team or window.team, window=window, period_start=start,
            period_end=start + H, gpu_hours_used=Decimal(window.gpu_count), mean_utilization_pct=Decimal(str(value)),
            mean_queue_wait_minutes=Decimal(str(wait)), idempotency_key=f"w{window.pk}-{start.isoformat()}",
        )


@pytest.fixture(autouse=True)
def elastic_version_one(db: None) -> None:
    """The tests count on version 1 as migrated (240 and 60 minutes), also after an earlier test's flush."""
    elastic_version_one_as_migrated()


@pytest.fixture
def windows(world: Any) -> dict[str, AllocationWindow]:
    """Team A's priority window of 8 GPUs and team B's standard window of 16 on atlas/a100, Monday to Friday."""
    plan = publish([
        W(world.a100, world.team_a, 8, 0, 100, ref=1, tier="priority"),
        W(world.a100, world.team_b, 16, 0, 100, ref=2, tier="standard"),
    ])
    by_ref = {w.request_ref: w for w in plan.windows.all()}
    return {"a": by_ref[1], "b": by_ref[2]}


def test_an_idle_grant_is_recorded_once_and_explained(windows: dict[str, AllocationWindow]) -> None:
    usage(windows["a"], util=[10, 20, 20, 10])
    usage(windows["b"], util=60)
    first = services.elastic_evaluate(now=NOW + timedelta(minutes=15))
    assert (first.started, first.ended, first.kept) == (1, 0, 0)
    [action] = ElasticAction.objects.all()
    assert (action.kind, action.window_id, action.team, action.gpus) == ("idle", windows["a"].pk, windows["a"].team, 6)
    assert action.utilization_pct == Decimal("15.0") and action.policy_version == 1
    assert action.ended_at is None and action.started_at == NOW + timedelta(minutes=15)
    assert f"Window #{windows['a'].pk} of Team A on atlas/a100 (8 GPUs)" in action.explanation
    assert "15% mean utilization over the last 4 h, under 25%" in action.explanation
    assert "Its 6 unused GPUs (8 × (1 − 15%), rounded down) are offered" in action.explanation

    again = services.elastic_evaluate(now=NOW + timedelta(minutes=50))  # the same hour: nothing added
    assert (again.started, again.ended, again.kept) == (0, 0, 1)
    assert ElasticAction.objects.count() == 1


def test_the_task_run_twice_adds_nothing(windows: dict[str, AllocationWindow], clock: Any) -> None:
    usage(windows["a"], util=5)
    clock.move_to(NOW + timedelta(minutes=15))
    assert tasks.elastic_evaluate.delay().get()["started"] == 1
    assert tasks.elastic_evaluate.delay().get() == {"policy_version": 1, "started": 0, "ended": 0, "kept": 1}
    assert ElasticAction.objects.count() == 1


def test_an_action_ends_when_its_condition_stops(windows: dict[str, AllocationWindow]) -> None:
    usage(windows["a"], util=5)
    services.elastic_evaluate(now=NOW + timedelta(minutes=15))
    usage(windows["a"], util=70, until=NOW + H, hours=1)  # the team got going
    later = NOW + H + timedelta(minutes=15)
    result = services.elastic_evaluate(now=later)
    assert (result.started, result.ended) == (0, 1)
    [action] = ElasticAction.objects.all()
    assert action.ended_at == later


def test_an_action_whose_gpus_change_ends_and_starts_again(windows: dict[str, AllocationWindow]) -> None:
    usage(windows["a"], util=[0, 0, 0, 0])
    services.elastic_evaluate(now=NOW + timedelta(minutes=15))  # 8 offered
    usage(windows["a"], util=20, until=NOW + H, hours=1)  # mean over 07:00–11:00 is 5%: 7 offered
    services.elastic_evaluate(now=NOW + H + timedelta(minutes=15))
    old, new = ElasticAction.objects.order_by("id")
    assert (old.gpus, old.ended_at, new.gpus, new.ended_at) == (8, NOW + H + timedelta(minutes=15), 7, None)


def test_an_unmeasured_window_is_never_flagged(windows: dict[str, AllocationWindow]) -> None:
    usage(windows["a"], util=5, hours=3)  # the hour 06:00–07:00 is missing
    assert services.elastic_evaluate(now=NOW + timedelta(minutes=15)).started == 0
    assert not ElasticAction.objects.exists()


def test_a_busy_pool_with_waiting_priority_work_records_a_promotion(windows: dict[str, AllocationWindow]) -> None:
    usage(windows["a"], util=95, wait=80, hours=1)
    usage(windows["b"], util=90, wait=40, hours=1)
    services.elastic_evaluate(now=NOW + timedelta(minutes=15))
    [action] = ElasticAction.objects.all()
    assert (action.kind, action.window, action.team, action.gpus) == ("promote", None, windows["a"].team, 12)
    assert action.queue_wait_minutes == Decimal("80.0")
    assert "The burst reserve, 12 GPUs, is promoted" in action.explanation


# --- carried to the schedulers -----------------------------------------------------------------


def list_windows(api: APIClient, token: str, **headers: Any) -> Any:
    return api.get("/api/v1/windows/", {"cluster": "atlas"}, **{**bearer(token), **headers})


def test_the_windows_api_shows_the_offer_and_its_etag_follows_it(windows: dict[str, AllocationWindow],
                                                                 world: Any) -> None:
    api, token = APIClient(), token_for(world.atlas)
    before = list_windows(api, token)
    assert {w["lendable_gpus"] for w in before.json()["results"]} == {0}
    etag = before["ETag"]
    assert list_windows(api, token, HTTP_IF_NONE_MATCH=etag).status_code == 304

    usage(windows["a"], util=5)
    services.elastic_evaluate(now=NOW + timedelta(minutes=15))
    offered = list_windows(api, token, HTTP_IF_NONE_MATCH=etag)
    assert offered.status_code == 200 and offered["ETag"] != etag
    by_id = {w["id"]: w for w in offered.json()["results"]}
    assert (by_id[windows["a"].pk]["lendable_gpus"], by_id[windows["a"].pk]["lendable_reason"]) == (7, "idle")
    assert (by_id[windows["b"].pk]["lendable_gpus"], by_id[windows["b"].pk]["lendable_reason"]) == (0, None)
    detail = api.get(f"/api/v1/windows/{windows['a'].pk}/", **bearer(token)).json()
    assert detail["lendable_gpus"] == 7
    assert list_windows(api, token, HTTP_IF_NONE_MATCH=offered["ETag"]).status_code == 304

    usage(windows["a"], util=90, until=NOW + H, hours=1)
    services.elastic_evaluate(now=NOW + H + timedelta(minutes=15))
    withdrawn = list_windows(api, token, HTTP_IF_NONE_MATCH=offered["ETag"])
    assert withdrawn.status_code == 200
    assert {w["lendable_gpus"] for w in withdrawn.json()["results"]} == {0}


def test_kueue_lends_a_priority_windows_offered_gpus(world: Any) -> None:
    plan = publish([W(world.h100, world.team_a, 8, 0, 100, ref=1, tier="priority")])
    window = plan.windows.get()
    api, token = APIClient(), token_for(world.orion)
    at = datetime(2026, 12, 2, 10, 30, tzinfo=UTC)

    def team_a_quota() -> dict[str, Any]:
        # What the Kueue sync renders from the windows the API serves (docket_scheduler.kueue).
        body = api.get("/api/v1/windows/", {"cluster": "orion"}, **bearer(token)).json()
        windows = parse_windows(body["results"])
        [queue] = [o for o in kueue.render(windows, at=at, cluster="orion") if o["kind"] == "ClusterQueue"]
        return queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]

    assert team_a_quota() == {"name": "nvidia.com/gpu", "nominalQuota": 8, "lendingLimit": 0, "borrowingLimit": 0}
    usage(window, util=10)
    services.elastic_evaluate(now=NOW + timedelta(minutes=15))
    assert team_a_quota()["lendingLimit"] == 7  # 8 × (1 − 10%) = 7.2


# --- invariants the database holds -------------------------------------------------------------


def test_the_database_allows_one_action_in_force_per_window(windows: dict[str, AllocationWindow]) -> None:
    from django.db import IntegrityError, transaction

    usage(windows["a"], util=5)
    services.elastic_evaluate(now=NOW + timedelta(minutes=15))
    action = ElasticAction.objects.get()
    duplicate = {f.attname: getattr(action, f.attname) for f in ElasticAction._meta.concrete_fields if f.name != "id"}
    with pytest.raises(IntegrityError), transaction.atomic():
        ElasticAction.objects.create(**duplicate)
    ElasticAction.objects.create(**{**duplicate, "ended_at": NOW + H})  # an ended one beside it is history
    with pytest.raises(IntegrityError), transaction.atomic():
        ElasticAction.objects.create(**{**duplicate, "window_id": None})  # only a promotion has no window


@pytest.mark.parametrize(
    ("change", "reason"),
    [({"elastic.idle_threshold_pct": 101}, "x"), ({"elastic.idle_span_minutes": 0}, "x"),
     ({"elastic.night_end": "22:00"}, "x"), ({"elastic.idle_threshold_pct": 20}, "")],
)
def test_the_store_refuses_an_impossible_policy_whichever_path_writes(
    world: Any, change: dict[str, Any], reason: str
) -> None:
    from django.core.exceptions import ValidationError

    from governed.models import PolicyChange
    from governed.services import policy_change_record

    before = PolicyChange.objects.count()
    with pytest.raises(ValidationError):
        policy_change_record(actor=None, changes=change, effective_week="2027-W10", reason=reason, source="command")
    assert PolicyChange.objects.count() == before


def test_the_night_is_read_in_the_committees_time_zone(world: Any, settings: Any) -> None:
    """21:30 UTC in December is 22:30 in Berlin: night there, not in UTC."""
    settings.TIME_ZONE = "Europe/Berlin"
    night = NOW.replace(hour=21, minute=30)
    plan = publish([W(world.a100, world.team_b, 16, 0, 100, ref=3, tier="standard")])
    window = plan.windows.get()
    usage(window, util=[40, 40, 40, 20], until=night.replace(minute=0))
    services.elastic_evaluate(now=night)
    [action] = ElasticAction.objects.all()
    assert (action.kind, action.gpus) == ("night_open", 12)
    assert "At night, standard window" in action.explanation
    settings.TIME_ZONE = "UTC"
    services.elastic_evaluate(now=night + timedelta(minutes=5))
    assert ElasticAction.objects.get().ended_at == night + timedelta(minutes=5)


def test_the_command_evaluates_as_of_a_moment_and_refuses_a_bad_one(windows: dict[str, AllocationWindow]) -> None:
    from io import StringIO

    from django.core.management import CommandError, call_command

    usage(windows["a"], util=5)
    out = StringIO()
    call_command("elastic_evaluate", "--now", "2026-12-02T10:15:00+00:00", stdout=out)
    assert "Elastic policy v1: 1 action started, 0 ended, 0 still in force." in out.getvalue()
    call_command("elastic_evaluate", "--now", "2026-12-02T10:45", stdout=out)  # committee time (UTC here)
    assert "0 actions started, 0 ended, 1 still in force." in out.getvalue()
    with pytest.raises(CommandError, match="--now must be an ISO 8601 date and time"):
        call_command("elastic_evaluate", "--now", "yesterday")
    assert ElasticAction.objects.count() == 1


def test_the_loop_through_the_api_usage_posted_idle_flagged_offered_back(
    windows: dict[str, AllocationWindow], world: Any
) -> None:
    """A scheduler posts four hours of low use for a window; the evaluation offers the GPUs back to it."""
    api, token = APIClient(), token_for(world.atlas)
    window = windows["b"]
    for hour in range(4):
        start = NOW - (4 - hour) * H
        posted = api.post("/api/v1/usage/", {
            "team": "team-b", "pool": "a100", "window": window.pk, "period_start": start.isoformat(),
            "period_end": (start + H).isoformat(), "gpu_hours_used": "3.20", "mean_utilization_pct": "20.0",
            "idempotency_key": f"collector-{hour}",
        }, format="json", **bearer(token))
        assert posted.status_code == 201, posted.content
    tasks.elastic_evaluate.delay()  # as beat runs it (eagerly here), at the test's clock: 10:00 and a little
    lent = {w["id"]: w for w in list_windows(api, token).json()["results"]}[window.pk]
    assert (lent["lendable_gpus"], lent["lendable_reason"]) == (12, "idle")  # 16 × (1 − 20%)
