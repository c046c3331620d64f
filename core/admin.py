"""The admin's shared base for rows that only services write."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest


class ReadOnlyAdmin(admin.ModelAdmin):
    """Shows rows and changes nothing: no add, change or delete, not even the bulk "delete selected".

    For what services alone write (published plans and windows, usage, the outbox, notifications,
    the archive), so that no one, a superuser included, edits them past their invariants.
    """

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        return {}
