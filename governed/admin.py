"""The store in the admin: read only. A change goes through governed.services.policy_change_record."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from core.admin import ReadOnlyAdmin
from governed.models import PolicyChange, PolicyValue


class PolicyValueInline(admin.TabularInline):
    model = PolicyValue
    extra = 0
    can_delete = False
    readonly_fields = ("key", "value")

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(PolicyChange)
class PolicyChangeAdmin(ReadOnlyAdmin):
    list_display = ("number", "effective_week", "source", "author_name", "created_at")
    inlines = [PolicyValueInline]
