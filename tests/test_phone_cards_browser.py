"""On a phone a converted table is a stack of cards: every column's value shows, after its column's name.

The CSS pattern (static/docket/docket.css, `table.cards-on-phone` with a data-label on every cell) replaces
hiding or scrolling columns: on a 390x844 screen nothing is off-screen and the page does not scroll sideways.
"""

from __future__ import annotations

import pytest

from tests.browser import browser_page, sign_in  # noqa: F401
from tests.test_responsive_browser import PHONE, _idle_grant

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

CARDS = """() => {
  const tables = [...document.querySelectorAll("main table.cards-on-phone")];
  return tables.map((table) => ({
    id: table.id || table.className,
    headVisible: table.tHead ? table.tHead.getBoundingClientRect().height > 1 : false,
    headings: table.tHead ? [...table.tHead.querySelectorAll("th")].map((th) => th.textContent.trim()) : [],
    rows: [...table.tBodies[0].rows].map((row) => [...row.cells].filter((cell) => cell.dataset.label).map(
      (cell) => {
        const box = cell.getBoundingClientRect();
        return {
          label: cell.dataset.label,
          shown: getComputedStyle(cell, "::before").content.replace(/^"|"$/g, ""),
          left: box.left, right: box.right, height: box.height, text: cell.innerText.trim(),
        };
      })),
  }));
}"""


def _cards(page):
    return page.evaluate(CARDS)


def _assert_every_value_is_a_card_line(page, url):
    tables = _cards(page)
    assert tables, f"{url}: no converted table"
    width = page.evaluate("innerWidth")
    for table in tables:
        assert not table["headVisible"], f"{url} {table['id']}: the column headings still take room"
        for cells in table["rows"]:
            if not cells:
                continue
            assert [c["label"] for c in cells] == table["headings"][: len(cells)], (url, table["id"])
            for cell in cells:
                assert cell["shown"] == cell["label"], (url, cell)  # the column's name is written in the card
                assert cell["height"] > 0 and cell["left"] >= 0 and cell["right"] <= width + 0.5, (url, cell)
    assert page.evaluate("document.documentElement.scrollWidth <= innerWidth"), f"{url} scrolls sideways"


def test_converted_tables_are_cards_on_a_phone(browser_page, world):  # noqa: F811
    _idle_grant(world)  # a published plan (the windows page) and an elastic action (the pool's elastic history)
    page = browser_page
    page.set_viewport_size(PHONE)
    sign_in(page, "chair")
    for url in ("/windows/", "/archive/dashboards/elastic/atlas/a100/"):
        response = page.goto(url)
        assert response is not None and response.status == 200, url  # loaded: its tables are cards
        _assert_every_value_is_a_card_line(page, url)
    window_card = _cards(page.goto("/windows/") and page)[0]["rows"][0]
    by_label = {cell["label"]: cell["text"] for cell in window_card}
    assert by_label["Window"].startswith("W-") and by_label["Team"] == "Team A" and by_label["Request"] == "R-990"


def test_on_a_laptop_the_same_tables_keep_their_columns(browser_page, world):  # noqa: F811
    _idle_grant(world)
    page = browser_page
    page.set_viewport_size({"width": 1366, "height": 900})
    sign_in(page, "chair")
    page.goto("/windows/")
    tables = _cards(page)
    assert tables and all(table["headVisible"] for table in tables)
    assert all(cell["shown"] in ("none", "normal", "") for cell in tables[0]["rows"][0])
