"""A real browser for tests: Playwright driving Debian's Chromium against a live server.

Import the fixtures into a test module with `from tests.browser import browser_page, sign_in  # noqa: F401`.
Without Chromium the tests skip locally and fail in CI.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import connections
from django.utils import timezone

from tests.conftest import require

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-dev-shm-usage"]
ARTIFACTS = Path(os.environ.get("TEST_ARTIFACTS", "test-results"))


def require_chromium(why: str = "") -> str:
    """The Chromium the tests and Docket use (`CHROMIUM_PATH`, as in the settings); without it, skip (fail in CI)."""
    require(Path(CHROMIUM).exists(), f"Chromium{why} (apt-get install chromium)")
    return CHROMIUM


class Chromium:
    """One Chromium per test process (xdist worker), started by the first test that asks for a page.

    Launching Playwright's driver and Chromium costs over a second; a fresh browser context per test gives the
    isolation a new browser gave (cookies, storage, cache, permissions) for a few tens of milliseconds.

    Playwright's sync API runs an asyncio loop in this thread, and marks it as the thread's running loop after
    every call. Between browser tests the loop stands still, so `idle()` takes that mark off: the tests that
    follow in this process (asgiref's async_to_sync, Django's async-unsafe check, another sync_playwright())
    see a thread without a running loop, as they would had the browser been closed. `busy()` puts it back
    before the next Playwright call, which needs it.
    """

    def __init__(self) -> None:
        import asyncio

        from playwright.sync_api import sync_playwright

        self._asyncio = asyncio
        self.playwright = sync_playwright().start()
        self.loop = asyncio.get_running_loop()
        self.browser = self.playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        self.idle()

    def busy(self) -> None:
        self._asyncio._set_running_loop(self.loop)

    def idle(self) -> None:
        self._asyncio._set_running_loop(None)

    def stop(self) -> None:
        """Close Chromium and the driver (which Playwright started and ends by their pids), at the process's end."""
        self.busy()
        try:
            if self.browser.is_connected():
                self.browser.close()
        finally:
            self.playwright.stop()  # ends the loop, which takes its running mark off itself


_chromium: Chromium | None = None


def chromium(config: pytest.Config) -> Chromium:
    """This process's Chromium; launched again if the last one died (a crash must not fail every later test)."""
    global _chromium
    if _chromium is not None and not _chromium.browser.is_connected():
        _chromium.stop()
        _chromium = None
    if _chromium is None:
        _chromium = Chromium()
        config.add_cleanup(_chromium.stop)
    return _chromium


