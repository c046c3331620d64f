"""Reads of archive pages and revisions, scoped to who asks: everyone signed in reads every page."""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.db.models import QuerySet
from django.http import Http404
from django.utils import translation
from django.utils.translation import gettext as _

from committee import selectors as committee_selectors
from reports import charts, diffing, records
from reports.markdown import linked_requests, linked_slugs
from reports.models import GENESIS_HASH, ArchiveChain, Page, PageKind, PageRevision

Viewer = User | AnonymousUser


def user_can_read(*, user: Viewer) -> bool:
    return bool(user.is_authenticated)


def user_can_edit(*, user: Viewer) -> bool:
    return committee_selectors.user_is_committee(user=user)


def page_list(*, viewer: Viewer, kind: str | None = None, record_parts: bool = True) -> QuerySet[Page]:
    """Pages with their latest revision, newest change first; nothing for anonymous viewers.

    `record_parts=False` leaves out the pages a long decision record continues on: the archive's
    index lists each week once, and the week's page links its parts.
    """
    if not user_can_read(user=viewer):
        return Page.objects.none()
    queryset = Page.objects.select_related("latest_revision").filter(latest_revision__isnull=False)
    if kind:
        queryset = queryset.filter(kind=kind)
    if not record_parts:
        queryset = queryset.exclude(source_key__startswith="cycle:", source_key__contains=":part:")
    return queryset.order_by("-updated_at", "slug")


def page_get(*, viewer: Viewer, slug: str) -> Page:
    try:
        return page_list(viewer=viewer).get(slug=slug)
    except Page.DoesNotExist:
        raise Http404(_("No archive page at this address.")) from None


def revision_latest(*, page: Page) -> PageRevision:
    """The page's current revision (loaded with the page by page_list and page_get)."""
    revision = page.latest_revision
    # page_create writes a page and its first revision in one transaction, and page_list leaves out
    # any page without one: a page read here always has a revision.
    assert revision is not None, f"archive page {page.slug!r} has no revision"
    return revision


@dataclass(frozen=True)
class RevisionText:
    """What a reader reads of a revision: its title and Markdown, and whether they are the archived text or the
    revision rendered from its data in the reader's language (`language` names the archived text's language)."""

    title: str
    body: str
    in_reader_language: bool
    language: str
    language_name: str


def revision_text(*, revision: PageRevision, archived: bool = False) -> RevisionText:
    """A revision as the reader reads it: a week's decision record in the reader's language, rendered from the data
    the revision stores (reports.records.language); any other page, a record read in the language it was written
    in, and `archived` (the reader asked for the archived text), exactly as stored."""
    data = revision.data if isinstance(revision.data, dict) else {}
    language = records.decision_record_language(data)
    reader = translation.get_language() or settings.LANGUAGE_CODE
    translatable = (
        revision.page.kind == PageKind.DECISION_RECORD and isinstance(data.get("cycle"), dict) and reader != language
    )
    rendered = translatable and not archived
    name = str(translation.get_language_info(language)["name_translated"]) if translatable else ""
    if not rendered:
        return RevisionText(revision.title, revision.body, False, language, name)
    return RevisionText(
        title=records.decision_record_title(str(data["cycle"].get("week", ""))),
        body=records.decision_record_body_in_language(body=revision.body, data=data),  # type: ignore[arg-type]
        in_reader_language=True,
        language=language,
        language_name=name,
    )


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


def recent_changes(*, viewer: Viewer, limit: int = 15) -> QuerySet[PageRevision]:
    if not user_can_read(user=viewer):
        return PageRevision.objects.none()
    return PageRevision.objects.select_related("page").defer("body", "data").order_by("-position")[:limit]


def backlinks(*, page: Page) -> list[Page]:
    """Pages whose current text links to `page` with [[slug]]."""
    candidates = Page.objects.select_related("latest_revision").filter(
        latest_revision__body__icontains=f"[[{page.slug}"
    ).exclude(pk=page.pk).order_by("title")
    return [p for p in candidates if page.slug in linked_slugs(revision_latest(page=p).body)]


def existing_slugs(*, text: str) -> set[str]:
    """The archive pages, of those `text` links to with [[slug]], that exist (the rest are shown as missing)."""
    linked = linked_slugs(text)
    if not linked:
        return set()
    return set(Page.objects.filter(slug__in=linked, latest_revision__isnull=False).values_list("slug", flat=True))


def readable_requests(*, viewer: User | AnonymousUser, text: str) -> set[int]:
    """Of the GPU requests `text` links to with [[request:N]], those the viewer may open (the rest are shown as
    plain text: another team's request answers 404 to a team member)."""
    linked = linked_requests(text)
    if not linked:
        return set()
    readable = committee_selectors.request_list_for_viewer(viewer=viewer).filter(pk__in=linked)
    return set(readable.values_list("pk", flat=True))


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


def revision_charts(*, revision: PageRevision) -> list[dict[str, object]]:
    """The decision record's charts as Plotly figure JSON, for the page to draw in the browser."""
    if revision.page.kind != PageKind.DECISION_RECORD or not revision.data:
        return []
    return [
        {"key": c.key, "title": c.title, "figure": json.loads(c.figure.to_json()), "script_id": f"chart-{c.key}"}
        for c in charts.decision_record_charts(revision.data)
    ]
