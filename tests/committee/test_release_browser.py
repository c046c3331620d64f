"""A release in a real browser, on the demo's week in force: Ads' lead gives half of its running CTR window back on
its request page, and Search's ranker, which that window had shortened and which has not started yet, holds its GPUs
in the new plan version, as Search's lead reads on its own request page.

The lifecycle events of a release as signed webhooks, each once, to a receiver the test starts, are tested end to end
in tests/committee/test_webhooks.py (test_a_release_goes_out_as_an_event, and the signature in its first test)."""

from __future__ import annotations

import pytest
from django.utils import timezone

from allocations import selectors as allocation_selectors
from committee import weeks
from committee.demo import DEMO_PASSWORD
from committee.demo.history import seed_scheduler_side
from committee.demo.people import seed_people, seed_resources
from committee.demo.review import seed_reviewed_week
from committee.demo.running_week import seed_emergency, seed_published_week
from committee.models import GpuRequest
from tests.browser import browser_page, sign_in  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def week_in_force():
    """The demo's week in force as seed_demo leaves it before its release (committee/demo/running_week.py): the plan
    published, the emergency placed beside it."""
    now = timezone.now()
    pools = seed_resources()
    seed_people()
    seed_scheduler_side(pools=pools, now=now)
    cycle = seed_reviewed_week(pools=pools, now=now)
    seed_published_week(now=now)
    seed_emergency(pools=pools, now=now)
    return cycle


def _held(week: str, request: GpuRequest) -> tuple[int, list[int]]:
    plan = allocation_selectors.plan_for_week(week=week)
    assert plan is not None
    return plan.version, [w.gpu_count for w in allocation_selectors.plan_window_list(plan=plan)
                          if w.request_ref == request.pk]


def test_a_lead_gives_half_a_running_window_back_and_the_shortened_grant_gets_the_gpus(
    browser_page, week_in_force  # noqa: F811
):
    page = browser_page
    week = week_in_force.week
    assert week == weeks.current_week_label(timezone.now())
    ctr = GpuRequest.objects.get(cycle=week_in_force, title="CTR model weekly refresh")
    ranker = GpuRequest.objects.get(cycle=week_in_force, title__startswith="Ranking model retrain")
    version, _ = _held(week, ctr)
    assert _held(week, ranker) == (version, [30]) and ranker.gpu_count == 34  # shortened by Ads' running window

    sign_in(page, "ads-lead", DEMO_PASSWORD)
    page.goto(f"/requests/{ctr.pk}/")
    page.get_by_text("Give GPUs back").click()
    page.get_by_label("GPUs to give back").fill("8")
    page.get_by_label("Why (optional)").fill("The sweep converged: half the GPUs finish it.")
    page.get_by_role("button", name="Give back and publish").click()
    page.get_by_text(f"published as plan version {version + 1}").wait_for()
    assert "8 A100, Wed 11:00–Thu 12:00" in page.locator("main").inner_text()  # the running job keeps 8

    assert _held(week, ranker) == (version + 1, [34])
    sign_in(page, "search-lead", DEMO_PASSWORD)
    page.goto(f"/requests/{ranker.pk}/")
    text = page.locator("main").inner_text()
    assert "34 A100, Wed 12:00–Sat 12:00" in text and "placed as decided" in text
    assert f"Ads Lead: published (plan version {version + 1}: placed Wed 12:00–Sat 12:00 on 34 A100)" in text
