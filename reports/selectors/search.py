"""Archive search: PostgreSQL full-text search there, a plain word match elsewhere; snippets escaped."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from django.contrib.postgres.search import SearchHeadline, SearchQuery, SearchRank, SearchVector
from django.db import connection
from django.db.models import F, Q
from django.utils.safestring import SafeString, mark_safe

from reports.models import Page
from reports.selectors.pages import Viewer, revision_latest, user_can_read

SNIPPET_CHARS = 90
SEARCH_LIMIT = 50
# Delimiters for PostgreSQL's headline: control characters no Markdown body keeps, so the
# snippet can be escaped first and highlighted after.
_MARK_START, _MARK_END = "\x02", "\x03"


@dataclass(frozen=True)
class SearchHit:
    page: Page
    snippet: SafeString
    rank: float


def _highlight(text: str, terms: list[str]) -> SafeString:
    """Escape `text`, then wrap every occurrence of a term in <mark>."""
    escaped = html.escape(text)
    for term in sorted({t for t in terms if t}, key=len, reverse=True):
        escaped = re.sub(re.escape(html.escape(term)), lambda m: f"<mark>{m.group(0)}</mark>", escaped, flags=re.I)
    return mark_safe(escaped)  # noqa: S308 (escaped above; only <mark> added)


def _plain_snippet(body: str, title: str, terms: list[str]) -> SafeString:
    lowered = body.lower()
    positions = [lowered.find(t.lower()) for t in terms if t and lowered.find(t.lower()) >= 0]
    if not positions:
        return _highlight(body[: SNIPPET_CHARS * 2].strip() or title, terms)
    start = max(0, min(positions) - SNIPPET_CHARS)
    end = min(len(body), min(positions) + SNIPPET_CHARS)
    text = " ".join(body[start:end].split())
    return _highlight(("… " if start else "") + text + (" …" if end < len(body) else ""), terms)


def _search_terms(query: str) -> list[str]:
    return [t for t in re.findall(r"[\w.-]+", query) if len(t) > 1][:8]


def page_search(*, viewer: Viewer, query: str, limit: int = SEARCH_LIMIT) -> list[SearchHit]:
    """Pages matching `query` in their current title or text, best first, each with a snippet.

    PostgreSQL: full-text search (websearch syntax, English stemming, title weighted above text)
    with the database's own headline. Elsewhere: every word must appear (case-insensitive).
    """
    query = (query or "").strip()[:200]
    if not query or not user_can_read(user=viewer):
        return []
    pages = Page.objects.select_related("latest_revision").filter(latest_revision__isnull=False)
    if connection.vendor == "postgresql":
        search_query = SearchQuery(query, search_type="websearch", config="english")
        vector = SearchVector("title", weight="A", config="english") + SearchVector(
            "latest_revision__body", weight="B", config="english"
        )
        rows = (
            pages.annotate(
                document=vector,
                rank=SearchRank(vector, search_query),
                headline=SearchHeadline(
                    "latest_revision__body",
                    search_query,
                    config="english",
                    start_sel=_MARK_START,
                    stop_sel=_MARK_END,
                    max_words=30,
                    min_words=12,
                ),
            )
            .filter(document=search_query)
            .order_by(F("rank").desc(), "title")[:limit]
        )
        hits = []
        for page in rows:
            escaped = html.escape(" ".join(page.headline.split()))
            marked = escaped.replace(_MARK_START, "<mark>").replace(_MARK_END, "</mark>")
            hits.append(SearchHit(page, mark_safe(marked), float(page.rank)))  # noqa: S308 (escaped above)
        return hits
    terms = _search_terms(query)
    if not terms:
        return []
    condition = Q()
    for term in terms:
        condition &= Q(title__icontains=term) | Q(latest_revision__body__icontains=term)
    matches = pages.filter(condition).order_by("-updated_at")[:limit]
    hits = []
    for found in matches:
        in_title = sum(t.lower() in found.title.lower() for t in terms)
        body = revision_latest(page=found).body
        hits.append(SearchHit(found, _plain_snippet(body, found.title, terms), float(in_title)))
    hits.sort(key=lambda h: -h.rank)
    return hits
