"""The elastic policy's pages: read by anyone signed in, changed by the chair; idle grants shown where people look."""

from __future__ import annotations

from datetime import time, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.test import Client

from allocations.elastic import selectors as elastic_selectors
from allocations.elastic import services as elastic_services
from allocations.elastic.selectors import elastic_policy_current
from allocations.models import AllocationWindow, ElasticAction, UsageRecord
from committee import services
from governed.models import PolicyChange
from reports.models import Page
from tests.allocations.plans import W, publish
from tests.clock import FIXED_NOW
from tests.committee.reviewing import two_requests_in_review
from tests.elastic_policy import elastic_version_one_as_migrated

H = timedelta(hours=1)
VALID = {
    "idle_threshold_pct": "20", "idle_span_minutes": "360", "offer_idle_to_preemptible": "on",
    "promote_utilization_pct": "85", "promote_queue_wait_minutes": "30", "recent_span_minutes": "60",
    "night_start": "23:00", "night_end": "06:00", "night_utilization_pct": "30", "standby_wake_minutes": "5",
    "reason": "Teams ramp up slowly after a restart; six hours before we call it idle.",
}


@pytest.fixture(autouse=True)
def elastic_version_one(db: None) -> None:
    """Version 1 exists from the start (a data migration); an earlier transactional test's flush in the same worker
    removes it, and the first read writes it again: read it first, so the tests count only their own versions. Its
    spans are the migrated ones (240 and 60 minutes) whatever ran before."""
    elastic_version_one_as_migrated()
    elastic_selectors.elastic_policy_current()


def signed_in(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_anyone_signed_in_reads_the_policy_and_only_the_chair_sees_the_change_button(world: Any) -> None:
    page = signed_in(world.member_b).get("/elastic/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Version 1" in html
    assert "Idle below utilization %</td><td>25</td>" in html and "Night starts</td><td>22:00</td>" in html
    assert "/elastic/change/" not in html
    assert "/elastic/change/" in signed_in(world.chair).get("/elastic/").content.decode()


def test_the_chair_saves_a_new_version_shown_with_its_history_and_archived(
    world: Any, django_capture_on_commit_callbacks: Any
) -> None:
    chair = signed_in(world.chair)
    with django_capture_on_commit_callbacks(execute=True):
        response = chair.post("/elastic/change/", VALID)
    assert response.status_code == 302 and response["Location"] == "/elastic/"
    policy = elastic_policy_current().policy
    assert (policy.idle_threshold_pct, policy.idle_span_minutes, policy.promote_utilization_pct) == (20, 360, 85)
    stored = PolicyChange.objects.get(number=policy.version)
    assert policy.night_start.strftime("%H:%M") == "23:00" and stored.author == world.chair
    assert stored.source == "elastic" and stored.effective_week == "2026-W49"
    html = signed_in(world.member_a).get("/elastic/").content.decode()
    assert f"Version {policy.version}" in html and "six hours before we call it idle" in html
    assert "Idle below utilization %: <del>25</del> → <ins>20</ins>" in html
    assert "Night starts: <del>22:00</del> → <ins>23:00</ins>" in html
    def body(slug: str) -> str:
        latest = Page.objects.get(slug=slug).latest_revision
        assert latest is not None
        return latest.body

    # One change, one page: the store's.
    archived = body(f"policy-change-v{policy.version}")
    assert f"Version {policy.version} of the committee's rules" in archived
    assert "six hours before we call it idle" in archived and "| 25 | 20 |" in archived.replace("  ", " ")
    assert not Page.objects.filter(slug__startswith="elastic-policy-").exists()


@pytest.mark.parametrize("persona", ["member_a", "reviewer", "tech"])
def test_the_change_page_is_the_chairs(world: Any, persona: str) -> None:
    client = signed_in(getattr(world, persona))
    assert client.get("/elastic/change/").status_code == 403
    assert client.post("/elastic/change/", VALID).status_code == 403
    assert not PolicyChange.objects.filter(number__gt=1).exists()


def test_the_service_refuses_anyone_but_the_chair(world: Any) -> None:
    with pytest.raises(PermissionDenied):
        services.elastic_policy_change(actor=world.reviewer, parameters={"idle_threshold_pct": 10}, reason="No.")
    assert not PolicyChange.objects.filter(number__gt=1).exists()


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"idle_threshold_pct": "101"}, "idle_threshold_pct", "less than or equal to 100"),
        ({"night_utilization_pct": "-1"}, "night_utilization_pct", "Write a whole number"),
        ({"idle_span_minutes": "0"}, "idle_span_minutes", "greater than or equal to 1"),
        ({"night_end": "23:00"}, "night_end", "The night must end at another time than it starts."),
        ({"reason": "  "}, "reason", "Say why the policy changes: the reason is published with it."),
    ],
)
def test_a_bad_change_is_refused_with_a_clear_error_and_changes_nothing(
    world: Any, change: dict[str, str], field: str, message: str
) -> None:
    response = signed_in(world.chair).post("/elastic/change/", {**VALID, **change})
    assert response.status_code == 400
    assert message in " ".join(response.context["form"].errors[field])
    assert not PolicyChange.objects.filter(number__gt=1).exists()


