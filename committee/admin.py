from django.contrib import admin

from committee.models import (
    Alternative,
    CommitteeSeat,
    GpuRequest,
    ImpactForecast,
    RequestEvent,
    ReviewCycle,
    TeamMembership,
    UsageReport,
)


@admin.register(TeamMembership)
class TeamMembershipAdmin(admin.ModelAdmin):
    list_display = ("user", "team", "role")
    list_filter = ("team", "role")
    search_fields = ("user__username", "team__name")


@admin.register(CommitteeSeat)
class CommitteeSeatAdmin(admin.ModelAdmin):
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

    def has_add_permission(self, request, obj=None):  # type: ignore[no-untyped-def]
        return False


@admin.register(GpuRequest)
class GpuRequestAdmin(admin.ModelAdmin):
    list_display = ("title", "team", "cycle", "pool", "gpu_count", "duration_hours", "status")
    list_filter = ("cycle", "status", "team", "pool")
    search_fields = ("title", "team__name")
    list_select_related = ("team", "cycle", "pool", "pool__cluster")
    inlines = [UsageReportInline, ImpactForecastInline, AlternativeInline, RequestEventInline]
