"""No dead ends: a team member who follows every link Docket shows them, over the demo, meets no 404 and no 403
(the crawl; its test is tests/committee/test_seed_demo.py's, over the class's seeded demo).

What a team member may not open (another team's request or emergency, the committee's dashboards) is shown as
plain text, not as a link; calendar navigation (the executive summary's months, the buffer fund's quarters) stops
where the data stops. The crawl uses Django's test client over one `seed_demo` (tests/conftest.py, `seeded_demo`):
every internal link of every page reached, each URL once. PDF links are not followed (WeasyPrint takes seconds a
PDF; tests/reports draws them).
"""

from __future__ import annotations

from collections import deque
from html.parser import HTMLParser
from urllib.parse import urljoin, urlsplit

from django.test import Client

from tests.readable import unreadable

SKIPPED = ("/static/", "/media/", "/accounts/logout/", "/i18n/", "/admin/", "/__")
LIMIT = 700  # pages: a calendar that never stops reaches it


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            href = dict(attrs).get("href")
            if href:
                self.hrefs.append(href)


def links_of(html: str) -> list[str]:
    parser = _Links()
    parser.feed(html)
    return parser.hrefs


def crawl(client: Client, start: str, unreadable_pages: dict[str, list[str]]) -> tuple[dict[str, int], dict[str, str]]:
    """Every internal URL reachable from `start` by links, with the status each answered and where it was linked;
    the HTML pages whose text `tests.readable` refuses (an unseparated number, "(s)", a 12-hour time) are kept in
    `unreadable_pages`."""
    seen: dict[str, int] = {}
    found_on: dict[str, str] = {}
    queue = deque([start])
    found_on[start] = "(start)"
    while queue:
        url = queue.popleft()
        if url in seen:
            continue
        assert len(seen) < LIMIT, f"more than {LIMIT} pages: a link that never stops? last {url} from {found_on[url]}"
        response = client.get(url)
        seen[url] = response.status_code
        if response.status_code in (301, 302):
            target = urljoin(url, response["Location"])
            if target not in seen and urlsplit(target).netloc in ("", "testserver"):
                found_on.setdefault(urlsplit(target)._replace(scheme="", netloc="").geturl(), url)
                queue.append(urlsplit(target)._replace(scheme="", netloc="").geturl())
            continue
        if response.status_code != 200 or not response.get("Content-Type", "").startswith("text/html"):
            continue
        html = response.content.decode()
        if problems := unreadable(html):
            unreadable_pages[url] = problems
        for href in links_of(html):
            parts = urlsplit(urljoin(url, href))
            if parts.scheme not in ("http", "https", "") or parts.netloc not in ("", "testserver"):
                continue
            target = parts._replace(scheme="", netloc="", fragment="").geturl()
            if target.startswith(SKIPPED) or target.endswith(("/pdf/", ".pdf")) or target in seen:
                continue
            found_on.setdefault(target, url)
            queue.append(target)
    return seen, found_on
