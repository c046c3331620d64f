"""Outcomes against forecasts (docs/outcomes.md): the clock asks once when a grant's last window ends (also after a
missed beat, and for a run over several weeks only after its last week, across ISO week 53), the team reports with a
note (bad input refused, nothing changed; corrections kept in the history), the track record's arithmetic, and what
each overdue effect does (none, flag, block). Nothing changes a score."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.urls import reverse

from allocations import selectors as allocation_selectors
from committee import selectors, services, weeks
from committee.models import (
    CycleStatus,
    GpuRequest,
    ImpactForecast,
    Notification,
    NotificationKind,
    RealizedOutcome,
    RequestEvent,
)
from committee.services.notifications import notification_text
from core.errors import StateConflict
from governed.models import ChangeSource
from governed.services import policy_change_record
from tests.committee.reviewing import close, decide, score
from tests.conftest import committed
from tests.factories import file_request, forecast_fields, request_fields


def publish_week(world, *requests):
    close(world)
    for gpu_request in requests:
        for member in (world.chair, world.reviewer):
            score(member, gpu_request, 7, 5, 5)
        decide(world, gpu_request)
    world.cycle = committed(services.cycle_finalize, cycle=world.cycle, actor=world.chair)
    return committed(services.cycle_publish, actor=world.chair, cycle=world.cycle)


def window_of(plan, gpu_request):
    return next(w for w in allocation_selectors.plan_window_list(plan=plan) if w.request_ref == gpu_request.pk)


def asks(gpu_request):
    return Notification.objects.filter(kind=NotificationKind.OUTCOME_DUE, key=f"outcome:{gpu_request.pk}")


def set_policy(week, **values):
    policy_change_record(actor=None, changes={f"outcomes.{k}": v for k, v in values.items()}, effective_week=week,
                         reason="The committee wants forecasts checked.", source=ChangeSource.LAB)


def test_the_team_is_asked_once_when_the_grants_last_window_ends_and_a_missed_beat_is_made_up(world):
    granted = file_request(world)
    late = file_request(world, team=world.team_b, pool=world.h100, gpu_count=4, min_gpu_count=4)
    plan = publish_week(world, granted, late)
    end, late_end = window_of(plan, granted).end, window_of(plan, late).end

    services.clock_tick(now=end - timedelta(minutes=1))
    assert not RealizedOutcome.objects.exists()

    services.clock_tick(now=end)  # the :00 tick at the end: the ask, for team A's members only
    outcome = RealizedOutcome.objects.get(request=granted)
    assert (outcome.last_window_end, outcome.due_at) == (end, end + timedelta(days=14))
    assert sorted(asks(granted).values_list("recipient__username", flat=True)) == sorted(
        [world.lead_a.username, world.member_a.username])
    text = notification_text(asks(granted).first())
    assert f"R-{granted.pk}" in text and "50,000.00 USD/week" in text and "with a note" in text

    # Beat down: no tick until three days after team B's window ended; the next one asks, once.
    services.clock_tick(now=late_end + timedelta(days=3, minutes=7))
    services.clock_tick(now=late_end + timedelta(days=3, hours=1))
    assert RealizedOutcome.objects.get(request=late).due_at == late_end + timedelta(days=14)
    assert RealizedOutcome.objects.count() == 2 and asks(granted).count() == 2 and asks(late).count() == 2


def test_a_run_over_iso_week_53_is_asked_after_its_last_weeks_window_at_monday_00_00(world):
    world.cycle = services.cycle_create(week="2026-W53")
    run = file_request(world, title="Pre-training", earliest_start=world.cycle.starts_at,
                       latest_end=world.cycle.ends_at, run_weeks=2)
    plan = publish_week(world, run)
    first_end = window_of(plan, run).end
    assert first_end == weeks.week_bounds("2026-W53")[1] == datetime(2027, 1, 4, tzinfo=UTC)  # Monday 00:00

    services.outcome_asks_due(now=first_end + timedelta(hours=1))
    assert not RealizedOutcome.objects.exists()  # week 2 of the run is still to come

    services.run_continuation_explain(actor=world.lead_a, gpu_request=run, week="2027-W01",
                                      reason="Data loading first; the GPUs are busy from Monday.")
    world.cycle = services.cycle_create(week="2027-W01")
    publish_week(world)  # places the run's second week first, confirmed
    last_end = weeks.week_bounds("2027-W01")[1]
    services.outcome_asks_due(now=last_end - timedelta(minutes=1))
    assert not RealizedOutcome.objects.exists()
    assert services.outcome_asks_due(now=last_end) == 1
    assert services.outcome_asks_due(now=last_end + timedelta(hours=1)) == 0
    assert RealizedOutcome.objects.get(request=run).last_window_end == last_end == datetime(2027, 1, 11, tzinfo=UTC)


@pytest.fixture
def asked(world):
    """Team A's granted request whose last window has ended: asked for its outcome."""
    granted = file_request(world)
    plan = publish_week(world, granted)
    services.outcome_asks_due(now=window_of(plan, granted).end)
    return granted


