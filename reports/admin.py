"""The archive in the admin: read-only. Nobody adds, changes or deletes pages or revisions here."""

from __future__ import annotations

from django.contrib import admin

from core.admin import ReadOnlyAdmin
from reports.models import ArchiveChain, BufferFund, BufferSpend, DeferredPurchase, Page, PageRevision, PdfExport


@admin.register(Page)
class PageAdmin(ReadOnlyAdmin):
    list_display = ["title", "slug", "kind", "source_key", "updated_at"]
    list_filter = ["kind"]
    search_fields = ["title", "slug"]


@admin.register(PageRevision)
class PageRevisionAdmin(ReadOnlyAdmin):
    list_display = ["page", "number", "position", "author_name", "created_at", "summary"]
    list_select_related = ["page"]
    search_fields = ["page__slug", "summary", "author_name"]
    ordering = ["-position"]


@admin.register(ArchiveChain)
class ArchiveChainAdmin(ReadOnlyAdmin):
    list_display = ["head_position", "head_hash", "updated_at"]


@admin.register(PdfExport)
class PdfExportAdmin(ReadOnlyAdmin):
    list_display = ["revision", "status", "progress_pct", "requested_by_name", "requested_at", "finished_at"]
    list_select_related = ["revision", "revision__page"]
    list_filter = ["status"]


# The buffer fund's ledger is written by reports.executive.services alone (the balance check and its lock).


@admin.register(BufferFund)
class BufferFundAdmin(ReadOnlyAdmin):
    list_display = ["quarter", "currency", "opened_by_name", "opened_at"]


@admin.register(BufferSpend)
class BufferSpendAdmin(ReadOnlyAdmin):
    list_display = ["fund", "spent_at", "item", "amount", "emergency_title", "recorded_by_name"]
    list_select_related = ["fund"]
    list_filter = ["fund"]


@admin.register(DeferredPurchase)
class DeferredPurchaseAdmin(ReadOnlyAdmin):
    list_display = ["fund", "deferred_at", "item", "amount", "recorded_by_name"]
    list_select_related = ["fund"]
    list_filter = ["fund"]
