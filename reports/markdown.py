"""Markdown to safe HTML: Python-Markdown renders, nh3 (ammonia) sanitizes to an allowlist.

Whatever a revision's body holds, the HTML that reaches a browser or the PDF renderer keeps only
the tags and attributes below, and links only with the schemes below (or relative ones): no
script, style, event handler, `javascript:` or `data:` URL survives.

Two link forms join the archive together:
    [[decision-record-2026-w49]]            a link to another archive page (its slug)
    [[decision-record-2026-w49|last week]]  the same with its own label
    [[request:42]] / [[request:42|label]]   a link to the GPU request the text cites (plain text for a reader
                                            who may not open that request: another team's)
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as etree
from collections.abc import Collection
from html.parser import HTMLParser
from typing import cast

import markdown
import nh3
from django.urls import NoReverseMatch, reverse
from django.utils.translation import gettext
from markdown.extensions import Extension
from markdown.inlinepatterns import InlineProcessor, Pattern
from markdown.treeprocessors import InlineProcessor as InlineTreeprocessor
from markdown.util import AtomicString

ALLOWED_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt", "em",
    "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "ins", "kbd", "li", "mark", "ol", "p", "pre",
    "s", "small", "span", "strong", "sub", "summary", "sup", "table", "tbody", "td", "tfoot", "th",
    "thead", "tr", "ul",
}  # fmt: skip
ALLOWED_ATTRIBUTES = {
    "a": {"href", "title"},
    "abbr": {"title"},
    "img": {"src", "alt", "title", "width", "height"},
    "ol": {"start"},
    "td": {"colspan", "rowspan", "align"},
    "th": {"colspan", "rowspan", "align", "scope"},
}
ALLOWED_CLASSES = {
    "a": {"wikilink", "missing", "request-link"},
    "code": {"language-text", "language-python", "language-json", "language-yaml", "language-bash"},
}
URL_SCHEMES = {"http", "https", "mailto"}
# Removed with their content, not just their tags.
DROPPED_WITH_CONTENT = {"script", "style", "iframe", "object", "embed", "noscript", "template", "svg", "math"}

# The label separator may be written "\|" inside a table row, where a bare "|" would split the cell.
WIKILINK_RE = r"(?<!\\)\[\[([^\[\]|\\\n]{1,120})(?:\\?\|([^\[\]\n]{1,200}))?\]\]"
PAGE_SLUG_RE = re.compile(r"^[-a-zA-Z0-9_]+$")
REQUEST_RE = re.compile(r"^request:(\d{1,12})$")


# A request number of the int converter's digits, once in a request's address: the address of request N is that
# address with N in its place.
_REQUEST_MARK = "918273645"


class _WikiLinkProcessor(InlineProcessor):
    def __init__(self, pattern: str, md: markdown.Markdown, existing_slugs: Collection[str] | None,
                 readable_requests: Collection[int] | None) -> None:
        super().__init__(pattern, md)
        self.existing_slugs = existing_slugs
        self.readable_requests = readable_requests
        self._request_address: str | None = None

    def _target(self, target: str) -> tuple[str | None, str]:
        """`_wikilink_target`, with a request's address reversed once a render rather than once a link: a week's
        record links each request from its ranking, its decisions and its windows (thousands of links at 1,000
        requests, 0.1–0.3 ms a reverse: a quarter of the record's Markdown; docs/benchmarks.md)."""
        match = REQUEST_RE.match(target)
        if match is None:
            return _wikilink_target(target)
        if self._request_address is None:
            address, _ = _wikilink_target(f"request:{_REQUEST_MARK}")
            self._request_address = address if address and address.count(_REQUEST_MARK) == 1 else ""
        if not self._request_address:
            return _wikilink_target(target)
        return self._request_address.replace(_REQUEST_MARK, str(int(match.group(1)))), "request-link"

    # The stubs check this against Pattern.handleMatch(m), which InlineProcessor replaced with (m, data);
    # their own InlineProcessor.handleMatch carries the same ignore.
    def handleMatch(  # type: ignore[override]
        self, m: re.Match[str], data: str
    ) -> tuple[etree.Element | None, int | None, int | None]:
        target = m.group(1).strip()
        label = (m.group(2) or "").strip()
        href, css = self._target(target)
        if href is None:
            return None, None, None  # not a link: leave the text as typed
        request = REQUEST_RE.match(target)
        if request and self.readable_requests is not None and int(request.group(1)) not in self.readable_requests:
            element = etree.Element("span")  # a request the reader may not open: its label, not a dead link
            element.text = AtomicString(label or target)
            return element, m.start(0), m.end(0)
        element = etree.Element("a")
        element.set("href", href)
        if css == "wikilink" and self.existing_slugs is not None and target.lower() not in self.existing_slugs:
            # Offered for creation: the missing page's address answers with a "create it" for the committee.
            css = "wikilink missing"
            element.set("title", gettext("page does not exist yet"))
        element.set("class", css)
        element.text = AtomicString(label or target)  # shown as typed: no Markdown or HTML inside
        return element, m.start(0), m.end(0)


def _wikilink_target(target: str) -> tuple[str | None, str]:
    try:
        if match := REQUEST_RE.match(target):
            return reverse("committee:request-detail", kwargs={"pk": int(match.group(1))}), "request-link"
        if PAGE_SLUG_RE.match(target):
            return reverse("reports:page", kwargs={"slug": target.lower()}), "wikilink"
    except NoReverseMatch:
        pass
    return None, ""


class WikiLinkExtension(Extension):
    def __init__(self, existing_slugs: Collection[str] | None = None,
                 readable_requests: Collection[int] | None = None) -> None:
        super().__init__()
        self.existing_slugs = existing_slugs
        self.readable_requests = readable_requests

    def extendMarkdown(self, md: markdown.Markdown) -> None:
        # Above "escape" (180), so "\|" inside [[…]] reaches us, and above "link" (160), so [[…]] is not read
        # as a reference link; below "backtick" (190), so code spans stay literal.
        processor = _WikiLinkProcessor(WIKILINK_RE, md, self.existing_slugs, self.readable_requests)
        md.inlinePatterns.register(processor, "docket_wikilink", 185)


class _PlainTextSkipped(InlineTreeprocessor):
    """Python-Markdown's inline treeprocessor, passing over a text in which no inline pattern's expression is found:
    such a text comes out as it went in, after the treeprocessor has tried each of its 15 patterns on it, one step after
    another. In a week's record most texts are such (19,000 of 24,000 at 1,000 requests), and trying the patterns
    on them was about a quarter of its Markdown's CPU (docs/benchmarks.md, "The decision record's PDF").

    It hooks Python-Markdown's private method for one text (`__handleInline`); should that change, the patterns are
    tried on every text again, as before: the HTML is the same either way."""

    def run(self, tree: etree.Element, ancestors: list[str] | None = None) -> etree.Element:
        # (The stubs type the registry's items as this class; they are inline patterns.)
        self._expressions = [cast(Pattern, pattern).getCompiledRegExp() for pattern in self.inlinePatterns]
        self._plain: set[str] = set()  # texts in which none is found (a table's cells repeat: "Grant", "6.33")
        return super().run(tree, ancestors)

    def _InlineProcessor__handleInline(self, data: str, patternIndex: int = 0) -> str:
        if data in self._plain:
            return data
        if not isinstance(data, AtomicString) and not any(expression.search(data) for expression in self._expressions):
            self._plain.add(data)
            return data
        handled: str = super()._InlineProcessor__handleInline(data, patternIndex)  # type: ignore[misc]
        return handled


class _PlainTextExtension(Extension):
    def extendMarkdown(self, md: markdown.Markdown) -> None:
        md.treeprocessors.register(_PlainTextSkipped(md), "inline", 20)  # in place of Python-Markdown's own


def linked_slugs(text: str) -> set[str]:
    """The archive pages a Markdown body links to with [[slug]]."""
    targets = (m.group(1).strip() for m in re.finditer(WIKILINK_RE, text))
    return {target.lower() for target in targets if PAGE_SLUG_RE.match(target)}


def linked_requests(text: str) -> set[int]:
    """The GPU requests a Markdown body links to with [[request:N]]."""
    targets = (REQUEST_RE.match(m.group(1).strip()) for m in re.finditer(WIKILINK_RE, text))
    return {int(match.group(1)) for match in targets if match}


def sanitize(html: str) -> str:
    return nh3.clean(
        html,
        tags=ALLOWED_TAGS,
        clean_content_tags=DROPPED_WITH_CONTENT,
        attributes=ALLOWED_ATTRIBUTES,
        allowed_classes=ALLOWED_CLASSES,
        url_schemes=URL_SCHEMES,
        link_rel="noopener noreferrer nofollow",
        strip_comments=True,
    )


def render(text: str, *, existing_slugs: Collection[str] | None = None,
           readable_requests: Collection[int] | None = None) -> str:
    """Markdown text to sanitized HTML (a plain str: mark it safe only where it is inserted).

    Given the archive's `existing_slugs`, a [[slug]] link to a page not among them is marked
    (class "wikilink missing", title "page does not exist yet"); without, every link reads alike.
    Given the `readable_requests` of the reader, a [[request:N]] of another is its label as plain text.
    """
    converter = markdown.Markdown(
        extensions=["tables", "fenced_code", "sane_lists", "def_list",
                    WikiLinkExtension(existing_slugs, readable_requests), _PlainTextExtension()],
        output_format="html",
    )
    return sanitize(converter.convert(text.replace("\x00", "")))


_BLOCK_TAGS = frozenset({
    "p", "br", "div", "li", "ul", "ol", "dl", "dt", "dd", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre",
    "table", "thead", "tbody", "tfoot", "tr", "hr", "details", "summary",
})  # fmt: skip


_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})


