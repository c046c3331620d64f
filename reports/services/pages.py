"""Writes to archive pages: create, save a revision, restore an old one.

Every write appends exactly one `PageRevision` (a full snapshot) to the page and to the
archive-wide hash chain; nothing here ever updates or deletes a revision. Locks are always taken
in the same order — the page row, then the chain head — so concurrent saves queue instead of
deadlocking, and a save checks the page's latest revision only while it holds the page's lock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.validators import validate_slug
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from committee import selectors as committee_selectors
from committee.services import actor_name
from core.audit import fit
from core.locks import write_transaction
from reports import chain, records
from reports.models import ArchiveChain, Page, PageKind, PageRevision

SYSTEM_AUTHOR = "Docket"
MAX_BODY_CHARS = 200_000
MAX_SUMMARY_CHARS = 300
MAX_TITLE_CHARS = 200
# First path segments under /archive/ that are not pages.
RESERVED_SLUGS = frozenset({"new", "preview", "search", "exports", "chain", "recent", "api", "static", "dashboards",
                            "executive", "buffer"})
# Generated pages live at these addresses; people cannot take them first.
GENERATED_PREFIXES = ("decision-record-", "rubric-v", "monthly-review-", "policy-proposal-")


class EditConflict(Exception):
    """The page changed after the editor loaded it; nothing was saved."""

    def __init__(self, *, latest: PageRevision, base_revision_id: int | None) -> None:
        super().__init__(f"page {latest.page_id} is at revision {latest.pk}, not {base_revision_id}")
        self.latest = latest
        self.base_revision_id = base_revision_id


@dataclass(frozen=True)
class Author:
    name: str
    username: str

    @classmethod
    def of(cls, user: User | None) -> Author:
        if user is None:
            return cls(SYSTEM_AUTHOR, "")
        return cls(actor_name(user), fit(user.get_username()))


def _check_can_edit(actor: User) -> None:
    if not committee_selectors.user_is_committee(user=actor):
        raise PermissionDenied(_("Only committee members can edit the archive."))


def _clean_text(*, title: str, body: str, summary: str) -> tuple[str, str, str]:
    title = (title or "").replace("\x00", "").strip()
    body = (body or "").replace("\x00", "").replace("\r\n", "\n")
    summary = " ".join((summary or "").replace("\x00", "").split())
    errors: dict[str, list[str]] = {}
    if not title:
        errors["title"] = [_("A page needs a title.")]
    elif len(title) > MAX_TITLE_CHARS:
        errors["title"] = [_("Keep the title under %(n)d characters.") % {"n": MAX_TITLE_CHARS}]
    if len(body) > MAX_BODY_CHARS:
        errors["body"] = [_("The text is longer than %(n)d characters.") % {"n": MAX_BODY_CHARS}]
    if not summary:
        errors["summary"] = [_("Say in a few words what you changed and why.")]
    elif len(summary) > MAX_SUMMARY_CHARS:
        errors["summary"] = [_("Keep the summary under %(n)d characters.") % {"n": MAX_SUMMARY_CHARS}]
    if errors:
        raise ValidationError(errors)
    return title, body, summary


def _chain_lock() -> ArchiveChain:
    """The chain head, locked until the transaction ends. Created from the revisions if missing."""
    if not ArchiveChain.objects.filter(pk=1).exists():
        last = PageRevision.objects.order_by("-position").only("position", "hash").first()
        defaults = {"head_position": last.position, "head_hash": last.hash} if last else {}
        try:
            with transaction.atomic():
                ArchiveChain.objects.create(pk=1, **defaults)
        except IntegrityError:
            pass  # another save created it first
    return ArchiveChain.objects.select_for_update(no_key=True).get(pk=1)


def _page_lock(pk: int) -> Page:
    """The page row, locked until the transaction ends: saves to one page happen one at a time."""
    return Page.objects.select_for_update(no_key=True).get(pk=pk)


def _append(
    *,
    page: Page,
    title: str,
    body: str,
    data: Any,
    summary: str,
    author: Author,
    restored_from: int | None = None,
) -> PageRevision:
    """Add the next revision to a page the caller has locked, and move the chain head to it."""
    head = _chain_lock()
    latest = page.latest_revision
    number = latest.number + 1 if latest is not None else 1
    position = head.head_position + 1
    created_at = timezone.now()
    data = chain.normalize_data(data if data is not None else {})
    payload = chain.revision_payload(
        page_slug=page.slug,
        number=number,
        position=position,
        title=title,
        body=body,
        data=data,
        summary=summary,
        author_name=author.name,
        created_at=created_at,
        restored_from=restored_from,
    )
    revision = PageRevision.objects.create(
        page=page,
        number=number,
        position=position,
        title=title,
        body=body,
        data=data,
        summary=summary,
        author_name=author.name,
        author_username=author.username,
        created_at=created_at,
        restored_from=restored_from,
        prev_hash=head.head_hash,
        hash=chain.link_hash(head.head_hash, payload),
    )
    head.head_position = position
    head.head_hash = revision.hash
    head.save(update_fields=["head_position", "head_hash", "updated_at"])
    page.latest_revision = revision
    page.title = title
    page.save(update_fields=["latest_revision", "title", "updated_at"])
    return revision


def _validate_slug(slug: str) -> str:
    slug = (slug or "").strip().lower()
    try:
        validate_slug(slug)
    except ValidationError:
        raise ValidationError({"slug": [_("Use only lowercase letters, digits, hyphens and underscores.")]}) from None
    if len(slug) > 100:
        raise ValidationError({"slug": [_("Keep the address under 100 characters.")]})
    if slug in RESERVED_SLUGS or slug.startswith(GENERATED_PREFIXES):
        raise ValidationError({"slug": [_("“%(slug)s” is reserved; choose another address.") % {"slug": slug}]})
    return slug


def page_create_system(
    *,
    slug: str,
    kind: str,
    source_key: str,
    title: str,
    body: str,
    data: Any,
    summary: str,
) -> Page:
    """Create a generated page with its first revision, authored by Docket itself.

    The caller holds no locks; the page row is new, so only the chain head is locked.
    IntegrityError if a page for `source_key` or `slug` already exists.
    """
    title, body, summary = _clean_text(title=title, body=body, summary=summary)
    with transaction.atomic():
        page = Page.objects.create(slug=slug, kind=kind, title=title, source_key=source_key)
        _append(page=page, title=title, body=body, data=data, summary=summary, author=Author.of(None))
    return page


@write_transaction
def page_create(
    *,
    actor: User,
    slug: str,
    title: str,
    body: str,
    summary: str,
) -> Page:
    """A committee member starts a free page (charter, minutes…) with its first revision.

    PermissionDenied for anyone outside the committee; ValidationError (nothing written) for a bad,
    reserved or taken address, a missing title or a missing edit summary.
    """
    _check_can_edit(actor)
    slug = _validate_slug(slug)
    title, body, summary = _clean_text(title=title, body=body, summary=summary)
    if Page.objects.filter(slug=slug).exists():
        raise ValidationError({"slug": [_("A page already lives at this address.")]})
    try:
        with transaction.atomic():
            page = Page.objects.create(slug=slug, kind=PageKind.FREE, title=title)
    except IntegrityError:
        raise ValidationError({"slug": [_("A page already lives at this address.")]}) from None
    _append(page=page, title=title, body=body, data={}, summary=summary, author=Author.of(actor))
    return page


@write_transaction
def page_revision_save(
    *,
    actor: User,
    page: Page,
    base_revision_id: int | None,
    title: str,
    body: str,
    summary: str,
) -> PageRevision:
    """Save an edit as the page's next revision, if the page has not moved on since the editor loaded it.

    `base_revision_id` is the revision the edit started from. Under the page's row lock, if the
    latest revision is another one, EditConflict is raised and nothing is written: a second saver
    racing the first always sees the first's revision. The structured data of the latest revision
    is carried over unchanged (people edit the text; generated data is only written by the
    generators). PermissionDenied outside the committee; ValidationError for a missing summary or
    when nothing changed.
    """
    _check_can_edit(actor)
    title, body, summary = _clean_text(title=title, body=body, summary=summary)
    locked = _page_lock(page.pk)
    latest = locked.latest_revision
    if latest is not None and latest.pk != base_revision_id:
        raise EditConflict(latest=latest, base_revision_id=base_revision_id)
    if latest is not None and latest.title == title and latest.body == body:
        raise ValidationError(_("Nothing changed: the text and title are the same as the latest revision."))
    return _append(
        page=locked,
        title=title,
        body=body,
        data=latest.data if latest is not None else {},
        summary=summary,
        author=Author.of(actor),
    )


@write_transaction
def page_notes_save(
    *,
    actor: User,
    page: Page,
    base_revision_id: int | None,
    title: str,
    above: str,
    below: str,
    summary: str,
) -> PageRevision:
    """Save an edit of a generated page's own text: what people wrote above and below its generated block.

    The block is the latest revision's, read under the page's lock: an editor never sees it in
    the textarea, cannot change it, and a text that still carries one (an editor on the old
    form, a paste) has it dropped for the page's own. Otherwise as page_revision_save (the
    edit conflict, the unchanged text and the permission are checked the same way). A page
    without a generated block keeps the edit as its whole text.
    """
    _check_can_edit(actor)
    locked = _page_lock(page.pk)
    latest = locked.latest_revision
    split = records.generated_split(latest.body) if latest is not None else None
    if split is None:
        body = "\n\n".join(part for part in (above.strip("\n"), below) if part)
    else:
        body = records.generated_join(above=above, block=split.block, below=below)
    return page_revision_save(
        actor=actor, page=locked, base_revision_id=base_revision_id, title=title, body=body, summary=summary
    )


@write_transaction
def page_revision_restore(
    *,
    actor: User,
    page: Page,
    number: int,
    base_revision_id: int | None,
    summary: str = "",
) -> PageRevision:
    """Bring back revision `number` as a new revision (title, body and data copied; history kept).

    Same conflict rule as a save: refused with EditConflict when the page moved on after the
    restorer looked at it. ValidationError when that revision is already the current content.
    """
    _check_can_edit(actor)
    locked = _page_lock(page.pk)
    latest = locked.latest_revision
    if latest is not None and latest.pk != base_revision_id:
        raise EditConflict(latest=latest, base_revision_id=base_revision_id)
    try:
        old = locked.revisions.get(number=number)
    except PageRevision.DoesNotExist:
        raise ValidationError(_("This page has no revision %(n)d.") % {"n": number}) from None
    if latest is not None and (old.title, old.body, old.data) == (latest.title, latest.body, latest.data):
        raise ValidationError(_("Revision %(n)d is already the current content.") % {"n": number})
    note = " ".join((summary or "").split())
    full_summary = _("Restored revision %(n)d") % {"n": number} + (f": {note}" if note else "")
    return _append(
        page=locked,
        title=old.title,
        body=old.body,
        data=old.data,
        summary=full_summary[:MAX_SUMMARY_CHARS],
        author=Author.of(actor),
        restored_from=number,
    )


def page_append_system(
    *, page: Page, title: str, data: Any, summary: str, body_from: Callable[[str | None], str]
) -> PageRevision | None:
    """Append a generated revision to a page unless its content (title, body, data) is already current.

    `body_from` receives the latest body (read under the page's lock) and returns the new one, so
    a generator can keep what people wrote around its part. Returns the new revision, or None when
    nothing changed (a generator can run any number of times). Runs in its own transaction.
    """
    with transaction.atomic():
        locked = _page_lock(page.pk)
        latest = locked.latest_revision
        title, body, summary = _clean_text(
            title=title, body=body_from(latest.body if latest else None), summary=summary
        )
        normalized = chain.normalize_data(data if data is not None else {})
        if latest is not None and (latest.title, latest.body, latest.data) == (title, body, normalized):
            return None
        return _append(page=locked, title=title, body=body, data=normalized, summary=summary, author=Author.of(None))
