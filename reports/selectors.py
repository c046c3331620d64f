"""Reads of the archive, scoped to who asks: everyone signed in reads every page."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.contrib.postgres.search import SearchHeadline, SearchQuery, SearchRank, SearchVector
from django.db import connection
from django.db.models import F, Q, QuerySet
from django.http import Http404
from django.utils.safestring import SafeString, mark_safe
from django.utils.translation import gettext as _

from committee import selectors as committee_selectors
from reports import chain, charts, diffing
from reports.markdown import linked_slugs
from reports.models import GENESIS_HASH, ArchiveChain, Page, PageKind, PageRevision, PdfExport

User = AbstractBaseUser | AnonymousUser

SNIPPET_CHARS = 90
SEARCH_LIMIT = 50
# Delimiters for PostgreSQL's headline: control characters no Markdown body keeps, so the
# snippet can be escaped first and highlighted after.
_MARK_START, _MARK_END = "\x02", "\x03"


def user_can_read(*, user: User) -> bool:
    return bool(user.is_authenticated)


def user_can_edit(*, user: User) -> bool:
    return committee_selectors.user_is_committee(user=user)


def page_list(*, viewer: User, kind: str | None = None) -> QuerySet[Page]:
    """Pages with their latest revision, newest change first; nothing for anonymous viewers."""
    if not user_can_read(user=viewer):
        return Page.objects.none()
    queryset = Page.objects.select_related("latest_revision").filter(latest_revision__isnull=False)
    if kind:
        queryset = queryset.filter(kind=kind)
    return queryset.order_by("-updated_at", "slug")


def page_get(*, viewer: User, slug: str) -> Page:
    try:
        return page_list(viewer=viewer).get(slug=slug)
    except Page.DoesNotExist:
        raise Http404(_("No archive page at this address.")) from None


def revision_list(*, page: Page) -> QuerySet[PageRevision]:
    """A page's history, newest first (body and data deferred: the list shows only who, when, why)."""
    return page.revisions.select_related("page").defer("body", "data").order_by("-number")


def revision_get(*, page: Page, number: int) -> PageRevision:
    try:
        return page.revisions.select_related("page").get(number=number)
    except PageRevision.DoesNotExist:
        raise Http404(_("This page has no such revision.")) from None


@dataclass(frozen=True)
class ChainHead:
    position: int
    hash: str


def chain_head() -> ChainHead:
    """The archive's current head (position and hash), to be shown on every page and kept elsewhere."""
    row = ArchiveChain.objects.filter(pk=1).values_list("head_position", "head_hash").first()
    if row is None:
        return ChainHead(0, GENESIS_HASH)
    return ChainHead(*row)


def recent_changes(*, viewer: User, limit: int = 15) -> QuerySet[PageRevision]:
    if not user_can_read(user=viewer):
        return PageRevision.objects.none()
    return PageRevision.objects.select_related("page").defer("body", "data").order_by("-position")[:limit]


def backlinks(*, page: Page) -> list[Page]:
    """Pages whose current text links to `page` with [[slug]]."""
    candidates = Page.objects.select_related("latest_revision").filter(
        latest_revision__body__icontains=f"[[{page.slug}"
    ).exclude(pk=page.pk).order_by("title")
    return [p for p in candidates if page.slug in linked_slugs(p.latest_revision.body)]


def _labels() -> dict[str, str]:
    return {"title": _("Title"), "body": _("Text"), "data": _("Structured data")}


def snapshot(revision: PageRevision) -> dict[str, object]:
    return {"title": revision.title, "body": revision.body, "data": revision.data}


def revision_compare(*, old: PageRevision, new: PageRevision) -> diffing.RevisionDiff:
    """Side-by-side differences between two revisions, computed now from their snapshots."""
    return diffing.diff_snapshots(snapshot(old), snapshot(new), labels=_labels())


def text_compare(*, old: PageRevision, title: str, body: str) -> diffing.RevisionDiff:
    """A stored revision against text an editor has not saved (shown on an edit conflict)."""
    labels = {"title": _("Title"), "body": _("Text")}
    return diffing.diff_snapshots(snapshot(old), {"title": title, "body": body}, labels=labels)


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


