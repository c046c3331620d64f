"""Readable on a phone: no page is wider than a 390-pixel screen (wide tables scroll inside themselves)."""

from __future__ import annotations

import pytest

from tests.browser import browser_page, sign_in  # noqa: F401
from tests.factories import file_request

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}


def test_main_pages_fit_a_phone_screen(browser_page, world):  # noqa: F811
    gpu_request = file_request(world, alternatives=[{"description": "Distilled student ranker", "gpu_hours": 300}])
    _idle_grant(world)  # the elastic history then has a chart and a table of explanations
    page = browser_page
    page.set_viewport_size(PHONE)
    sign_in(page, "chair")
    pages = [
        f"/requests/{gpu_request.pk}/",
        f"/review/{world.cycle.week}/",
        "/rubric/",
        "/windows/",
        "/archive/",
        "/archive/dashboards/",
        "/elastic/",
        "/elastic/change/",
        "/archive/dashboards/elastic/atlas/a100/",
    ]
    too_wide = {}
    for url in pages:
        response = page.goto(url)
        assert response is not None and response.status == 200, url  # loaded: its charts are drawn
        width = page.evaluate("document.documentElement.scrollWidth")
        if width > PHONE["width"]:
            too_wide[url] = width
    sign_in(page, "lead_a")
    page.goto("/requests/")
    if (width := page.evaluate("document.documentElement.scrollWidth")) > PHONE["width"]:
        too_wide["/requests/"] = width
    assert not too_wide, f"pages wider than the phone's {PHONE['width']} px: {too_wide}"


def _idle_grant(world):
    from datetime import timedelta

    from django.utils import timezone

    from allocations.elastic.selectors import elastic_policy_current
    from allocations.models import ElasticAction
    from tests.allocations.plans import W, publish

    window = publish([W(world.a100, world.team_a, 8, 0, 160, ref=990)]).windows.get()
    now = timezone.now()
    ElasticAction.objects.create(
        kind="idle", pool=world.a100, window=window, team=world.team_a, gpus=6, utilization_pct=12,
        span_start=now - timedelta(hours=5), span_end=now - timedelta(hours=1),
        policy_version=elastic_policy_current().number,
        started_at=now - timedelta(hours=1),
        explanation="Window #1 of Team A on atlas/a100 (8 GPUs) was measured at 12% mean utilization over the "
        "last 4 h, under 25% all along (elastic policy v1): granted but idle.",
    )
