"""Verifying the archive's hash chain against the stored revisions."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from django.db import connection, transaction
from django.utils.translation import gettext as _

from reports import chain
from reports.models import GENESIS_HASH, ArchiveChain, PageRevision


@dataclass(frozen=True)
class VerifyResult:
    ok: bool
    message: str
    checked: int
    first_bad: PageRevision | None = None
    head_hash: str = ""  # of an intact chain: the head it ends at, as of the snapshot verified


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
    Outside a transaction, on PostgreSQL, it reads one snapshot (REPEATABLE READ): revisions appended
    while it reads are not half seen (rows past the recorded head), so a live archive verifies too.
    """
    if connection.vendor != "postgresql" or connection.in_atomic_block:
        return _archive_verify(expected_head_hash=expected_head_hash)
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        return _archive_verify(expected_head_hash=expected_head_hash)


def _archive_verify(*, expected_head_hash: str | None) -> VerifyResult:
    by_pk: dict[int, PageRevision] = {}
    seen_hashes: set[str] = set()

    def rows() -> Iterator[chain.ChainRow]:
        for revision, row in _chain_rows():
            by_pk[row.pk] = revision
            seen_hashes.add(row.hash)
            yield row

    recorded = ArchiveChain.objects.filter(pk=1).values_list("head_position", "head_hash").first()
    report = chain.verify_rows(rows(), expected_head=recorded)
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
        head_hash=report.head_hash,
    )
