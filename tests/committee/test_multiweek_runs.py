"""Runs over several weeks (docs/multi-week-runs.md): filed, granted whole or in part, placed in their first week,
held at the start of the following weeks ahead of new requests, and continued on the evidence of measured use."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from allocations import selectors as allocation_selectors
from allocations.models import AllocationWindow, Commitment, CommitmentState, UsageRecord
from committee import selectors, services, weeks
from committee.models import GpuRequest, LifecycleEvent, Notification, WebhookSubscription
from core.errors import StateConflict
from reports.models import Page
from tests.committee.reviewing import close, decide, score
from tests.conftest import committed
from tests.factories import file_request


def run_fields(world, **overrides):
    """A three-week run on atlas/a100: 16 GPUs (at least 8), its first week's last 48 hours, then two whole weeks."""
    fields = {"title": "Pre-training", "gpu_count": 16, "min_gpu_count": 8, "duration_hours": 48,
              "earliest_start": world.cycle.starts_at, "latest_end": world.cycle.ends_at, "run_weeks": 3}
    fields.update(overrides)
    return fields


def publish_week(world, *requests_and_scores, decisions=None, closed=False):
    """Close (unless `closed`), score (chair and reviewer), decide (grant unless told), finalize and publish the
    world's week."""
    if not closed:
        close(world)
    for gpu_request, impact in requests_and_scores:
        for member in (world.chair, world.reviewer):
            score(member, gpu_request, impact, 5, 5)
    for gpu_request, _impact in requests_and_scores:
        decide(world, gpu_request, **(decisions or {}).get(gpu_request.pk, {}))
    world.cycle = committed(services.cycle_finalize, cycle=world.cycle, actor=world.chair)
    return committed(services.cycle_publish, actor=world.chair, cycle=world.cycle)


def next_week(world):
    label = weeks.week_label(weeks.parse_week(world.cycle.week) + timedelta(days=7))
    world.cycle = services.cycle_create(week=label)
    return world.cycle


def windows_of(plan):
    return {w.request_ref: w for w in allocation_selectors.plan_window_list(plan=plan)}


def test_a_granted_three_week_run_is_placed_at_the_end_of_its_first_week_and_committed_for_two_more(world):
    run = file_request(world, **run_fields(world))
    first_week = world.cycle.week

    plan = publish_week(world, (run, 8))

    window = windows_of(plan)[run.pk]
    assert (window.gpu_count, window.end) == (16, world.cycle.ends_at)  # it reaches the week's end
    commitments = list(Commitment.objects.order_by("week"))
    assert [(c.week_number, c.gpu_count, c.state, c.first_window_id) for c in commitments] == [
        (2, 16, CommitmentState.COMMITTED, window.pk), (3, 16, CommitmentState.COMMITTED, window.pk)]
    # Continuous: each week starts where the one before ends, Monday 00:00 in the committee's zone.
    assert commitments[0].start == window.end and commitments[1].start == commitments[0].end
    assert commitments[1].end == weeks.week_bounds(commitments[1].week)[1]
    assert commitments[0].week == weeks.week_label(weeks.parse_week(first_week) + timedelta(days=7))


def test_a_runs_page_says_which_week_its_decision_and_its_window_are_of(world, client):
    run = file_request(world, **run_fields(world))
    first_week = world.cycle.week
    first = publish_week(world, (run, 8))
    client.force_login(world.lead_a)
    url = reverse("committee:request-detail", args=[run.pk])
    page = client.get(url).content.decode()
    assert f"in week {first_week}, the first of the run's 3 weeks" in page and "Now, in week" not in page
    used_well(world, windows_of(first)[run.pk], "run-week-1")
    second = next_week(world)
    publish_week(world)  # the run's second week: its window is now the one the page shows
    page = client.get(url).content.decode()
    assert f"in week {first_week}, the first of the run's 3 weeks" in page and f"Now, in week {second.week}:" in page


