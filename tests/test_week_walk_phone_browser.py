"""The week walk of tests/test_week_walk_browser.py on a phone screen, then the demo reset and its first steps walked
again in Chinese. A file of its own so that xdist (--dist loadfile) runs it beside the laptop's walk, on the other
worker: the two are the suite's longest tests."""

from __future__ import annotations

import pytest

from tests.browser import browser_page  # noqa: F401
from tests.test_week_walk_browser import walk_the_week

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_demo_week_walked_as_each_role_on_a_phone_then_reset_and_walked_again_in_chinese(
    browser_page,  # noqa: F811
):
    walk_the_week(browser_page, "phone")
