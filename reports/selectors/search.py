"""Archive search: pages (full-text on PostgreSQL, a word match elsewhere) and the requests the viewer may read.

A snippet is the text a reader sees, never the Markdown it is written in: the few lines around
the first match are rendered (reports.markdown.plain_text), escaped, and only then the matched
words wrapped in <mark>. Only those lines are rendered, so a hit in a 1,000-row decision record
costs what a hit in a short page does.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass

from django.contrib.postgres.search import SearchQuery, SearchRank, SearchVector
from django.db import connection
from django.db.models import F, Q
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext

from committee import selectors as committee_selectors
from committee.models import EmergencyRequest, GpuRequest, RequestStatus
from reports.markdown import plain_text
from reports.models import Page
from reports.selectors.pages import Viewer, revision_latest, user_can_read

SNIPPET_CHARS = 90
SEARCH_LIMIT = 50
# Lines of Markdown around the first match that are rendered for the snippet.
CONTEXT_LINES = 3


@dataclass(frozen=True)
class SearchHit:
    page: Page
    snippet: SafeString
    rank: float


@dataclass(frozen=True)
class RequestHit:
    request: GpuRequest
    snippet: SafeString
    emergency: EmergencyRequest | None = None


def _search_terms(query: str) -> list[str]:
    return [t for t in re.findall(r"[\w.-]+", query) if len(t) > 1][:8]


def _names_emergencies(term: str) -> bool:
    """Whether `term` is the word "emergency" (or "emergencies"), in English or in the reader's language."""
    word = term.lower()
    return word.startswith("emergenc") or gettext("emergency").lower() in word


def _term_pattern(terms: list[str]) -> re.Pattern[str] | None:
    """Each term, and the words it is a stem of ("allocation" marks "allocated": PostgreSQL matches by stem)."""
    stems = []
    for term in sorted(set(terms), key=len, reverse=True):
        stem = term[: max(4, len(term) - 3)] if len(term) > 5 else term
        stems.append(re.escape(stem) + r"[\w-]*")
    return re.compile(r"(?<!\w)(?:" + "|".join(stems) + ")", re.IGNORECASE) if stems else None


def _highlight(text: str, pattern: re.Pattern[str] | None) -> SafeString:
    """Escape `text`, then wrap every matched word in <mark>."""
    pieces, last = [], 0
    for match in pattern.finditer(text) if pattern else ():
        pieces += [html.escape(text[last:match.start()]), "<mark>", html.escape(match.group(0)), "</mark>"]
        last = match.end()
    pieces.append(html.escape(text[last:]))
    return mark_safe("".join(pieces))  # noqa: S308 (every piece escaped; only <mark> added)


def _cut(text: str, pattern: re.Pattern[str] | None) -> SafeString:
    """About SNIPPET_CHARS either side of the first match (the start when none), on word boundaries, highlighted."""
    found = pattern.search(text) if pattern else None
    at = found.start() if found else 0
    start = 0 if at <= SNIPPET_CHARS else text.rfind(" ", 0, at - SNIPPET_CHARS) + 1
    end = text.find(" ", at + SNIPPET_CHARS)
    end = len(text) if end < 0 else end
    return _highlight(("… " if start else "") + text[start:end] + (" …" if end < len(text) else ""), pattern)


def markdown_snippet(body: str, terms: list[str]) -> SafeString:
    """The rendered text of the lines around the first match in `body` (its opening lines when none), marked."""
    pattern = _term_pattern(terms)
    lines = body.split("\n")
    found = pattern.search(body) if pattern else None
    line = body.count("\n", 0, found.start()) if found else 0
    # From the start of the match's paragraph (a heading starts its own), never from the block before it.
    start = line
    while start > 0 and line - start < CONTEXT_LINES and lines[start - 1].strip() and not lines[start].startswith("#"):
        start -= 1
    text = plain_text("\n".join(lines[start: line + 2 * CONTEXT_LINES + 1]))
    return _cut(text, pattern)


