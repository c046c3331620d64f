"""Readable on a phone: no page is wider than a 390-pixel screen (wide tables scroll inside themselves)."""

from __future__ import annotations

import pytest

from tests.browser import browser_page, sign_in  # noqa: F401
from tests.factories import file_request

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}


def test_main_pages_fit_a_phone_screen(browser_page, world):  # noqa: F811
    gpu_request = file_request(world, alternatives=[{"description": "Distilled student ranker", "gpu_hours": 300}])
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
    ]
    too_wide = {}
    for url in pages:
        response = page.goto(url)
        assert response is not None and response.status == 200, url
        page.wait_for_load_state("networkidle")
        width = page.evaluate("document.documentElement.scrollWidth")
        if width > PHONE["width"]:
            too_wide[url] = width
    sign_in(page, "lead_a")
    page.goto("/requests/")
    if (width := page.evaluate("document.documentElement.scrollWidth")) > PHONE["width"]:
        too_wide["/requests/"] = width
    assert not too_wide, f"pages wider than the phone's {PHONE['width']} px: {too_wide}"
