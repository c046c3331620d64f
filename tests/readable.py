"""A reusable check that a rendered page (or an e-mail) writes times, numbers and money one way.

`assert_readable(text, currency=...)` fails, naming what it found, when the visible text has:
- a 12-hour time ("7:42 a.m.", "6 PM"), "midnight"/"noon" as Django's English formats write them, or a
  month abbreviated with a dot ("Dec. 7, 2026");
- a number of four or more digits without thousands separators ("2304 GPU-hours", "used 2150.0 of 2304.0"),
  outside code; a year (known by its date around it: "4 Dec 2026", "2026年", "2026-W49"), an id ("R-1234"),
  a time and a grouped number are not counted;
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
# A number of four or more digits not written with separators: not part of a word, an id ("R-1234", "W-45"),
# a time ("18:00"), a decimal's fraction or a grouped number. Word characters are ASCII ones here, so a number
# written against Chinese text ("共2304个") is still seen.
UNGROUPED = re.compile(r"(?<![A-Za-z0-9_.,:/\-#+])\d{4,}(?:\.\d+)?(?![A-Za-z0-9_,])")
MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
# A year is known by what is around it, not by its value (2,304 GPU-hours is no year): a month before it
# ("4 Dec 2026", "December 2026", "2 十二月 2026"), 年 after it (2026年12月), an ISO date, week or quarter after
# it ("2026-12-31", Markdown's "2026\-12\-31", "2026-W49", "2026-Q4"), or a quarter before it ("Q1 2027").
YEAR_BEFORE = re.compile(r"(?:\b(?:" + "|".join(MONTHS) + r")[a-z]*\.?,?|\bQ[1-4]|[一二三四五六七八九十]{1,2}月)\s$")
YEAR_AFTER = re.compile(r"^(?:\s?年|-W\d{2}\b|-Q[1-4]\b|\\?-\d{2}\b)")


def _is_year(block: str, match: re.Match[str]) -> bool:
    if len(match.group(0)) != 4:
        return False
    return bool(YEAR_BEFORE.search(block[max(0, match.start() - 12):match.start()])
                or YEAR_AFTER.match(block[match.end():match.end() + 4]))
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
            if _is_year(block, match):
                continue
            problems.append(f"number without separators {match.group(0)!r} in {block[:120]!r}")
        if COST_WORDS.search(block) and AMOUNT.search(block) and code not in block:
            problems.append(f"cost without {code} in {block[:120]!r}")
    return problems


def assert_readable(html: str, *, currency: str | None = None) -> None:
    problems = unreadable(html, currency=currency)
    assert not problems, "the page writes times, numbers or money another way:\n" + "\n".join(problems)