def test_the_run_holds_the_start_of_its_next_week_ahead_of_a_higher_scored_new_request(world):
    run = file_request(world, **run_fields(world))
    first = publish_week(world, (run, 6))
    next_week(world)
    UsageRecord.objects.create(  # the run used its GPUs well in its first week
        pool=world.a100, team=world.team_a, period_start=world.cycle.starts_at - timedelta(hours=48),
        period_end=world.cycle.starts_at, gpu_hours_used=Decimal(700), mean_utilization_pct=Decimal("91.5"),
        window=windows_of(first)[run.pk], idempotency_key="run-week-1",
    )
    new = file_request(world, team=world.team_b, title="Launch eval", gpu_count=46, min_gpu_count=10,
                       duration_hours=24, earliest_start=world.cycle.starts_at,
                       latest_end=world.cycle.starts_at + timedelta(hours=24))

    preview = selectors.cycle_publish_placement(cycle=world.cycle, now=world.cycle.starts_at)
    assert [(c.commitment.request_ref, c.utilization_pct, c.threshold_pct, c.state)
            for c in preview.continuations] == [(run.pk, Decimal("91.5"), 50, CommitmentState.CONFIRMED)]
    plan = publish_week(world, (new, 10))

    placed = windows_of(plan)
    held = placed[run.pk]
    assert (held.start, held.end, held.gpu_count, held.team) == (
        world.cycle.starts_at, world.cycle.ends_at, 16, world.team_a)
    assert placed[new.pk].gpu_count == 30  # 46 standard GPUs less the run's 16, though it scored higher
    assert [e.request_ref for e in plan.explanations.all()][:2] == [run.pk, new.pk]
    settled = Commitment.objects.get(week=world.cycle.week)
    assert (settled.state, settled.utilization_pct, settled.threshold_pct, settled.settled_by_name) == (
        CommitmentState.CONFIRMED, Decimal("91.5"), 50, "Chair")
    assert run.events.filter(action="published").count() == 2  # its history shows both weeks
    record = Page.objects.select_related("latest_revision").get(source_key=f"cycle:{world.cycle.week}")
    assert record.latest_revision is not None
    body = record.latest_revision.body
    assert "## Runs carried into the week" in body
    assert "| Team A | atlas/a100 | 16 | week 2 of 3 | confirmed | 91.5% (threshold 50%) | — | Chair |" in body
    assert record.latest_revision.data["continuations"][0]["state"] == "confirmed"


def test_a_run_with_nothing_measured_in_its_last_week_is_withheld_and_the_review_says_nothing_was_measured(
    world, client
):
    run = file_request(world, **run_fields(world))
    publish_week(world, (run, 6))
    next_week(world)  # no scheduler reported the run's first week
    close(world)

    client.force_login(world.reviewer)
    page = client.get(reverse("committee:review-cycle", args=[world.cycle.week])).content.decode()
    assert "withheld" in page and "nothing measured" in page
    assert "Nothing measured in the run's last week and no reason given" in page
    table = page[page.index('id="continuations"'):]
    assert f">Pre-training</a> <small>R-{run.pk}, week 2 of 3" in table[:table.index("</table>")]  # named by title
    assert "Below the threshold" not in page


