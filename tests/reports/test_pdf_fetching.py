"""WeasyPrint renders archive PDFs from text that committee members wrote: it must fetch nothing.

No SSRF (a link to an internal address the server would request while rendering) and no LFI (a
`file:` URL that would put a server file into the PDF), even if HTML got past the Markdown
sanitizer: only `data:` URLs (the embedded charts) are ever opened.
"""

from __future__ import annotations

import urllib.request
from typing import Any

import pytest

from reports import pdf
from reports.selectors import revision_latest
from tests.reports.conftest import make_page

HOSTILE_HTML = """
<link rel="stylesheet" href="file:///etc/passwd">
<link rel="stylesheet" href="http://127.0.0.1:9/internal.css">
<style>@import url("file:///etc/hostname"); body { background: url(http://169.254.169.254/latest/meta-data/); }</style>
<img src="file:///etc/passwd"> <img src="/etc/passwd"> <img src="ftp://127.0.0.1/x.png">
<img src="https://169.254.169.254/latest"> <object data="file:///etc/shadow"></object>
<img src="data:image/svg+xml;base64,PHN2ZyB4bWxucz0naHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmcnLz4=">
"""


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every URL that urllib is asked to open while the test runs (WeasyPrint's fetcher goes through it)."""
    urls: list[str] = []
    real_open = urllib.request.OpenerDirector.open

    def spy(self: Any, fullurl: Any, *args: Any, **kwargs: Any) -> Any:
        urls.append(fullurl if isinstance(fullurl, str) else fullurl.full_url)
        return real_open(self, fullurl, *args, **kwargs)

    monkeypatch.setattr(urllib.request.OpenerDirector, "open", spy)
    return urls


def test_hostile_html_past_the_sanitizer_fetches_only_data_urls(world, monkeypatch, opened):
    page = make_page(world, body="Text that the sanitizer would have cleaned.")
    monkeypatch.setattr(pdf, "render_markdown", lambda body: HOSTILE_HTML)  # as if nh3 had let it all through
    result = pdf.render_revision_pdf(revision=revision_latest(page=page))
    assert result.content.startswith(b"%PDF")
    assert opened and all(url.startswith("data:") for url in opened), opened
    assert b"root:" not in result.content  # nothing of /etc/passwd


def test_markdown_images_and_links_to_files_and_internal_hosts_are_not_fetched(world, opened):
    body = "![a](file:///etc/passwd) ![b](http://10.0.0.1/x.png) [c](file:///etc/hostname) <img src='file:///etc/hosts'>"
    page = make_page(world, body=body)
    result = pdf.render_revision_pdf(revision=revision_latest(page=page))
    assert result.content.startswith(b"%PDF")
    assert all(url.startswith("data:") for url in opened), opened