def test_a_report_is_refused_with_a_clear_error_and_nothing_changes(world, asked, client):
    outcome = RealizedOutcome.objects.get(request=asked)
    bad = [("", "a note", "Give the realized value"), ("lots", "a note", "“lots” is not a number."),
           ("-5", "a note", "cannot be negative"), ("1.234", "a note", "at most two decimals"),
           ("NaN", "a note", "is not a number"), ("1200", "  ", "Say in a note"),
           ("1200", "x" * 2001, "at most 2000 characters")]
    for value, note, message in bad:
        with pytest.raises(ValidationError) as refused:
            services.outcome_report(actor=world.member_a, gpu_request=asked, value=value, note=note)
        assert message in str(refused.value), value
    with pytest.raises(PermissionDenied, match="Only a member of"):
        services.outcome_report(actor=world.member_b, gpu_request=asked, value="1", note="n")

    client.force_login(world.member_a)
    url = reverse("committee:request-outcome", args=[asked.pk])
    page = client.post(url, {"value": "1,2", "note": ""})
    assert page.status_code == 400 and "Say in a note" in page.content.decode()
    api = client.post(reverse("api-request-outcome", args=[asked.pk]), {"value": "-1", "note": "n", "extra": 1},
                      content_type="application/json")
    assert api.status_code == 400 and "extra" in api.content.decode()
    api = client.post(reverse("api-request-outcome", args=[asked.pk]), {"value": -1, "note": "n"},
                      content_type="application/json")
    assert api.status_code == 400 and "cannot be negative" in api.json()["value"][0]
    client.force_login(world.member_b)
    assert client.post(reverse("api-request-outcome", args=[asked.pk]), {"value": 1, "note": "n"},
                       content_type="application/json").status_code in (403, 404)

    outcome.refresh_from_db()
    assert (outcome.value, outcome.note, outcome.reported_at) == (None, "", None)
    assert not RequestEvent.objects.filter(request=asked, action__startswith="outcome").exists()


def test_not_asked_yet_is_a_conflict(world):
    gpu_request = file_request(world)
    with pytest.raises(StateConflict, match="not asked for"):
        services.outcome_report(actor=world.lead_a, gpu_request=gpu_request, value="1", note="n")


def test_the_team_reports_and_corrects_on_the_page_and_the_api_and_the_history_keeps_both(world, asked, client):
    client.force_login(world.member_a)
    detail = client.get(reverse("committee:request-detail", args=[asked.pk])).content.decode()
    assert "its team reports the realized outcome against the forecast by" in detail
    url = reverse("committee:request-outcome", args=[asked.pk])
    assert client.post(url, {"value": "40,000", "note": "Measured over four weeks."}).status_code == 302
    api = client.post(reverse("api-request-outcome", args=[asked.pk]), {"value": 45000.5, "note": "Finance's figure."},
                      content_type="application/json")
    assert api.status_code == 200
    body = api.json()
    assert (body["value"], body["unit"], body["ratio"], body["overdue"]) == ("45000.50", "USD/week", "0.9000", False)
    assert Decimal(body["a100_gpu_hours"]) == 16 * 48  # atlas/a100 weighs 1
    history = list(RequestEvent.objects.filter(request=asked, action__startswith="outcome").order_by("id"))
    assert [(e.action, e.detail_display) for e in history] == [
        ("outcome reported", "40,000.00 USD/week: Measured over four weeks."),
        ("outcome corrected", "40,000.00 → 45,000.50 USD/week: Finance's figure."),
    ]
    page = client.get(url).content.decode()
    assert "90% of the forecast" in page and "Correct the outcome" in page


