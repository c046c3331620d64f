"""In Chromium: one picks 简体中文 in the footer; the portal and the review read in Chinese and fit the screen."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser import browser_page  # noqa: F401
from tests.committee.reviewing import close, score
from tests.factories import file_request

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LAPTOP = {"width": 1366, "height": 900}
PHONE = {"width": 390, "height": 844}


def sign_in_in_chinese(page: Any, username: str) -> None:
    page.goto("/accounts/login/")
    page.get_by_label("用户名").fill(username)
    page.get_by_label("密码").fill("pw")
    page.get_by_role("button", name="登录").click()
    page.wait_for_url(lambda url: "/accounts/login/" not in url)  # signed in: on the landing page, loaded


def overflowing(page: Any, pages: dict[str, str]) -> dict[str, int]:
    """Each page at a laptop's and a phone's width: in Chinese, with its heading, no wider than the screen."""
    too_wide = {}
    for viewport in (LAPTOP, PHONE):
        page.set_viewport_size(viewport)
        for url, words in pages.items():
            response = page.goto(url)
            assert response is not None and response.status == 200, url  # loaded: its charts are drawn
            assert page.locator("html").get_attribute("lang") == "zh-hans", url
            assert words in page.locator("main").inner_text(), url
            width = page.evaluate("document.documentElement.scrollWidth")
            if width > viewport["width"]:
                too_wide[f"{url} at {viewport['width']} px"] = width
    return too_wide


def test_chinese_chosen_in_the_footer_stays_on_and_the_pages_fit_laptop_and_phone(browser_page, world):  # noqa: F811
    from playwright.sync_api import expect

    gpu_request = file_request(world, gpu_count=32, duration_hours=48, title="Ranker retrain")
    file_request(world, team=world.team_b, pool=world.h100, title="Vision model", gpu_count=8, min_gpu_count=4)
    close(world)
    score(world.reviewer, gpu_request, 7, 6, 5)
    page = browser_page
    page.goto("/accounts/login/")
    page.locator("footer select[name=language]").select_option("zh-hans")
    page.locator("footer form.language-switch button[type=submit]").click()
    expect(page.locator("html")).to_have_attribute("lang", "zh-hans")  # the sign-in page again, in Chinese
    page.wait_for_load_state("load")
    assert page.locator("html").get_attribute("lang") == "zh-hans"
    assert page.locator("h1").inner_text() == "登录"
    # The choice is the browser's (a cookie), so it outlasts signing in and out.
    sign_in_in_chinese(page, "chair")
    too_wide = overflowing(page, {
        f"/review/{world.cycle.week}/": f"每周评审：{world.cycle.week} 周",
        f"/requests/{gpu_request.pk}/": "申请内容",
    })
    page.get_by_role("button", name="退出登录 chair").click()
    page.wait_for_url("**/accounts/login/**")  # signed out, on the sign-in page
    sign_in_in_chinese(page, "lead_a")
    too_wide |= overflowing(page, {"/requests/": "我的团队的 GPU 申请"})
    assert not too_wide, f"Chinese pages wider than the screen: {too_wide}"
