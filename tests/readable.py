"""A reusable check that a rendered page (or an e-mail) writes times, numbers and money one way.

`assert_readable(text, currency=...)` fails, naming what it found, when the visible text has:
- a 12-hour time ("7:42 a.m.", "6 PM"), "midnight"/"noon" as Django's English formats write them, or a
  month abbreviated with a dot ("Dec. 7, 2026");
- a number of five or more digits without thousands separators ("12000", "12345.5"), outside code;
- a plural written "(s)" ("2 window(s)"): a count takes its own singular or plural (ngettext);
- a cost without its currency: a line that speaks of cost (cost, 成本, 费用) and has an amount but no currency code.

Only what a reader sees is checked: text outside <script>, <style>, <code>, <pre>, <textarea>, and not attributes.
Any test can call it on a page it rendered: `assert_readable(response.content.decode())`.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from django.conf import settings

SKIPPED = {"script", "style", "code", "pre", "textarea", "template"}
BLOCKS = {"p", "li", "tr", "dd", "dt", "h1", "h2", "h3", "h4", "h5", "h6", "caption", "div", "section", "article",
          "header", "footer", "td", "th", "small", "label", "option", "summary", "figcaption", "blockquote"}

TWELVE_HOUR = re.compile(r"\b\d{1,2}(?::\d{2})?\s?(?:[ap]\.m\.|[AP]M\b|[ap]m\b)", re.IGNORECASE)
DJANGO_WORDS = re.compile(r",\s(?:midnight|noon)\b|\b(?:Jan|Feb|Aug|Sept|Oct|Nov|Dec)\.\s\d")
UNGROUPED = re.compile(r"(?<![\w.,:/\-#+])\d{5,}(?:\.\d+)?(?![\w,])")
COST_WORDS = re.compile(r"\bcosts?\b|成本|费用", re.IGNORECASE)
AMOUNT = re.compile(r"\d[\d,]*\.\d{2}\b")
PLURAL_S = re.compile(r"\w\(s\)")


class _Text(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.skipping = 0
        self.blocks: list[str] = []
        self.current: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in SKIPPED:
            self.skipping += 1
        elif tag in BLOCKS:
            self._flush()

    def handle_endtag(self, tag: str) -> None:
        if tag in SKIPPED:
            self.skipping = max(0, self.skipping - 1)
        elif tag in BLOCKS:
            self._flush()

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.current.append(data)

    def _flush(self) -> None:
        text = " ".join("".join(self.current).split())
        if text:
            self.blocks.append(text)
        self.current = []


def visible_blocks(html: str) -> list[str]:
    """The page's visible text, one string per block (a paragraph, a table cell, a list item...)."""
    parser = _Text()
    parser.feed(html)
    parser.close()
    parser._flush()
    return parser.blocks


def unreadable(html: str, *, currency: str | None = None) -> list[str]:
    """What `assert_readable` would complain of, one line each (empty when the page reads well)."""
    code = currency or settings.DOCKET_COST_CURRENCY
    problems = []
    for block in visible_blocks(html):
        for pattern, what in ((TWELVE_HOUR, "12-hour time"), (DJANGO_WORDS, "Django's default date words")):
            if match := pattern.search(block):
                problems.append(f"{what} {match.group(0)!r} in {block[:120]!r}")
        if match := PLURAL_S.search(block):
            problems.append(f"a plural written as {match.group(0)!r} in {block[:120]!r}")
        for match in UNGROUPED.finditer(block):
            problems.append(f"number without separators {match.group(0)!r} in {block[:120]!r}")
        if COST_WORDS.search(block) and AMOUNT.search(block) and code not in block:
            problems.append(f"cost without {code} in {block[:120]!r}")
    return problems


def assert_readable(html: str, *, currency: str | None = None) -> None:
    problems = unreadable(html, currency=currency)
    assert not problems, "the page writes times, numbers or money another way:\n" + "\n".join(problems)