def page_search(*, viewer: Viewer, query: str, limit: int = SEARCH_LIMIT) -> list[SearchHit]:
    """Pages matching `query` in their current title or text, best first, each with a snippet.

    PostgreSQL: full-text search (websearch syntax, English stemming, title weighted above text).
    Elsewhere: every word must appear (case-insensitive).
    """
    query = (query or "").strip()[:200]
    terms = _search_terms(query)
    if not query or not terms or not user_can_read(user=viewer):
        return []
    pages = Page.objects.select_related("latest_revision").filter(latest_revision__isnull=False)
    if connection.vendor == "postgresql":
        search_query = SearchQuery(query, search_type="websearch", config="english")
        vector = SearchVector("title", weight="A", config="english") + SearchVector(
            "latest_revision__body", weight="B", config="english"
        )
        rows = (
            pages.annotate(document=vector, rank=SearchRank(vector, search_query))
            .filter(document=search_query)
            .order_by(F("rank").desc(), "title")[:limit]
        )
        return [SearchHit(p, markdown_snippet(revision_latest(page=p).body, terms), float(p.rank)) for p in rows]
    condition = Q()
    for term in terms:
        condition &= Q(title__icontains=term) | Q(latest_revision__body__icontains=term)
    hits = []
    for found in pages.filter(condition).order_by("-updated_at")[:limit]:
        in_title = sum(t.lower() in found.title.lower() for t in terms)
        hits.append(SearchHit(found, markdown_snippet(revision_latest(page=found).body, terms), float(in_title)))
    hits.sort(key=lambda h: -h.rank)
    return hits


def request_search(*, viewer: Viewer, query: str, limit: int = SEARCH_LIMIT) -> list[RequestHit]:
    """Requests the viewer may read (committee_selectors.request_list_for_viewer) matching every word of `query`.

    A word matches the title, the team's name, an emergency's justification or the decision's rationale;
    the word "emergency" (in English or the reader's language) matches every emergency request. The
    rationale only where the viewer may read the decision (the committee always, the team once the week is
    decided: committee_selectors.decision_visible_to), so a search never tells a team what it cannot read;
    an emergency's justification is read wherever its request is (committee.selectors.emergency_get).
    """
    terms = _search_terms((query or "").strip()[:200])
    if not terms:
        return []
    roles = committee_selectors.viewer_roles(user=viewer)
    rationale_readable = Q() if roles.committee else Q(status=RequestStatus.DECIDED)
    condition = Q()
    for term in terms:
        condition &= (
            Q(title__icontains=term)
            | Q(team__name__icontains=term)
            | Q(emergency__justification__icontains=term)
            | (Q(is_emergency=True) if _names_emergencies(term) else Q(pk__in=[]))
            | (Q(decision__rationale__icontains=term) & rationale_readable)
        )
    rows = (
        committee_selectors.request_list_for_viewer(viewer=viewer)
        .select_related("decision", "emergency")
        .prefetch_related(None)
        .filter(condition)[:limit]
    )
    pattern = _term_pattern([t for t in terms if not _names_emergencies(t)])
    hits = []
    for gpu_request in rows:
        decision = getattr(gpu_request, "decision", None)
        emergency = getattr(gpu_request, "emergency", None) if gpu_request.is_emergency else None
        rationale = (
            decision.rationale
            if decision is not None and committee_selectors.decision_visible_to(viewer=viewer, gpu_request=gpu_request)
            else ""
        )
        # The text around the match: an emergency's justification where it matched (else its opening), the
        # rationale where it matched or its opening when the title or team matched; nothing before a decision.
        text = rationale
        if emergency is not None and (not rationale or not (pattern and pattern.search(rationale))):
            text = emergency.justification
        snippet = _cut(plain_text(text), pattern) if text else SafeString("")
        hits.append(RequestHit(gpu_request, snippet, emergency))
    return hits
