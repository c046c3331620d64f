"""The decision archive: pages, their append-only hash-chained revisions, and PDF exports.

A `Page` is the mutable head of a document (its current title and latest revision); a
`PageRevision` is an immutable full snapshot. Revisions never point at a user: the author's name
is copied as text, so no user deletion can ever cascade into (or rewrite) the archive, and on
PostgreSQL a trigger refuses any UPDATE or DELETE of a revision row (see migration 0002).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.urls import reverse
from django.utils.translation import gettext_lazy as _

HASH_LENGTH = 64
GENESIS_HASH = "0" * HASH_LENGTH


class PageKind(models.TextChoices):
    DECISION_RECORD = "decision_record", _("Decision record")
    POLICY = "policy", _("Policy")
    FREE = "free", _("Page")


class Page(models.Model):
    """One archive document. Never deleted; its content lives only in its revisions."""

    slug = models.SlugField(_("slug"), max_length=100, unique=True)
    kind = models.CharField(_("kind"), max_length=20, choices=PageKind.choices, default=PageKind.FREE)
    title = models.CharField(_("title"), max_length=200, help_text=_("Copied from the latest revision."))
    source_key = models.CharField(
        _("source"),
        max_length=100,
        null=True,
        blank=True,
        unique=True,
        help_text=_("What a generated page documents, e.g. cycle:2026-W49 or rubric:3."),
    )
    latest_revision = models.ForeignKey(
        "PageRevision",
        on_delete=models.PROTECT,
        null=True,
        blank=True,
        related_name="+",
        verbose_name=_("latest revision"),
    )
    created_at = models.DateTimeField(_("created"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        ordering = ["kind", "-updated_at"]
        verbose_name = _("archive page")
        verbose_name_plural = _("archive pages")
        indexes = [
            # The archive index: pages of one kind, most recently changed first.
            models.Index(fields=["kind", "-updated_at"], name="page_kind_updated_idx"),
        ]

    def __str__(self) -> str:
        return self.title

    def get_absolute_url(self) -> str:
        return reverse("reports:page", kwargs={"slug": self.slug})


class PageRevision(models.Model):
    """A full snapshot of a page at one save. Append-only and hash-chained across the whole archive.

    `number` counts the page's own revisions (1, 2, …); `position` is the revision's place in the
    archive-wide chain. `hash` = sha256(`prev_hash` + canonical JSON of the content, author, time,
    page, number and position) — see reports/chain.py.
    """

    page = models.ForeignKey(Page, on_delete=models.PROTECT, related_name="revisions", verbose_name=_("page"))
    number = models.PositiveIntegerField(_("revision"))
    position = models.PositiveBigIntegerField(_("position in the chain"), unique=True)
    title = models.CharField(_("title"), max_length=200)
    body = models.TextField(_("body (Markdown)"), blank=True)
    data = models.JSONField(_("structured data"), default=dict, blank=True)
    summary = models.CharField(_("edit summary"), max_length=300)
    author_name = models.CharField(_("author"), max_length=150)
    author_username = models.CharField(_("author's username"), max_length=150, blank=True)
    created_at = models.DateTimeField(_("saved"))
    restored_from = models.PositiveIntegerField(
        _("restored from revision"), null=True, blank=True, help_text=_("The revision number this one restored.")
    )
    prev_hash = models.CharField(_("previous hash"), max_length=HASH_LENGTH)
    hash = models.CharField(_("hash"), max_length=HASH_LENGTH, unique=True)

    class Meta:
        ordering = ["page", "number"]
        verbose_name = _("page revision")
        verbose_name_plural = _("page revisions")
        constraints = [
            models.UniqueConstraint(fields=["page", "number"], name="revision_unique_number_per_page"),
            models.CheckConstraint(condition=Q(number__gte=1), name="revision_number_positive"),
            models.CheckConstraint(condition=Q(position__gte=1), name="revision_position_positive"),
            models.CheckConstraint(condition=~Q(summary=""), name="revision_summary_required"),
            models.CheckConstraint(condition=~Q(author_name=""), name="revision_author_required"),
            models.CheckConstraint(
                condition=Q(restored_from__isnull=True) | Q(restored_from__lt=F("number")),
                name="revision_restores_an_earlier_one",
            ),
            models.CheckConstraint(condition=Q(hash__regex=r"^[0-9a-f]{64}$"), name="revision_hash_hex"),
            models.CheckConstraint(condition=Q(prev_hash__regex=r"^[0-9a-f]{64}$"), name="revision_prev_hash_hex"),
        ]
        indexes = [
            # Recent changes on the archive index: newest saves first.
            models.Index(fields=["-created_at"], name="revision_created_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.page_id} #{self.number}"

    def get_absolute_url(self) -> str:
        return reverse("reports:revision", kwargs={"slug": self.page.slug, "number": self.number})


class ArchiveChain(models.Model):
    """The chain's head (a single row, pk=1). Appending locks it, so revisions join the chain one at a time.

    It is a convenience copy: `verify_archive` recomputes the head from the revisions and reports
    when this row disagrees (which is how a deleted last revision is caught).
    """

    id = models.PositiveSmallIntegerField(primary_key=True, default=1)
    head_position = models.PositiveBigIntegerField(_("head position"), default=0)
    head_hash = models.CharField(_("head hash"), max_length=HASH_LENGTH, default=GENESIS_HASH)
    updated_at = models.DateTimeField(_("updated"), auto_now=True)

    class Meta:
        verbose_name = _("archive chain head")
        verbose_name_plural = _("archive chain head")
        constraints = [models.CheckConstraint(condition=Q(id=1), name="archivechain_single_row")]

    def __str__(self) -> str:
        return f"{self.head_position}: {self.head_hash}"


class ExportStatus(models.TextChoices):
    PENDING = "pending", _("Waiting")
    RUNNING = "running", _("Rendering")
    DONE = "done", _("Ready")
    FAILED = "failed", _("Failed")


class ExportStep(models.TextChoices):
    QUEUED = "queued", _("Waiting for a worker")
    PREPARING = "preparing", _("Preparing the page")
    CHARTS = "charts", _("Drawing the charts")
    TYPESETTING = "typesetting", _("Typesetting the PDF")
    SAVING = "saving", _("Saving the file")
    DONE = "done", _("Ready")
    FAILED = "failed", _("Failed")


class PdfExport(models.Model):
    """The PDF of one revision in one language. One row per revision and language: asking again reuses it (or
    retries a failure). A decision record prints in the language of whoever asked for it (rendered from its data,
    as its page reads: reports.records.language); other pages print their text as written, with Docket's own words
    around it in that language."""

    revision = models.ForeignKey(
        PageRevision, on_delete=models.PROTECT, related_name="pdf_exports", verbose_name=_("revision")
    )
    language = models.CharField(_("language"), max_length=10, choices=settings.LANGUAGES)
    status = models.CharField(_("status"), max_length=10, choices=ExportStatus.choices, default=ExportStatus.PENDING)
    progress_pct = models.PositiveSmallIntegerField(_("progress %"), default=0)
    step = models.CharField(_("step"), max_length=20, choices=ExportStep.choices, default=ExportStep.QUEUED)
    file_name = models.CharField(_("file"), max_length=200, blank=True)
    size_bytes = models.PositiveIntegerField(_("size (bytes)"), default=0)
    charts_included = models.BooleanField(_("charts included"), default=False)
    note = models.CharField(_("note"), max_length=300, blank=True, help_text=_("e.g. why the charts are missing."))
    error = models.TextField(_("error"), blank=True)
    requested_by_name = models.CharField(_("requested by"), max_length=150)
    requested_at = models.DateTimeField(_("requested"), auto_now_add=True)
    started_at = models.DateTimeField(_("started"), null=True, blank=True)
    finished_at = models.DateTimeField(_("finished"), null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(_("attempts"), default=0)

    class Meta:
        ordering = ["-requested_at"]
        verbose_name = _("PDF export")
        verbose_name_plural = _("PDF exports")
        constraints = [
            models.UniqueConstraint(fields=["revision", "language"], name="pdfexport_one_per_revision_language"),
            models.CheckConstraint(condition=Q(progress_pct__lte=100), name="pdfexport_progress_0_100"),
            models.CheckConstraint(
                condition=~Q(status=ExportStatus.DONE) | (Q(progress_pct=100) & Q(file_name__gt="")),
                name="pdfexport_done_has_file",
            ),
            models.CheckConstraint(
                condition=Q(file_name="") | Q(file_name__regex=r"^[A-Za-z0-9._-]+\.pdf$"),
                name="pdfexport_file_name_plain",
            ),
        ]

    def __str__(self) -> str:
        return f"PDF of {self.revision_id} in {self.language} ({self.status})"


# --- the capacity buffer fund ------------------------------------------------------------------


class BufferFund(models.Model):
    """One calendar quarter's capacity buffer fund and its ledger (docs/executive.md).

    The buffer is not typed here: it is the sum of the departments' buffer lines of the quarter (each department's
    quarterly budget × `budget.buffer_pct` in force, `committee.selectors.budgets`). It pays for emergency purchases;
    its spending is the ledger of `BufferSpend` rows, and balance = buffer − spent never goes below zero when a spend
    is recorded (the service locks this row while it checks). Quarters are calendar quarters in the committee's time
    zone.
    """

    quarter = models.CharField(_("quarter"), max_length=7, unique=True, help_text=_("e.g. 2026-Q4"))
    currency = models.CharField(_("currency"), max_length=3)
    opened_by_name = models.CharField(_("opened by"), max_length=150)
    opened_at = models.DateTimeField(_("opened"))

    class Meta:
        ordering = ["-quarter"]
        verbose_name = _("capacity buffer fund")
        verbose_name_plural = _("capacity buffer funds")
        constraints = [
            models.CheckConstraint(condition=Q(quarter__regex=r"^\d{4}-Q[1-4]$"), name="bufferfund_quarter_format"),
        ]

    def __str__(self) -> str:
        return self.quarter

    def get_absolute_url(self) -> str:
        return reverse("reports:buffer-fund", kwargs={"quarter": self.quarter})


class BufferSpend(models.Model):
    """One purchase paid from a quarter's buffer: what, how much, when, who recorded it and why.

    Append-only through `buffer_spend_record`; the emergency it answered is linked and its title copied,
    so the ledger reads the same if the link is gone.
    """

    fund = models.ForeignKey(BufferFund, on_delete=models.PROTECT, related_name="spends", verbose_name=_("fund"))
    amount = models.DecimalField(_("amount"), max_digits=14, decimal_places=2)
    item = models.CharField(_("what was bought"), max_length=200)
    spent_at = models.DateTimeField(_("spent"))
    reason = models.TextField(_("reason"), max_length=2000)
    emergency = models.ForeignKey(
        "committee.EmergencyRequest", on_delete=models.SET_NULL, null=True, blank=True, related_name="+",
        verbose_name=_("emergency request"),
    )
    emergency_title = models.CharField(_("emergency request"), max_length=200, blank=True)
    recorded_by_name = models.CharField(_("recorded by"), max_length=150)
    recorded_at = models.DateTimeField(_("recorded"))

    class Meta:
        ordering = ["fund", "spent_at", "id"]
        verbose_name = _("buffer spend")
        verbose_name_plural = _("buffer spends")
        constraints = [
            models.CheckConstraint(condition=Q(amount__gt=0), name="bufferspend_amount_positive"),
            models.CheckConstraint(condition=~Q(item=""), name="bufferspend_item_required"),
            models.CheckConstraint(condition=~Q(reason=""), name="bufferspend_reason_required"),
        ]
        indexes = [
            # The executive summary: a month's spending, across the funds.
            models.Index(fields=["spent_at"], name="bufferspend_spent_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.fund_id}: {self.amount} {self.item}"


class DeferredPurchase(models.Model):
    """A purchase the committee decided to postpone, with its amount: the executive summary reports them."""

    fund = models.ForeignKey(
        BufferFund, on_delete=models.PROTECT, related_name="deferred_purchases", verbose_name=_("fund")
    )
    amount = models.DecimalField(_("amount"), max_digits=14, decimal_places=2)
    item = models.CharField(_("what was not bought"), max_length=200)
    deferred_at = models.DateTimeField(_("deferred"))
    reason = models.TextField(_("reason"), max_length=2000)
    recorded_by_name = models.CharField(_("recorded by"), max_length=150)
    recorded_at = models.DateTimeField(_("recorded"))

    class Meta:
        ordering = ["fund", "deferred_at", "id"]
        verbose_name = _("deferred purchase")
        verbose_name_plural = _("deferred purchases")
        constraints = [
            models.CheckConstraint(condition=Q(amount__gt=0), name="deferredpurchase_amount_positive"),
            models.CheckConstraint(condition=~Q(item=""), name="deferredpurchase_item_required"),
            models.CheckConstraint(condition=~Q(reason=""), name="deferredpurchase_reason_required"),
        ]
        indexes = [
            # The executive summary: a month's deferred purchases.
            models.Index(fields=["deferred_at"], name="deferredpurchase_at_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.fund_id}: {self.amount} {self.item} (deferred)"


__all__ = [
    "GENESIS_HASH",
    "ArchiveChain",
    "BufferFund",
    "BufferSpend",
    "DeferredPurchase",
    "ExportStatus",
    "ExportStep",
    "Page",
    "PageKind",
    "PageRevision",
    "PdfExport",
]
