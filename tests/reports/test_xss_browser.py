"""The XSS corpus in a real browser (Playwright on Debian's Chromium): stored, rendered, poked; no dialog opens."""

from __future__ import annotations

from typing import Any

import pytest

from reports import services
from tests.browser import browser_page, sign_in  # noqa: F401
from tests.reports.xss_corpus import XSS_PAYLOADS

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TABS = 6

# Fire the events the payloads listen for on every element of the page's text (a user moving the
# mouse over, focusing and toggling things), without following links.
POKE = """() => {
  for (const el of document.querySelectorAll('.markdown-body *, .snippet *, table.diff *')) {
    for (const type of ['mouseover', 'mouseenter', 'pointerenter', 'focus', 'toggle', 'animationstart']) {
      el.dispatchEvent(new Event(type, {bubbles: true}));
    }
    if (el.tagName === 'DETAILS') { el.open = true; }
  }
  return document.querySelectorAll('.markdown-body').length;
}"""


def test_no_payload_opens_a_dialog(browser_page, world):  # noqa: F811
    page = browser_page
    dialogs: list[str] = []
    def refuse(dialog: Any) -> None:
        dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", refuse)
    slugs = []
    for index, payload in enumerate(XSS_PAYLOADS):
        slug = f"xss-{index}"
        created = services.page_create(actor=world.chair, slug=slug, title=f"Payload {index}",
                                       body=f"Payload {index} follows.\n\n{payload}\n\nxss-marker", summary="x")
        services.page_revision_save(actor=world.chair, page=created, base_revision_id=created.latest_revision_id,
                                    title=f"Payload {index}", body=f"{payload}\n\nxss-marker changed",
                                    summary="x")
        slugs.append(slug)

    sign_in(page, "member_a")
    # The detector works: a real script on the page does open a dialog.
    page.goto("/archive/")
    page.evaluate("() => alert('control')")
    assert dialogs == ["control"]
    dialogs.clear()

    # Each payload's page, first revision and comparison, TABS of them at once in tabs of the same person, each
    # listening: the browser draws some while the server renders the others.
    origin = "/".join(page.url.split("/")[:3])
    tabs = [page] + [page.context.new_page() for _ in range(TABS - 1)]
    for tab in tabs[1:]:
        tab.on("dialog", refuse)
    urls = [url for slug in slugs
            for url in (f"/archive/{slug}/", f"/archive/{slug}/revisions/1/", f"/archive/{slug}/compare/?old=1&new=2")]
    for first in range(0, len(urls), TABS):
        batch = list(zip(tabs, urls[first:first + TABS], strict=False))
        for tab, url in batch:
            tab.evaluate("url => { location.href = url; }", origin + url)  # goto, without waiting for the load
        for tab, url in batch:
            tab.wait_for_url(origin + url)  # and loaded
            assert tab.evaluate(POKE) >= (1 if "compare" not in url else 0)
    page.goto("/archive/search/?q=xss-marker")
    page.evaluate(POKE)
    page.wait_for_timeout(300)  # let any timer- or load-driven payload run
    assert dialogs == []
    # Nothing was injected into the DOM either.
    page.goto(f"/archive/{slugs[0]}/")
    assert page.locator(".markdown-body script, .markdown-body iframe, .markdown-body svg").count() == 0