@pytest.mark.parametrize("reason", ["", "The data loader was rewritten mid-week; the run resumed Sunday."])
def test_a_week_of_low_measured_use_withholds_the_continuation_unless_the_team_says_why(world, client, reason):
    run = file_request(world, **run_fields(world))
    first = publish_week(world, (run, 6))
    next_week(world)
    UsageRecord.objects.create(
        pool=world.a100, team=world.team_a, period_start=world.cycle.starts_at - timedelta(hours=48),
        period_end=world.cycle.starts_at, gpu_hours_used=Decimal(200), mean_utilization_pct=Decimal(30),
        window=windows_of(first)[run.pk], idempotency_key="run-week-1",
    )
    Commitment.objects.filter(week=world.cycle.week).update(team_reason=reason)
    WebhookSubscription.objects.create(team=world.team_a, url="https://hooks.example/run", secret="s" * 32,
                                       created_by_name="Member A")
    new = file_request(world, team=world.team_b, title="Launch eval", gpu_count=46, min_gpu_count=10,
                       duration_hours=24, earliest_start=world.cycle.starts_at,
                       latest_end=world.cycle.starts_at + timedelta(hours=24))
    close(world)
    for member in (world.chair, world.reviewer):
        score(member, new, 10, 5, 5)
    decide(world, new)

    client.force_login(world.reviewer)  # the review shows the evidence and what it means for the run
    page = client.get(reverse("committee:review-cycle", args=[world.cycle.week])).content.decode()
    assert "Runs continuing into this week" in page and "30.0%" in page and "(threshold 50%)" in page
    if reason:
        assert "confirmed" in page and reason in page
    else:
        assert "withheld" in page and "Below the threshold and no reason given" in page
    world.cycle = services.cycle_finalize(cycle=world.cycle, actor=world.chair)
    plan = services.cycle_publish(actor=world.chair, cycle=world.cycle)

    placed = windows_of(plan)
    settled = Commitment.objects.get(week=world.cycle.week)
    assert settled.utilization_pct == Decimal(30)
    if reason:
        assert settled.state == CommitmentState.CONFIRMED and placed[run.pk].gpu_count == 16
    else:
        assert settled.state == CommitmentState.WITHHELD and run.pk not in placed  # the committee decides
        assert placed[new.pk].gpu_count == 46
    # Told once, to the team and its webhook subscriber, with the evidence.
    (event,) = LifecycleEvent.objects.filter(request_ref=run.pk)
    assert event.type == ("grant.continuation_confirmed" if reason else "grant.continuation_withheld")
    data = event.data
    assert (data["week"], data["week_number"], data["utilization_pct"], data["threshold_pct"], data["team_reason"],
            event.cluster_id) == (world.cycle.week, 2, 30.0, 50, reason, world.a100.cluster_id)
    assert event.deliveries.count() == 1
    assert Notification.objects.filter(recipient=world.member_a, key=f"lifecycle:{event.pk}").exists()


def test_the_committee_grants_the_first_weeks_only_or_defers_the_run(world):
    run = file_request(world, **run_fields(world))
    other = file_request(world, team=world.team_b, **run_fields(world, title="Fine-tune", run_weeks=2))
    close(world)
    for member in (world.chair, world.reviewer):
        score(member, run, 8, 5, 5)
        score(member, other, 6, 5, 5)
    for weeks_asked in (0, 4):
        with pytest.raises(ValidationError) as excinfo:
            decide(world, run, granted_weeks=weeks_asked)
        assert "from 1 to 3" in str(excinfo.value.message_dict["granted_weeks"])
    with pytest.raises(ValidationError, match="Only a grant covers weeks"):
        decide(world, other, outcome="defer", granted_weeks=1)
    assert not run.cycle.decisions.exists()  # the refusals changed nothing
    decide(world, run, granted_weeks=2)
    decide(world, other, outcome="defer", rationale="Later.")
    world.cycle = services.cycle_finalize(cycle=world.cycle, actor=world.chair)

    services.cycle_publish(actor=world.chair, cycle=world.cycle)

    assert [(c.request_ref, c.week_number) for c in Commitment.objects.all()] == [(run.pk, 2)]
    run.decision.refresh_from_db()
    assert (run.decision.granted_weeks, run.decision.weeks_granted, other.decision.weeks_granted) == (2, 2, 0)


