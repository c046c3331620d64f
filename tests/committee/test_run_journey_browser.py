"""Issue 28's run journey, in a real browser and over the API (docs/multi-week-runs.md), on the small world.

Team A's lead files a three-week run on the request form; the chair grants it whole on the review and the week is
published over the API. At the start of weeks 2 and 3 the run holds its GPUs ahead of a higher-scored new request
of team B: week 2 on the evidence the scheduler reported (the review's preview shows it first), week 3 after its
low measured use withheld the continuation, the review said why and the chair continued it there. In the run's last
week the lead asks for one more week on the request page, and the committee grants it over the API: the extension
continues the run from Monday 00:00 without a gap.

The engine's placement with commitments against the exact oracle, a release, the webhooks and the Slurm sync across
the boundary are tested in tests/allocations/test_commitments_oracle.py, tests/committee/test_release_browser.py,
tests/committee/test_webhooks.py and tests/allocations/test_slurm_sync_boundary.py."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from allocations import selectors as allocation_selectors
from allocations.models import Commitment, CommitmentState
from committee import services, weeks
from committee.models import GpuRequest, LifecycleEvent
from reports.models import Page
from tests.allocations.plans import bearer, token_for
from tests.browser import browser_page, fill_request_form, local_input, sign_in  # noqa: F401
from tests.clock import FIXED_NOW
from tests.committee.reviewing import score
from tests.factories import file_request

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _windows(week: str) -> dict[int | None, Any]:
    plan = allocation_selectors.plan_for_week(week=week)
    assert plan is not None, f"no plan published for {week}"
    return {w.request_ref: w for w in allocation_selectors.plan_window_list(plan=plan)}


def _next_week(world: Any) -> Any:
    world.cycle = services.cycle_create(week=weeks.week_label(weeks.parse_week(world.cycle.week) + timedelta(days=7)))
    return world.cycle


def _higher_scored_new_request(world: Any, title: str) -> GpuRequest:
    """Team B's request of the week's first 24 hours for all 46 standard GPUs of atlas/a100, scored above anything,
    granted: only the run held ahead of it keeps it from getting them all."""
    new = file_request(world, team=world.team_b, title=title, gpu_count=46, min_gpu_count=10, duration_hours=24,
                       earliest_start=world.cycle.starts_at, latest_end=world.cycle.starts_at + timedelta(hours=24))
    world.cycle = services.cycle_close_intake(cycle=world.cycle, actor=world.chair)
    for member in (world.chair, world.reviewer):
        score(member, new, 10, 10, 10)
    services.request_decide(actor=world.chair, gpu_request=new, outcome="grant", rationale="Launch week.")
    return new


def _publish(api: Any, week: str) -> int:
    assert api.post(f"/api/v1/cycles/{week}/finalize/").status_code == 200
    answer = api.post(f"/api/v1/cycles/{week}/publish/", {}, format="json")
    assert answer.status_code == 201, answer.json()
    return int(answer.json()["version"])


def _report_use(scheduler: Any, window: Any, *, until: Any, utilization: int, key: str) -> None:
    """The cluster's scheduler reports the run's measured use of `window` up to `until`, as the sync does."""
    hours = int((until - window.start).total_seconds() // 3600)
    answer = scheduler.post("/api/v1/usage/", {
        "team": "team-a", "pool": "a100", "window": window.pk, "period_start": window.start.isoformat(),
        "period_end": until.isoformat(), "gpu_hours_used": str(window.gpu_count * hours * utilization / 100),
        "mean_utilization_pct": str(utilization), "idempotency_key": key,
    }, format="json")
    assert answer.status_code == 201, answer.json()


def test_a_three_week_run_is_filed_granted_held_ahead_continued_on_evidence_and_extended(
    browser_page, world, clock  # noqa: F811
):
    from playwright.sync_api import expect
    from rest_framework.test import APIClient

    page = browser_page
    chair_api = APIClient()
    chair_api.force_authenticate(world.chair)
    scheduler = APIClient()
    scheduler.credentials(**bearer(token_for(world.atlas)))
    week_1 = world.cycle

    # Week 1: the lead files a three-week run on the form; its window reaches the week's end.
    sign_in(page, "lead_a")
    page.goto("/requests/new/")
    fill_request_form(page, world=world, title="Pre-training")
    page.get_by_label("Latest end").fill(local_input(week_1.ends_at))
    page.get_by_label("Weeks", exact=True).fill("3")
    page.get_by_role("button", name="Save").click()
    page.get_by_text("Draft saved").wait_for()
    page.get_by_role("button", name="Submit to the committee").click()
    page.get_by_text("Submitted to the committee.").wait_for()
    run = GpuRequest.objects.get(title="Pre-training")
    assert (run.run_weeks, run.gpu_count, run.latest_end, run.status) == (3, 16, week_1.ends_at, "submitted")

    # The chair grants it whole on the review (the weeks left empty); the week is published over the API.
    assert chair_api.post(f"/api/v1/cycles/{week_1.week}/close-intake/").status_code == 200
    for member in (world.chair, world.reviewer):
        score(member, run, 6, 5, 5)
    sign_in(page, "chair")  # the chair lands on the week that needs the committee
    assert page.url.endswith(f"/review/{week_1.week}/")
    expect(page.locator(f"#request-{run.pk}")).to_contain_text("a run over 3 weeks")
    form = page.locator(f"#decision-{run.pk}")
    form.locator('input[name="outcome"][value="grant"]').check()
    form.get_by_label("Rationale").fill("The launch needs all three weeks.")
    form.get_by_role("button", name="Save decision").click()
    page.locator(f"#decision-{run.pk} .saved").wait_for()
    _publish(chair_api, week_1.week)
    first = _windows(week_1.week)[run.pk]
    assert (first.start, first.end, first.gpu_count) == (week_1.ends_at - timedelta(hours=48), week_1.ends_at, 16)
    body = scheduler.get("/api/v1/windows/", {"cluster": "atlas"}).json()  # the scheduler sees the later weeks
    assert [(c["week_of_run"], c["state"], c["gpu_count"], c["start"][:16]) for c in body["commitments"]] == [
        (2, "committed", 16, week_1.ends_at.isoformat()[:16]),
        (3, "committed", 16, (week_1.ends_at + timedelta(days=7)).isoformat()[:16])]

    # Week 2: a higher-scored new request; the run used its first week well, as its scheduler reports.
    clock.move_to(FIXED_NOW + timedelta(days=7))
    week_2 = _next_week(world)
    launch = _higher_scored_new_request(world, "Launch eval")
    clock.move_to(week_2.starts_at - timedelta(hours=12))  # the Sunday before week 2
    _report_use(scheduler, first, until=week_2.starts_at - timedelta(hours=12), utilization=90, key="run-w1")
    sign_in(page, "chair")  # again: a session lasts 12 hours
    assert page.url.endswith(f"/review/{week_2.week}/")
    continuing = page.locator("#continuations")
    expect(continuing).to_contain_text("Pre-training")
    expect(continuing).to_contain_text("week 2 of 3")
    expect(continuing).to_contain_text("90.0% (threshold 50%)")
    expect(continuing).to_contain_text("confirmed")
    rows = page.locator("#placement-atlas-a100 table.placements tbody tr")
    expect(rows.first).to_contain_text("run week 2 of 3: committed, placed first")
    expect(rows.nth(1)).to_contain_text("Launch eval")
    expect(page.locator(f"#would-get-{launch.pk}")).to_contain_text("would get 30 A100")
    _publish(chair_api, week_2.week)
    placed = _windows(week_2.week)
    held = placed[run.pk]
    assert (held.start, held.end, held.gpu_count) == (week_2.starts_at, week_2.ends_at, 16)
    assert placed[launch.pk].gpu_count == 30  # 46 standard GPUs less the run's 16, though it scored higher

    # Week 3: the run's measured use in week 2 is low: the continuation is withheld and the review says why.
    clock.move_to(FIXED_NOW + timedelta(days=14))
    week_3 = _next_week(world)
    sweep = _higher_scored_new_request(world, "Fine-tune sweep")
    clock.move_to(week_3.starts_at - timedelta(hours=12))
    _report_use(scheduler, held, until=week_3.starts_at - timedelta(hours=12), utilization=30, key="run-w2")
    sign_in(page, "chair")
    assert page.url.endswith(f"/review/{week_3.week}/")
    row = page.locator("#continuations tbody tr").first
    expect(row).to_contain_text("week 3 of 3")
    expect(row).to_contain_text("30.0% (threshold 50%)")
    expect(row).to_contain_text("withheld")
    expect(row).to_contain_text("Below the threshold and no reason given: not placed; the committee decides.")
    expect(page.locator(f"#would-get-{sweep.pk}")).to_contain_text("would get 46 A100")
    # The chair continues the run there: it is placed first again, ahead of the higher-scored request.
    row.get_by_role("button", name="Continue the run").click()
    continued = page.locator("#continuations tbody tr").first
    expect(continued).to_contain_text("confirmed")
    expect(continued).to_contain_text("30.0% (threshold 50%)")  # the evidence the chair decided on stays
    expect(continued).to_contain_text("Continued by the committee (Chair).")
    expect(page.locator(f"#would-get-{sweep.pk}")).to_contain_text("would get 30 A100")
    _publish(chair_api, week_3.week)
    placed = _windows(week_3.week)
    assert (placed[run.pk].start, placed[run.pk].end, placed[run.pk].gpu_count) == (
        week_3.starts_at, week_3.ends_at, 16)
    assert placed[sweep.pk].gpu_count == 30
    settled = Commitment.objects.get(request_ref=run.pk, week_number=3)
    assert (settled.state, str(settled.utilization_pct), settled.settled_by_name) == (
        CommitmentState.CONFIRMED, "30.0", "Chair")
    assert run.events.filter(action="run continued").count() == 1
    record = Page.objects.select_related("latest_revision").get(source_key=f"cycle:{week_3.week}").latest_revision
    assert record is not None  # the week's decision record keeps the evidence the chair decided on
    assert "| Team A | atlas/a100 | 16 | week 3 of 3 | confirmed | 30.0% (threshold 50%) | — | Chair |" in record.body

    # In the run's last week the lead asks for one more week on the request page; the committee grants it over the
    # API and the extension continues the run from Monday 00:00.
    clock.move_to(FIXED_NOW + timedelta(days=21))
    week_4 = _next_week(world)
    sign_in(page, "lead_a")
    page.goto(f"/requests/{run.pk}/")
    later = page.locator("#run")
    expect(later).to_contain_text("(week 2 of 3)")
    expect(later.locator("tbody tr").nth(0)).to_contain_text("90.0% (threshold 50%)")
    week_3_row = later.locator("tbody tr").nth(1)
    expect(week_3_row).to_contain_text("30.0% (threshold 50%)")
    expect(week_3_row).to_contain_text("Continued by the committee (Chair).")
    later.get_by_text("Ask for more weeks").click()
    later.get_by_label("More weeks").fill("1")
    later.get_by_label("Why the run needs them").fill("The loss still falls: one more week.")
    later.get_by_role("button", name="Ask the committee").click()
    expect(page.get_by_text(f"Asked: the extension joins the review of week {week_4.week}.")).to_be_visible()
    expect(page.locator("#extends-run")).to_contain_text(f"Continues the run granted in week {week_1.week}:")
    extension = GpuRequest.objects.get(extends_run=run)
    assert (extension.cycle_id, extension.status, extension.gpu_count, extension.earliest_start) == (
        week_4.pk, "submitted", 16, week_4.starts_at)

    assert chair_api.post(f"/api/v1/cycles/{week_4.week}/close-intake/").status_code == 200
    for member in (world.chair, world.reviewer):
        member_api = APIClient()
        member_api.force_authenticate(member)
        for criterion in ("business_impact", "feasibility", "urgency"):
            answer = member_api.post(f"/api/v1/requests/{extension.pk}/scores/",
                                     {"criterion": criterion, "value": 7}, format="json")
            assert answer.status_code == 200, answer.json()
    answer = chair_api.put(f"/api/v1/requests/{extension.pk}/decision/",
                            {"outcome": "grant", "rationale": "One more week to converge."}, format="json")
    assert answer.status_code == 200, answer.json()
    _publish(chair_api, week_4.week)
    more = _windows(week_4.week)[extension.pk]
    assert (more.start, more.end, more.gpu_count) == (placed[run.pk].end, week_4.ends_at, 16)  # no gap, no overlap
    [told] = LifecycleEvent.objects.filter(type="grant.extended")
    assert (told.request_ref, told.data["extension_request_id"], told.data["weeks"]) == (run.pk, extension.pk, 1)
