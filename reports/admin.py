"""The archive in the admin: read-only. Nobody adds, changes or deletes pages or revisions here."""

from __future__ import annotations

from django.contrib import admin

from core.admin import ReadOnlyAdmin
from reports.models import ArchiveChain, Page, PageRevision, PdfExport


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