def test_saving_the_same_parameters_is_refused(world: Any) -> None:
    # Version 1: 240 and 60 minutes as migrated, or the declared 5 and 10 where an earlier flush removed its rows.
    current = elastic_policy_current().parameters()
    same = {**VALID, **{name: value.strftime("%H:%M") if isinstance(value, time) else "on" if value is True
                        else str(value) for name, value in current.items()}}
    if current["offer_idle_to_preemptible"] is False:
        same.pop("offer_idle_to_preemptible")
    response = signed_in(world.chair).post("/elastic/change/", same)
    assert response.status_code == 400
    assert "Nothing changed: these are the parameters of version 1." in response.content.decode()
    assert not PolicyChange.objects.filter(number__gt=1).exists()


def test_the_service_validates_like_the_form(world: Any) -> None:
    with pytest.raises(ValidationError) as refused:
        services.elastic_policy_change(actor=world.chair, parameters={"recent_span_minutes": 0, "night_end": None},
                                       reason="")
    assert set(refused.value.message_dict) == {"recent_span_minutes", "night_end", "reason"}
    assert not PolicyChange.objects.filter(number__gt=1).exists()


# --- "granted but idle" where people look ------------------------------------------------------


@pytest.fixture
def idle_window(world: Any) -> AllocationWindow:
    """Team A's standard window on atlas/a100 this week, measured at 10% for four hours, evaluated."""
    plan = publish([W(world.a100, world.team_a, 8, 0, 100, ref=900), W(world.a100, world.team_b, 8, 0, 100, ref=901)])
    window = plan.windows.get(team=world.team_a)
    for i in range(4):
        start = FIXED_NOW - (4 - i) * H
        UsageRecord.objects.create(
            pool=world.a100, team=world.team_a, window=window, period_start=start, period_end=start + H,
            gpu_hours_used=Decimal(8), mean_utilization_pct=Decimal(10), idempotency_key=f"idle-{i}",
        )
    elastic_services.elastic_evaluate(now=FIXED_NOW + timedelta(minutes=15))
    assert ElasticAction.objects.filter(window=window, kind="idle").exists()
    return window


def test_the_windows_page_flags_the_idle_window(world: Any, idle_window: AllocationWindow) -> None:
    html = signed_in(world.reviewer).get("/windows/").content.decode()
    row = html.split(f'id="window-{idle_window.pk}"')[1].split("</tr>")[0]
    assert "granted but idle" in row
    busy = "10.0% of GPU time busy, 7 GPUs offered to preemptible work."
    assert f"W-{idle_window.pk}, Team A on atlas/a100: {busy}" in html
    other = idle_window.plan.windows.get(team=world.team_b)
    assert "granted but idle" not in html.split(f'id="window-{other.pk}"')[1].split("</tr>")[0]


def test_the_team_sees_its_idle_grant_on_the_portal_and_the_other_team_does_not(
    world: Any, idle_window: AllocationWindow
) -> None:
    assert "Granted but idle: 1 window" in signed_in(world.member_a).get("/requests/").content.decode()
    assert "granted but idle" not in signed_in(world.member_b).get("/requests/").content.decode().lower()