def test_a_correction_that_no_longer_places_the_run_releases_its_commitments(world):
    run = file_request(world, **run_fields(world))
    publish_week(world, (run, 8))
    world.a100.gpu_count = 4  # the pool went down to fewer GPUs than the run's minimum
    world.a100.save()

    services.cycle_publish(actor=world.chair, cycle=world.cycle, reason="atlas/a100 is down.",
                           now=world.cycle.starts_at - timedelta(days=1))

    assert set(Commitment.objects.values_list("state", flat=True)) == {CommitmentState.RELEASED}
    assert not AllocationWindow.objects.filter(request_ref=run.pk, withdrawal__isnull=True).exists()


def test_a_run_spans_at_most_the_policys_weeks_and_reaches_the_end_of_its_first_week(world):
    with pytest.raises(ValidationError) as excinfo:
        file_request(world, **run_fields(world, run_weeks=5))
    assert excinfo.value.message_dict["run_weeks"] == ["A request spans from 1 to 4 weeks."]
    with pytest.raises(ValidationError) as excinfo:
        file_request(world, **run_fields(world, latest_end=world.cycle.ends_at - timedelta(hours=1)))
    assert "continues into the next week without a gap" in excinfo.value.message_dict["latest_end"][0]
    assert not GpuRequest.objects.exists()
    assert selectors.run_max_weeks(week=world.cycle.week) == 4


def test_the_team_says_why_on_the_request_page_and_only_the_team(world, client):
    run = file_request(world, **run_fields(world))
    publish_week(world, (run, 8))
    week_2 = Commitment.objects.get(week_number=2).week
    url = reverse("committee:request-run-explain", args=[run.pk])

    client.force_login(world.member_b)  # another team: not its request
    assert client.post(url, {"week": week_2, "reason": "Mine."}).status_code == 404
    client.force_login(world.member_a)
    page = client.get(reverse("committee:request-detail", args=[run.pk])).content.decode()
    assert "The run's later weeks" in page and "(week 2 of 3)" in page and "Save the reason" in page
    answer = client.post(url, {"week": week_2, "reason": "   "}, follow=True)
    assert "Say why the run used less than the threshold." in answer.content.decode()
    assert client.post(url, {"week": week_2, "reason": "The loader stalled on Tuesday."}).status_code == 302

    assert Commitment.objects.get(week=week_2).team_reason == "The loader stalled on Tuesday."
    event = run.events.get(action="run explained")
    assert (event.actor_name, event.detail_display) == (
        "Member_A", f"Week {week_2} of the run: The loader stalled on Tuesday.")
    Commitment.objects.filter(week=week_2).update(state=CommitmentState.WITHHELD, settled_at=world.cycle.ends_at)
    answer = client.post(url, {"week": week_2, "reason": "Later."}, follow=True)
    assert "is settled already" in answer.content.decode()
    assert Commitment.objects.get(week=week_2).team_reason == "The loader stalled on Tuesday."


def test_schedulers_read_the_runs_later_weeks_with_their_state_and_the_etag_follows_them(world):
    from rest_framework.test import APIClient

    from docket_scheduler.base import parse_windows
    from tests.allocations.plans import bearer, token_for

    run = file_request(world, **run_fields(world))
    publish_week(world, (run, 8))
    api, token = APIClient(), token_for(world.atlas)

    first = api.get("/api/v1/windows/", {"cluster": "atlas"}, **bearer(token))
    body = first.json()
    window = next(w for w in body["results"] if w["request_id"] == run.pk)
    assert [(c["week_of_run"], c["state"], c["gpu_count"], c["team"], c["pool"], c["request_id"])
            for c in body["commitments"]] == [(2, "committed", 16, "team-a", "a100", run.pk),
                                              (3, "committed", 16, "team-a", "a100", run.pk)]
    assert body["commitments"][0]["start"] == window["end"]  # the run continues without a gap
    assert body["commitments"][1]["start"] == body["commitments"][0]["end"]
    assert len(parse_windows(body["results"])) == len(body["results"])  # the scheduler package still reads it
    week_3 = api.get("/api/v1/windows/", {"cluster": "atlas", "week": body["commitments"][1]["week"]},
                     **bearer(token)).json()
    assert (week_3["count"], [c["week_of_run"] for c in week_3["commitments"]]) == (0, [3])
    unchanged = api.get("/api/v1/windows/", {"cluster": "atlas"}, HTTP_IF_NONE_MATCH=first["ETag"], **bearer(token))
    assert unchanged.status_code == 304

    world.a100.gpu_count = 4  # a correction no longer places the run: its later weeks are released
    world.a100.save()
    services.cycle_publish(actor=world.chair, cycle=world.cycle, reason="atlas/a100 is down.",
                           now=world.cycle.starts_at - timedelta(days=1))

    changed = api.get("/api/v1/windows/", {"cluster": "atlas"}, HTTP_IF_NONE_MATCH=first["ETag"], **bearer(token))
    assert changed.status_code == 200 and changed["ETag"] != first["ETag"]
    assert [c["state"] for c in changed.json()["commitments"]] == ["released", "released"]
    assert api.get("/api/v1/windows/", {"cluster": "orion"}, **bearer(token_for(world.orion))).json()[
        "commitments"] == []


