"""The archive in the admin: read-only. Nobody adds, changes or deletes pages or revisions here."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from reports.models import ArchiveChain, Page, PageRevision, PdfExport


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        return {}  # not even the bulk "delete selected"


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