def _outcome(world, value, *, ended, due_in_days=14, forecast=Decimal(50000)):
    """A granted request of team A's, asked for its outcome (reported when `value` is given), made as rows: the
    selectors read only these."""
    cycle = services.cycle_create(week=weeks.week_label(ended), status=CycleStatus.PUBLISHED)
    fields = request_fields(world, pool=world.a100)
    gpu_request = GpuRequest.objects.create(team=world.team_a, cycle=cycle, status="decided", submitted_at=ended,
                                            **fields)
    ImpactForecast.objects.create(request=gpu_request, **forecast_fields(estimated_value=forecast))
    return RealizedOutcome.objects.create(
        request=gpu_request, team=gpu_request.team, last_window_end=ended, asked_at=ended,
        due_at=ended + timedelta(days=due_in_days), value=value, reported_at=None if value is None else ended,
        reported_by_name="" if value is None else "Lead A")


def test_the_track_record_is_the_mean_of_realized_over_forecast_of_the_latest_outcomes_and_counts_overdue(world):
    now = datetime(2026, 12, 2, 10, tzinfo=UTC)
    week = timedelta(days=7)
    # Oldest first: 10× (falls out of the latest five), then 0.5, 1.0, 1.5, 2.0, 0 (mean 1.0), a forecast of 0
    # (no ratio: not counted, but one of the latest five), one overdue, one asked but not due yet.
    for n, value in enumerate([500000, 25000, 50000, 75000, 100000, 0]):
        _outcome(world, Decimal(value), ended=now - (12 - n) * week)
    _outcome(world, Decimal(10), ended=now - 5 * week, forecast=Decimal(0))
    _outcome(world, None, ended=now - 3 * week)  # due a week ago
    _outcome(world, None, ended=now - timedelta(days=2))  # due in 12 days
    record = selectors.track_records(team_ids=[world.team_a.pk], week="2026-W49", now=now)[world.team_a.pk]
    # The latest five reported: 0 (forecast 0, no ratio), 0, 2.0, 1.5, 1.0 → mean of four = 4.5 / 4.
    assert (record.ratio, record.counted, record.window, record.overdue_count) == (Decimal("1.125"), 4, 5, 1)
    assert record.ratio_pct == 112 and record.flagged  # the default effect is flag

    set_policy("2026-W49", track_record_count=2, grace_days=30)
    record = selectors.track_records(team_ids=[world.team_a.pk], week="2026-W49", now=now)[world.team_a.pk]
    assert (record.ratio, record.counted) == (Decimal(0), 1)  # latest two: forecast-0 one and 0 / 50,000
    empty = selectors.track_records(team_ids=[world.team_b.pk], week="2026-W49", now=now)[world.team_b.pk]
    assert (empty.ratio, empty.counted, empty.overdue_count, empty.flagged) == (None, 0, 0, False)


def test_the_three_overdue_effects_and_no_score_changes(world, client):
    overdue = _outcome(world, None, ended=datetime(2026, 11, 2, tzinfo=UTC))  # due 16 Nov 2026
    scored = file_request(world, team=world.team_a)
    close(world)
    for member in (world.chair, world.reviewer):
        score(member, scored, 6, 5, 5)
    before = selectors.week_ranking(cycle=world.cycle)
    client.force_login(world.chair)
    review = reverse("committee:review-cycle", args=[world.cycle.week])

    page = client.get(review).content.decode()  # flag, by default
    assert "1 outcome overdue" in page and "outcome-flag" in page
    assert selectors.overdue_block_reason(team=world.team_a, week="2026-W50") is None

    set_policy("2026-W49", overdue_effect="none")
    page = client.get(review).content.decode()
    assert "outcome-flag" not in page and "1 outcome overdue" in page  # the record still shows

    set_policy("2026-W50", overdue_effect="block")
    world.cycle = services.cycle_create(week="2026-W51")
    reason = selectors.overdue_block_reason(team=world.team_a, week="2026-W51")
    assert reason == (f"Team A has not reported the realized outcome of R-{overdue.request_id} (due since "
                      "Mon 16 Nov 2026): report it on the request's page before filing a new weekly request.")
    draft = file_request(world, submit=False)
    with pytest.raises(StateConflict) as refused:
        services.request_submit(actor=world.lead_a, gpu_request=draft)
    assert reason in str(refused.value)
    draft.refresh_from_db()
    assert draft.status == "draft"
    file_request(world, team=world.team_b, pool=world.h100, gpu_count=4, min_gpu_count=4)  # team B is not blocked

    services.outcome_report(actor=world.member_a, gpu_request=overdue.request, value="1", note="It slipped.")
    assert selectors.overdue_block_reason(team=world.team_a, week="2026-W51") is None
    assert services.request_submit(actor=world.lead_a, gpu_request=draft).status == "submitted"

    # A poor record (1 of 50,000) changes no score and no rank: scoring stays the committee's.
    after = selectors.week_ranking(cycle=selectors.cycle_get(week="2026-W50"))
    assert before == after