@pytest.mark.parametrize("verdict", ["continue", "release"])
def test_the_committee_decides_a_withheld_continuation_at_the_review(world, client, verdict):
    run = file_request(world, **run_fields(world))
    publish_week(world, (run, 6))
    next_week(world)  # nothing measured for the run's first week: its continuation is withheld
    new = file_request(world, team=world.team_b, title="Launch eval", gpu_count=46, min_gpu_count=10,
                       duration_hours=24, earliest_start=world.cycle.starts_at,
                       latest_end=world.cycle.starts_at + timedelta(hours=24))
    close(world)
    commitment = Commitment.objects.get(week=world.cycle.week)
    url = reverse("committee:review-run-continuation", args=[world.cycle.week, commitment.pk])

    client.force_login(world.member_a)  # the run's team does not decide
    assert client.post(url, {"verdict": "continue"}).status_code == 403
    client.force_login(world.reviewer)  # only the chair records decisions here (DOCKET_DECISIONS_RECORDED_BY)
    page = client.get(reverse("committee:review-cycle", args=[world.cycle.week])).content.decode()
    assert "nothing measured" in page and "Continue the run" in page
    client.force_login(world.chair)
    assert client.post(url, {"verdict": verdict}).status_code == 302

    commitment.refresh_from_db()
    assert (commitment.state, commitment.settled_by_name) == (
        CommitmentState.CONFIRMED if verdict == "continue" else CommitmentState.RELEASED, "Chair")
    assert run.events.filter(action="run continued" if verdict == "continue" else "run released").exists()
    answer = client.post(url, {"verdict": "release"}, follow=True)  # settled: once only
    assert "the committee decides only on a withheld continuation" in answer.content.decode()
    for member in (world.chair, world.reviewer):
        score(member, new, 10, 5, 5)
    decide(world, new)
    world.cycle = services.cycle_finalize(cycle=world.cycle, actor=world.chair)
    placed = windows_of(services.cycle_publish(actor=world.chair, cycle=world.cycle))
    assert (run.pk in placed) == (verdict == "continue")
    assert placed[new.pk].gpu_count == (30 if verdict == "continue" else 46)
    # Continued at the review: told once, not again when the week is published; a week let go is no continuation.
    events = LifecycleEvent.objects.filter(request_ref=run.pk)
    assert [(e.type, e.data["settled_by"]) for e in events] == (
        [("grant.continuation_confirmed", "Chair")] if verdict == "continue" else [])


