from django.contrib import admin
from django.http import HttpRequest

from committee.models import (
    Alternative,
    CommitteeSeat,
    GpuRequest,
    ImpactForecast,
    Notification,
    NotificationDigest,
    NotificationOptOut,
    OutboxMessage,
    RequestEvent,
    ReviewCycle,
    TeamMembership,
    UsageReport,
)
from core.admin import ReadOnlyAdmin
from core.history import ReasonRequiredAdmin


@admin.register(TeamMembership)
class TeamMembershipAdmin(admin.ModelAdmin):
    list_display = ("user", "team", "role")
    list_filter = ("team", "role")
    search_fields = ("user__username", "team__name")


@admin.register(CommitteeSeat)
class CommitteeSeatAdmin(ReasonRequiredAdmin):
    """Seats are policy: a change needs a reason and shows in the policy history."""

    list_display = ("user", "role", "active_from", "active_to")
    list_filter = ("role",)


@admin.register(ReviewCycle)
class ReviewCycleAdmin(admin.ModelAdmin):
    list_display = ("week", "status", "intake_closes_at", "review_at")
    list_filter = ("status",)


class UsageReportInline(admin.StackedInline):
    model = UsageReport


class ImpactForecastInline(admin.StackedInline):
    model = ImpactForecast


class AlternativeInline(admin.TabularInline):
    model = Alternative
    extra = 0


class RequestEventInline(admin.TabularInline):
    model = RequestEvent
    extra = 0
    readonly_fields = ("at", "actor_name", "action", "detail")
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: GpuRequest | None = None) -> bool:
        return False


@admin.register(GpuRequest)
class GpuRequestAdmin(admin.ModelAdmin):
    list_display = ("title", "team", "cycle", "pool", "gpu_count", "duration_hours", "status")
    list_filter = ("cycle", "status", "team", "pool")
    search_fields = ("title", "team__name")
    list_select_related = ("team", "cycle", "pool", "pool__cluster")
    inlines = [UsageReportInline, ImpactForecastInline, AlternativeInline, RequestEventInline]


# --- the outbox and notifications: written by services only, shown here ------------------------


@admin.register(OutboxMessage)
class OutboxMessageAdmin(ReadOnlyAdmin):
    list_display = ("key", "task_name", "created_at", "relayed_at", "relay_attempts", "done_at", "done_by")
    list_filter = ("task_name", ("done_at", admin.EmptyFieldListFilter))
    search_fields = ("key", "last_error")


@admin.register(Notification)
class NotificationAdmin(ReadOnlyAdmin):
    list_display = ("recipient", "kind", "key", "created_at", "digest", "skipped")
    list_filter = ("kind", "skipped")
    search_fields = ("recipient__username", "key")
    list_select_related = ("recipient", "digest")


@admin.register(NotificationDigest)
class NotificationDigestAdmin(ReadOnlyAdmin):
    list_display = ("recipient", "day", "email", "sent_at", "notification_count")
    list_filter = ("day",)
    search_fields = ("recipient__username", "email")


@admin.register(NotificationOptOut)
class NotificationOptOutAdmin(admin.ModelAdmin):
    list_display = ("user", "kind", "created_at")
    list_filter = ("kind",)