class _TextOf(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCK_TAGS:
            self.parts.append(" ")
        elif tag in ("td", "th"):
            self.parts.append(" · ")

    def handle_endtag(self, tag: str) -> None:
        if tag in _HEADINGS:
            self.parts.append(" — ")
        elif tag in _BLOCK_TAGS:
            self.parts.append(" ")

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


_TABLE_SEPARATOR_RE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_TABLE_CELL_RE = re.compile(r"(?<!\\)\|")


def plain_text(text: str) -> str:
    """Markdown as the words a reader sees, on one line: no syntax, no tags, table cells joined by " · ".

    Works on any slice of a body (a search snippet's few lines): a table row without its header
    becomes its cells' text, not a row of pipes.
    """
    lines = []
    for line in text.replace("\x00", "").split("\n"):
        if _TABLE_SEPARATOR_RE.match(line):
            continue
        stripped = line.strip()
        if stripped.startswith("|"):
            cells = [c.strip() for c in _TABLE_CELL_RE.split(stripped.strip("|"))]
            line = " · ".join(c.replace("\\|", "|") for c in cells if c)
            lines.extend([line, ""])  # each row a paragraph of its own
            continue
        lines.append(line)
    parser = _TextOf()
    parser.feed(render("\n".join(lines)))
    parser.close()
    words = " ".join("".join(parser.parts).split())
    words = re.sub(r"(\s·)+\s", " · ", re.sub(r"^(·\s)+|(\s[·—])+$", "", words))
    return re.sub(r"\s—(\s[·—])+\s", " — ", words)