def test_the_forward_calendar_shows_each_pools_weeks_ahead_committed_reserved_and_free(world):
    from rest_framework.test import APIClient

    run = file_request(world, **run_fields(world))
    publish_week(world, (run, 6))
    week_1 = world.cycle.week
    now = world.cycle.starts_at - timedelta(days=2)  # the Saturday before the run's first week

    calendar = {c.pool.key: c for c in selectors.forward_calendar(now=now)}
    a100 = calendar["atlas/a100"].weeks
    assert a100[0].week == week_1 and len(a100) == 4  # grants.max_weeks, from the week ahead
    burst, standby, _fast_lane = world.a100.reserves()  # no fast lane here (0 %)
    reserved = 64 * burst // 100 + 64 * standby // 100  # reserves round down (the engine's rule)
    assert [(w.committed_gpu_hours, w.reserved_gpu_hours) for w in a100] == [
        (16 * 48, reserved * 168), (16 * 168, reserved * 168), (16 * 168, reserved * 168), (0, reserved * 168)]
    assert [w.free_gpu_hours for w in a100] == [64 * 168 - reserved * 168 - c for c in (768, 2688, 2688, 0)]
    assert a100[1].committed_pct == round(100 * 16 / (64 - reserved))
    assert all(w.committed_gpu_hours == 0 for w in calendar["orion/h100"].weeks)

    # A week the committee let go is free again.
    Commitment.objects.filter(request_ref=run.pk, week_number=3).update(state=CommitmentState.RELEASED)
    again = {c.pool.key: c for c in selectors.forward_calendar(now=now)}["atlas/a100"].weeks
    assert [w.committed_gpu_hours for w in again] == [768, 2688, 0, 0]

    api = APIClient()
    assert api.get("/api/v1/calendar/").status_code in (401, 403)
    api.force_authenticate(world.member_b)
    body = api.get("/api/v1/calendar/").json()
    row = next(p for p in body if p["pool"] == "atlas/a100")
    assert (row["gpu_count"], [w["committed_gpu_hours"] for w in row["weeks"]][:2]) == (64, [768, 2688])


def test_the_forward_calendar_counts_a_summer_time_week_by_its_hours(world, settings):
    from datetime import UTC, datetime

    settings.TIME_ZONE = "Europe/Berlin"
    # Saturday 20 March 2027: the weeks ahead are 2027-W12 (clocks go forward on Sunday 28 March), W13, ...
    weeks_ahead = selectors.forward_calendar(now=datetime(2027, 3, 20, 12, tzinfo=UTC), week_count=2)[0].weeks
    assert [(w.week, w.hours, w.capacity_gpu_hours) for w in weeks_ahead] == [
        ("2027-W12", 167, 64 * 167), ("2027-W13", 168, 64 * 168)]
    assert weeks_ahead[0].end == weeks_ahead[1].start


def used_well(world, window, key):
    UsageRecord.objects.create(
        pool=world.a100, team=world.team_a, period_start=window.start, period_end=window.end,
        gpu_hours_used=Decimal(700), mean_utilization_pct=Decimal("90"), window=window, idempotency_key=key,
    )