def page_search(*, viewer: User, query: str, limit: int = SEARCH_LIMIT) -> list[SearchHit]:
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
    rows = pages.filter(condition).order_by("-updated_at")[:limit]
    hits = []
    for page in rows:
        in_title = sum(t.lower() in page.title.lower() for t in terms)
        hits.append(SearchHit(page, _plain_snippet(page.latest_revision.body, page.title, terms), float(in_title)))
    hits.sort(key=lambda h: -h.rank)
    return hits


def export_for_revision(*, revision: PageRevision) -> PdfExport | None:
    return PdfExport.objects.filter(revision=revision).first()


def export_get(*, viewer: User, pk: int) -> PdfExport:
    if not user_can_read(user=viewer):
        raise Http404
    try:
        return PdfExport.objects.select_related("revision", "revision__page").get(pk=pk)
    except PdfExport.DoesNotExist:
        raise Http404(_("No such export.")) from None


def revision_charts(*, revision: PageRevision) -> list[dict[str, object]]:
    """The decision record's charts as Plotly figure JSON, for the page to draw in the browser."""
    if revision.page.kind != PageKind.DECISION_RECORD or not revision.data:
        return []
    return [
        {"key": c.key, "title": c.title, "figure": json.loads(c.figure.to_json()), "script_id": f"chart-{c.key}"}
        for c in charts.decision_record_charts(revision.data)
    ]


@dataclass(frozen=True)
class VerifyResult:
    ok: bool
    message: str
    checked: int
    first_bad: PageRevision | None = None


def _chain_rows() -> Iterator[tuple[PageRevision, chain.ChainRow]]:
    queryset = PageRevision.objects.select_related("page").order_by("position")
    for revision in queryset.iterator(chunk_size=500):
        yield revision, chain.ChainRow(
            pk=revision.pk,
            page_slug=revision.page.slug,
            number=revision.number,
            position=revision.position,
            prev_hash=revision.prev_hash,
            hash=revision.hash,
            payload=chain.payload_of(revision),
        )


def archive_verify(*, expected_head_hash: str | None = None) -> VerifyResult:
    """Recompute the whole chain from the stored revisions and name the first one that does not match.

    Also checks the recorded head (the ArchiveChain row: a deleted last revision leaves it pointing
    past the end) and, when given, that a head hash kept elsewhere is still part of the chain.
    """
    by_pk: dict[int, PageRevision] = {}
    seen_hashes: set[str] = set()

    def rows() -> Iterator[chain.ChainRow]:
        for revision, row in _chain_rows():
            by_pk[row.pk] = revision
            seen_hashes.add(row.hash)
            yield row

    recorded = ArchiveChain.objects.filter(pk=1).values_list("head_position", "head_hash").first()
    report = chain.verify_rows(rows(), expected_head=tuple(recorded) if recorded else None)
    if not report.ok and report.first_bad is not None:
        bad = report.first_bad
        return VerifyResult(
            False,
            _(
                "Revision %(number)d of page “%(page)s” (chain position %(position)d, id %(pk)d) does not match: "
                "%(problem)s. %(checked)d revisions before it are intact."
            )
            % {
                "number": bad.number,
                "page": bad.page_slug,
                "position": bad.position,
                "pk": bad.pk,
                "problem": report.problem,
                "checked": report.checked,
            },
            report.checked,
            by_pk.get(bad.pk),
        )
    if not report.ok:
        return VerifyResult(False, _("The chain head does not match: %(problem)s.") % {"problem": report.problem},
                            report.checked)
    if expected_head_hash and expected_head_hash.strip().lower() not in seen_hashes | {GENESIS_HASH}:
        return VerifyResult(
            False,
            _("The kept head %(hash)s is not in the chain: the history up to it was changed or removed.")
            % {"hash": expected_head_hash},
            report.checked,
        )
    return VerifyResult(
        True,
        _("Archive intact: %(n)d revisions verified; head %(hash)s.") % {"n": report.checked, "hash": report.head_hash},
        report.checked,
    )