def test_the_review_notes_a_team_whose_grant_is_idle(world: Any, idle_window: AllocationWindow) -> None:
    a, b = two_requests_in_review(world)
    html = signed_in(world.reviewer).get(f"/review/{world.cycle.week}/").content.decode()
    assert 'id="idle-grants"' in html
    article_a = html.split(f'id="request-{a.pk}"')[1].split("</article>")[0]
    article_b = html.split(f'id="request-{b.pk}"')[1].split("</article>")[0]
    assert "Team A holds a window the cluster measures idle now." in article_a
    assert "idle now" not in article_b


def test_the_pool_history_page_explains_each_action(world: Any, idle_window: AllocationWindow) -> None:
    page = signed_in(world.member_b).get("/archive/dashboards/elastic/atlas/a100/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Elastic history of atlas/a100" in html and "in force" in html
    assert "was measured at 10% mean utilization over the last 4 h, under 25% all along" in html
    assert 'id="chart-elastic"' in html and "plotly/plotly.min" in html and "cdn" not in html.lower()
    quiet = signed_in(world.member_b).get("/archive/dashboards/elastic/orion/h100/").content.decode()
    assert "The elastic policy has taken no action on this pool yet." in quiet and "chart-elastic" not in quiet
    assert signed_in(world.member_b).get("/archive/dashboards/elastic/atlas/nope/").status_code == 404


def test_the_request_page_shows_its_window_idle_to_the_team(world: Any) -> None:
    from tests.committee.appealing import finalize_week
    from tests.committee.appealing import publish as publish_week

    first, second, _third = finalize_week(world)
    plan = publish_week(world)
    window = plan.windows.get(request_ref=first.pk)
    now = window.start + 6 * H
    for i in range(4):
        start = now - (4 - i) * H
        UsageRecord.objects.create(
            pool=window.pool, team=window.team, window=window, period_start=start, period_end=start + H,
            gpu_hours_used=Decimal(1), mean_utilization_pct=Decimal(3), idempotency_key=f"req-{i}",
        )
    elastic_services.elastic_evaluate(now=now + timedelta(minutes=15))
    html = signed_in(world.member_a).get(f"/requests/{first.pk}/").content.decode()
    assert "Granted but idle: 1 window" in html
    assert f"W-{window.pk}, Team A on atlas/a100: 3.0% of GPU time busy" in html
    assert "Granted but idle" not in signed_in(world.member_b).get(f"/requests/{second.pk}/").content.decode()
    # The agent next to the scheduler lent it minutes after: the request's page shows it with its measurement.
    from allocations.services import scheduler_client_create

    agent = scheduler_client_create(cluster=window.pool.cluster, name="elastic-agent").client
    elastic_services.agent_action_record(
        client=agent, idempotency_key="lend-1", kind="lend", pool_slug="a100", window_id=window.pk, team_slug=None,
        gpus=7, acted_at=now + timedelta(minutes=20), utilization_pct=Decimal("4.5"), queue_wait_minutes=None,
        span_minutes=5, measured_by="prometheus", policy_version=1, applied="sacctmgr -i modify qos", now=now + H)
    html = signed_in(world.member_a).get(f"/requests/{first.pk}/").content.decode()
    assert "Lent and taken back, minute by minute" in html and f"W-{window.pk} on atlas/a100: 7 GPUs, 4.5% busy" in html
    assert "minute by minute" not in signed_in(world.member_b).get(f"/requests/{second.pk}/").content.decode()


def test_the_chair_previews_a_change_over_the_last_week_and_nothing_is_saved(
    world: Any, idle_window: AllocationWindow, clock: Any
) -> None:
    clock.move_to(FIXED_NOW + timedelta(minutes=20))
    stricter = {**VALID, "idle_threshold_pct": "5", "idle_span_minutes": "240", "reason": ""}
    response = signed_in(world.chair).post("/elastic/change/", {**stricter, "preview": "1"})
    assert response.status_code == 200
    rows = {label: (now, proposed) for label, now, proposed in response.context["replay"].rows}
    # In force (25%): the window measured at 10% is idle at 10:15 for one hour, offering 7 GPUs; at 5%, never.
    assert rows["Granted but idle"] == ((1, 1, 7), (0, 0, 0))
    assert "Replayed over the last 7 days" in response.content.decode()
    assert "by the hour only" not in response.content.decode()  # spans of whole hours: the records fit them
    # The committee's figure, 5 minutes: the schedulers reported hours only, and the replay says so.
    minutes = signed_in(world.chair).post("/elastic/change/", {**VALID, "idle_span_minutes": "5", "preview": "1"})
    assert minutes.status_code == 200 and minutes.context["replay"].hourly_only
    assert "The schedulers reported usage by the hour only" in minutes.content.decode()
    assert not PolicyChange.objects.filter(number__gt=1).exists()
    bad = signed_in(world.chair).post("/elastic/change/", {**stricter, "night_end": "23:00", "preview": "1"})
    assert bad.status_code == 400 and bad.context["replay"] is None
    assert "The night must end at another time than it starts." in bad.context["form"].errors["night_end"]


def test_an_elastic_change_in_a_week_that_already_has_a_change_is_refused(client, world):
    from governed.selectors import policy_value
    from governed.services import policy_change_record

    # The elastic policy applies from the next hourly evaluation: its week is this one (2026-W49).
    policy_change_record(actor=world.chair, changes={"review.quorum": 3}, effective_week="2026-W49",
                         reason="Three scores", source="command")
    changes = PolicyChange.objects.count()
    client.force_login(world.chair)
    response = client.post("/elastic/change/", VALID)
    assert response.status_code == 400
    assert "Week 2026-W49 already has an adopted change" in response.content.decode()
    assert PolicyChange.objects.count() == changes
    assert policy_value(key="elastic.idle_threshold_pct", week="2026-W49") == 25
    assert f"Version {changes + 1}" not in signed_in(world.member_a).get("/elastic/").content.decode()


def test_the_preview_reads_the_minutes_where_the_collectors_posted_minutes_and_does_not_say_hours_only(
    world: Any, clock: Any
) -> None:
    """Team A's window busy at 80% from 09:00, then at 10% for the last five minutes before 10:00, posted minute by
    minute: at 10:15 a 5-minute idle span reads 09:55–10:00 from those minutes (idle, 7 GPUs offered), where the hour's
    mean (72.5%) would say busy."""
    plan = publish([W(world.a100, world.team_a, 8, 0, 100, ref=900)])
    window = plan.windows.get(team=world.team_a)
    for minute in range(60):
        start = FIXED_NOW - H + minute * timedelta(minutes=1)
        UsageRecord.objects.create(
            pool=world.a100, team=world.team_a, window=window, period_start=start,
            period_end=start + timedelta(minutes=1), gpu_hours_used=Decimal(8) / 60,
            mean_utilization_pct=Decimal(10 if minute >= 55 else 80), idempotency_key=f"minute-{minute}",
        )
    clock.move_to(FIXED_NOW + timedelta(minutes=20))
    response = signed_in(world.chair).post("/elastic/change/", {**VALID, "idle_span_minutes": "5", "preview": "1"})
    assert response.status_code == 200 and not response.context["replay"].hourly_only
    rows = {label: (now, proposed) for label, now, proposed in response.context["replay"].rows}
    # In force: version 1 as migrated, a 240-minute span, which one hour of minutes does not cover (not measured is
    # never idle); the proposal's 5 minutes are read from the minutes.
    assert rows["Granted but idle"] == ((0, 0, 0), (1, 1, 7))
    assert "by the hour only" not in response.content.decode()
    # The same hour posted as one record: the 5-minute span is read from the hour (72.5%, busy), and said so.
    UsageRecord.objects.filter(window=window).delete()
    UsageRecord.objects.create(pool=world.a100, team=world.team_a, window=window, period_start=FIXED_NOW - H,
                               period_end=FIXED_NOW, gpu_hours_used=Decimal(8), mean_utilization_pct=Decimal("72.5"),
                               idempotency_key="the-hour")
    hourly = signed_in(world.chair).post("/elastic/change/", {**VALID, "idle_span_minutes": "5", "preview": "1"})
    assert hourly.context["replay"].hourly_only and "by the hour only" in hourly.content.decode()
    assert {label: proposed for label, _now, proposed in hourly.context["replay"].rows}["Granted but idle"] == (0, 0, 0)