@pytest.fixture
def browser_page(live_server: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    """A fresh page, in a browser context of its own, in this process's headless Chromium; on failure a
    screenshot lands in test-results/."""
    require_chromium()
    pytest.importorskip("playwright.sync_api")
    # Playwright's sync API runs an event loop in this thread; the ORM calls the test makes
    # between browser steps are still synchronous and safe.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    shared = chromium(request.config)
    shared.busy()
    try:
        context = shared.browser.new_context(base_url=live_server.url, viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.set_default_timeout(15000)
        try:
            yield page
        finally:
            report = getattr(request.node, "rep_call", None)
            if report is not None and report.failed:
                ARTIFACTS.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
            for left in shared.browser.contexts:  # this page's, and any other the test opened
                left.close()
    finally:
        shared.idle()
        # While Playwright's loop runs in this thread, Django opens this thread's ORM
        # connection anew; close it, or it outlives the test database at teardown.
        connections.close_all()


def sign_in(page: Any, username: str, password: str = "pw") -> None:
    """Signed in as `username`: on their landing page, loaded, as after the sign-in form.

    The session the form would give is made here (`force_login`) and handed to the browser as its cookie: the form
    costs a page, a post and a redirect (1.0-1.7 s a sign-in on a loaded machine, the cookie 0.3-0.5 s), some
    fifty times a run, and these tests are about what comes after it. The form itself is walked by the week walk
    (tests/test_week_walk_browser.py, every role) and its refusals are tested in
    tests/committee/test_login_throttle.py. Refused here as the form refuses: a wrong password or an inactive account
    fails the test."""
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client

    user = get_user_model()._default_manager.get_by_natural_key(username)
    assert user.is_active and user.check_password(password), f"{username} cannot sign in with that password"
    client = Client()
    client.force_login(user)
    if not page.url.startswith("http"):
        page.goto("/healthz")  # a new page: its first address gives the site's origin, for the cookie
    origin = "/".join(page.url.split("/")[:3])
    session = client.cookies[settings.SESSION_COOKIE_NAME].value
    page.context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": session, "url": origin}])
    page.goto("/")
    assert "/accounts/login/" not in page.url, f"{username} is not signed in: {page.url}"


def fill_request_form(
    page: Any,
    *,
    world: Any,
    title: str,
    usage: tuple[str, str, str] = ("800", "420", "52"),
    narrative: str = "A fresher ranker lifts conversion.",
    alternatives: tuple[tuple[str, str], ...] = (),
) -> None:
    """Fill the request form as a team member would: 16 A100 (at least 8) for 48 h, with evidence."""
    start = world.cycle.starts_at + timedelta(hours=8)
    page.get_by_label("Title").fill(title)
    page.get_by_label("GPU pool", exact=True).select_option(str(world.a100.pk))
    page.get_by_label("GPUs", exact=True).fill("16")
    page.get_by_label("Minimum acceptable GPUs").fill("8")
    page.get_by_label("Duration (hours)").fill("48")
    page.get_by_label("Earliest start").fill(local_input(start))
    page.get_by_label("Latest end").fill(local_input(start + timedelta(hours=72)))
    granted, used, utilization = usage
    page.get_by_label("GPU-hours granted last week").fill(granted)
    page.get_by_label("GPU-hours used last week").fill(used)
    page.get_by_label("Mean utilization %").fill(utilization)
    page.get_by_label("Kind of impact").select_option("revenue")
    page.get_by_label("Estimated value").fill("90000")
    page.get_by_label("Unit").fill("USD/week")
    page.get_by_label("Confidence").select_option("high")
    page.get_by_label("Narrative").fill(narrative)
    for description, gpu_hours in alternatives:
        page.get_by_role("button", name="Add an alternative").click()
        row = page.locator(".alternative-row").last
        row.get_by_label("Description").fill(description)
        row.get_by_label("GPU-hours it would need").fill(gpu_hours)


def local_input(value: datetime) -> str:
    """A datetime as a datetime-local input takes it, in the committee's zone."""
    return timezone.localtime(value).strftime("%Y-%m-%dT%H:%M")


# The elements that stick out past the window's right edge, widest first: what a failure message names.
_WIDER_THAN_WINDOW = """() => {
  const width = window.innerWidth;
  const scroll = document.documentElement.scrollWidth;
  if (scroll <= width) return {scroll, window: width, widest: []};
  const out = [];
  for (const el of document.body.querySelectorAll("*")) {
    const box = el.getBoundingClientRect();
    if (box.width && box.right > width + 1) {
      let inside = el.parentElement, clipped = false;
      while (inside && inside !== document.body) {
        const style = getComputedStyle(inside);
        if (style.overflowX !== "visible" && inside.getBoundingClientRect().right <= width + 1) {
          clipped = true;  // it scrolls inside a box that fits
          break;
        }
        inside = inside.parentElement;
      }
      if (!clipped) {
        const classes = typeof el.className === "string" && el.className.trim()
          ? "." + el.className.trim().split(/\\s+/).join(".") : "";
        out.push([Math.round(box.right), el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + classes]);
      }
    }
  }
  out.sort((a, b) => b[0] - a[0]);
  return {scroll, window: width, widest: out.slice(0, 5)};
}"""


def page_overflow(page: Any) -> str | None:
    """None when the page fits its window (no horizontal scroll: the document is no wider than the window);
    else what overflows, as "1480 px in a 390-px window: table#ranking (1480), …"."""
    found = page.evaluate(_WIDER_THAN_WINDOW)
    if found["scroll"] <= found["window"]:
        return None
    widest = ", ".join(f"{name} ({right})" for right, name in found["widest"]) or "nothing visible"
    return f"{found['scroll']} px in a {found['window']}-px window: {widest}"