def test_a_lead_extends_a_running_run_by_weeks_and_the_grant_continues_it_without_a_gap(world, client, clock):
    from rest_framework.test import APIClient

    run = file_request(world, **run_fields(world, run_weeks=2))
    first = publish_week(world, (run, 8))
    used_well(world, windows_of(first)[run.pk], "run-week-1")
    next_week(world)
    publish_week(world)  # the run's second (last) week: its commitment is confirmed and placed first
    week_3 = next_week(world)
    clock.move_to(world.cycle.starts_at - timedelta(days=3), tick=False)  # Friday of the run's last week
    url = reverse("committee:request-run-extend", args=[run.pk])

    client.force_login(world.member_a)  # a member who is not a lead
    assert client.post(url, {"weeks": "2", "reason": "More data."}).status_code == 403
    client.force_login(world.lead_a)
    page = client.post(url, {"weeks": "9", "reason": "More data."}, follow=True).content.decode()
    assert "A request spans from 1 to 4 weeks." in page
    page = client.post(url, {"weeks": "2", "reason": " "}, follow=True).content.decode()
    assert "Say why the run needs more weeks." in page
    assert not GpuRequest.objects.filter(extends_run=run).exists()

    api = APIClient()
    api_url = f"/api/v1/requests/{run.pk}/run-extension/"
    api.force_authenticate(world.member_b)  # another team
    assert api.post(api_url, {"weeks": 2, "reason": "Mine."}, format="json").status_code == 404
    api.force_authenticate(world.lead_a)
    bad = api.post(api_url, {"weeks": "2", "reason": "More."}, format="json")
    assert bad.status_code == 400 and "weeks" in bad.json()
    answer = api.post(api_url, {"weeks": 2, "reason": "The loss still falls: two more weeks."}, format="json")
    assert answer.status_code == 201, answer.json()
    extension = GpuRequest.objects.get(extends_run=run)
    assert answer.json() == {"request_id": extension.pk, "week": week_3.week, "run_weeks": 2, "gpu_count": 16,
                             "extends_run": run.pk, "status": "submitted"}
    assert (extension.cycle, extension.status, extension.run_weeks, extension.gpu_count, extension.min_gpu_count) == (
        week_3, "submitted", 2, 16, 16)
    assert (extension.earliest_start, extension.latest_end) == (week_3.starts_at, week_3.ends_at)
    assert extension.usage_report.gpu_hours_used == run.usage_report.gpu_hours_used  # the run's evidence
    history = run.events.get(action="run extension")
    assert (history.actor_name, history.detail_display) == (
        "Lead_A", f"2 more weeks from week {week_3.week}, request #{run.pk}: The loss still falls: two more weeks.")
    assert "Continues the run granted in week" in client.get(
        reverse("committee:request-detail", args=[extension.pk])).content.decode()
    again = client.post(url, {"weeks": "1", "reason": "Once more."}, follow=True).content.decode()
    assert "already asks for more weeks in week" in again
    assert api.post(api_url, {"weeks": 1, "reason": "Once more."}, format="json").status_code == 409
    assert GpuRequest.objects.filter(extends_run=run).count() == 1

    clock.move_to(world.cycle.starts_at - timedelta(days=1), tick=False)
    close(world)
    client.force_login(world.chair)
    review = client.get(reverse("committee:review-cycle", args=[week_3.week])).content.decode()
    assert "continuing request" in review and reverse("committee:request-detail", args=[run.pk]) in review
    plan = publish_week(world, (extension, 8), closed=True)

    last = Commitment.objects.get(request_ref=run.pk, week_number=2)
    placed = windows_of(plan)[extension.pk]
    assert (placed.start, placed.end, placed.gpu_count) == (last.end, week_3.ends_at, 16)  # no gap, no overlap
    [more] = Commitment.objects.filter(request_ref=extension.pk)
    assert (more.start, more.gpu_count) == (placed.end, 16)
    # Told once, about the run it continues: the team's inbox, the chat and the webhooks (docs/events.md).
    [told] = LifecycleEvent.objects.filter(type="grant.extended")
    assert (told.request_ref, told.data["extension_request_id"], told.data["weeks"]) == (run.pk, extension.pk, 2)
    assert told.data["start"] == last.end.isoformat() and told.data["gpu_count"] == 16


def test_a_run_is_extended_only_while_the_week_after_it_takes_requests(world):
    run = file_request(world, **run_fields(world, run_weeks=2))
    single = file_request(world, pool=world.h100, title="One week")
    publish_week(world, (run, 8), (single, 7))  # the run's last week (2026-W51) takes no requests yet
    with pytest.raises(StateConflict, match="ask for more weeks while week"):
        services.run_extension_file(actor=world.lead_a, gpu_request=run, weeks=1, reason="More.",
                                    now=world.cycle.starts_at)
    with pytest.raises(StateConflict, match="granted, placed and not over"):  # a grant of one week is no run
        services.run_extension_file(actor=world.lead_a, gpu_request=single, weeks=1, reason="More.",
                                    now=world.cycle.starts_at)
    assert not GpuRequest.objects.filter(extends_run__isnull=False).exists()
