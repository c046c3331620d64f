"""Markdown rendering and sanitizing: useful formatting survives, nothing executable does."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from reports.markdown import ALLOWED_ATTRIBUTES, ALLOWED_TAGS, URL_SCHEMES, linked_slugs, render
from tests.reports.xss_corpus import XSS_PAYLOADS


class _Audit(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in ALLOWED_TAGS:
            self.problems.append(f"tag <{tag}>")
        allowed = ALLOWED_ATTRIBUTES.get(tag, set()) | {"class", "rel"}
        for name, value in attrs:
            if name.startswith("on") or name not in allowed:
                self.problems.append(f"attribute {name} on <{tag}>")
            if name in ("href", "src") and value:
                compact = "".join(value.split()).lower()
                scheme = compact.split(":", 1)[0] if ":" in compact.split("/", 1)[0] else ""
                if scheme and scheme not in URL_SCHEMES:
                    self.problems.append(f"{name}={value!r}")


def audit(html: str) -> list[str]:
    parser = _Audit()
    parser.feed(html)
    parser.close()
    return parser.problems


def test_the_corpus_has_at_least_thirty_payloads():
    assert len(XSS_PAYLOADS) >= 30


@pytest.mark.parametrize("payload", XSS_PAYLOADS)
def test_payload_renders_harmless(payload):
    html = render(payload)
    assert audit(html) == []
    lowered = html.lower()
    # Escaped text (&lt;script) is harmless; a real tag would start with "<".
    for needle in ("<script", "<svg", "<iframe", "<style", "<object", "<embed", "<base", "<meta", "<form", "<input",
                   "<math", "<template", "<noscript", "<body"):
        assert needle not in lowered, (needle, html)


def test_formatting_people_use_survives():
    html = render("# Title\n\n**bold** _it_ `code`\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n- one\n- two\n\n"
                  "[site](https://example.com) [mail](mailto:x@example.com) [rel](/archive/)")
    for fragment in ("<h1>Title</h1>", "<strong>bold</strong>", "<em>it</em>", "<code>code</code>", "<table>",
                     "<td>1</td>", "<li>one</li>", 'href="https://example.com"', 'href="mailto:x@example.com"',
                     'href="/archive/"'):
        assert fragment in html
    assert 'rel="noopener noreferrer nofollow"' in html


def test_wiki_links_point_at_archive_pages_and_requests():
    html = render("See [[decision-record-2026-w49|last week]] and [[request:42]] and [[Charter]].")
    assert '<a class="wikilink" href="/archive/decision-record-2026-w49/"' in html and ">last week</a>" in html
    assert '<a class="request-link" href="/requests/42/"' in html
    assert 'href="/archive/charter/"' in html


def test_each_request_link_of_a_text_points_at_its_own_request():
    html = render("[[request:42]], [[request:7|seven]], [[request:0012]] and [[request:918273645]].")
    assert re.findall(r'href="([^"]*)"', html) == ["/requests/42/", "/requests/7/", "/requests/12/",
                                                   "/requests/918273645/"]


def test_wiki_links_work_inside_table_rows_with_an_escaped_separator():
    html = render("| Request | Team |\n|---|---|\n| [[request:7\\|Ranker]] | A |")
    assert '<td><a class="request-link" href="/requests/7/"' in html and ">Ranker</a></td>" in html


def test_an_escaped_bracket_is_not_a_link():
    assert "<a" not in render("\\[[charter]]")


def test_wiki_link_labels_are_text_not_html():
    html = render("[[charter|<b>bold</b>]]")
    assert "<b>" not in html and "&lt;b&gt;" in html


def test_linked_slugs_finds_page_links_only():
    assert linked_slugs("[[a-b]] [[request:3]] [[C|x]] `[[d]]`") == {"a-b", "c", "d"}


SAMPLES = [
    "plain words, no syntax at all",
    "# Title\n\n**bold** _it_ `code` *one* __two__ ***three*** a_b_c 2 * 3\n\nline one  \nline two",
    "| Rank | Request | Total |\n|---|---|---|\n| 1 | [[request:3\\|Run 1]] | 64.67 |\n| 2 | plain | 6.00 |"
    "\n| 3 | `x|y` | a &amp; b &copy; <b>bold</b> |",
    "> Granted: plain.\n\n_Request: [[request:14|Run 2]]; total 64.67; placed \\(480 GPU\\-hours\\)_",
    "[site](https://example.com) ![img](/x.png) <https://example.com> <a@b.co> [ref][r]\n\n[r]: /archive/",
    "<!-- a comment -->\n\nTerm\n: its definition\n\n```\n**not** [[code]]\n```\n\n1. one\n2. two",
]


def test_texts_without_inline_syntax_render_as_python_markdown_renders_them(monkeypatch):
    """The texts passed over (no inline pattern found in them) come out as Python-Markdown's own inline step
    leaves them: the same HTML for every sample and every payload of the corpus."""
    from reports import markdown as markdown_module

    ours = [render(text) for text in [*SAMPLES, *XSS_PAYLOADS]]
    monkeypatch.setattr(markdown_module._PlainTextExtension, "extendMarkdown", lambda self, md: None)
    assert [render(text) for text in [*SAMPLES, *XSS_PAYLOADS]] == ours
