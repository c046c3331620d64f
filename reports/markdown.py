"""Markdown to safe HTML: Python-Markdown renders, nh3 (ammonia) sanitizes to an allowlist.

Whatever a revision's body holds, the HTML that reaches a browser or the PDF renderer keeps only
the tags and attributes below, and links only with the schemes below (or relative ones): no
script, style, event handler, `javascript:` or `data:` URL survives.

Two link forms join the archive together:
    [[decision-record-2026-w49]]            a link to another archive page (its slug)
    [[decision-record-2026-w49|last week]]  the same with its own label
    [[request:42]] / [[request:42|label]]   a link to the GPU request the text cites
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as etree

import markdown
import nh3
from django.urls import NoReverseMatch, reverse
from markdown.extensions import Extension
from markdown.inlinepatterns import InlineProcessor
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
    "a": {"wikilink", "request-link"},
    "code": {"language-text", "language-python", "language-json", "language-yaml", "language-bash"},
}
URL_SCHEMES = {"http", "https", "mailto"}
# Removed with their content, not just their tags.
DROPPED_WITH_CONTENT = {"script", "style", "iframe", "object", "embed", "noscript", "template", "svg", "math"}

# The label separator may be written "\|" inside a table row, where a bare "|" would split the cell.
WIKILINK_RE = r"(?<!\\)\[\[([^\[\]|\\\n]{1,120})(?:\\?\|([^\[\]\n]{1,200}))?\]\]"
PAGE_SLUG_RE = re.compile(r"^[-a-zA-Z0-9_]+$")
REQUEST_RE = re.compile(r"^request:(\d{1,12})$")


class _WikiLinkProcessor(InlineProcessor):
    # The stubs check this against Pattern.handleMatch(m), which InlineProcessor replaced with (m, data);
    # their own InlineProcessor.handleMatch carries the same ignore.
    def handleMatch(  # type: ignore[override]
        self, m: re.Match[str], data: str
    ) -> tuple[etree.Element | None, int | None, int | None]:
        target = m.group(1).strip()
        label = (m.group(2) or "").strip()
        href, css = _wikilink_target(target)
        if href is None:
            return None, None, None  # not a link: leave the text as typed
        element = etree.Element("a")
        element.set("href", href)
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
    def extendMarkdown(self, md: markdown.Markdown) -> None:
        # Above "escape" (180), so "\|" inside [[…]] reaches us, and above "link" (160), so [[…]] is not read
        # as a reference link; below "backtick" (190), so code spans stay literal.
        md.inlinePatterns.register(_WikiLinkProcessor(WIKILINK_RE, md), "docket_wikilink", 185)


def linked_slugs(text: str) -> set[str]:
    """The archive pages a Markdown body links to with [[slug]]."""
    targets = (m.group(1).strip() for m in re.finditer(WIKILINK_RE, text))
    return {target.lower() for target in targets if PAGE_SLUG_RE.match(target)}


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


def render(text: str) -> str:
    """Markdown text to sanitized HTML (a plain str: mark it safe only where it is inserted)."""
    converter = markdown.Markdown(
        extensions=["tables", "fenced_code", "sane_lists", "def_list", WikiLinkExtension()],
        output_format="html",
    )
    return sanitize(converter.convert(text.replace("\x00", "")))
