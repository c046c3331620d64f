from django.contrib import admin
from django.http import HttpRequest

from committee.models import (
    Alternative,
    Appeal,
    CommitteeSeat,
    ConflictWaiver,
    DecisionCorrection,
    EmergencyApproval,
    EmergencyRequest,
    GpuRequest,
    ImpactForecast,
    Notification,
    NotificationDigest,
    NotificationOptOut,
    OutboxMessage,
    ReportingLine,
    RequestEvent,
    ReviewCycle,
    SsoGroupMapping,
    TeamMembership,
    UsageReport,
)
from core.admin import ReadOnlyAdmin
from core.history import ReasonRequiredAdmin


@admin.register(TeamMembership)
class TeamMembershipAdmin(admin.ModelAdmin):
    list_display = ("user", "team", "role", "source")
    list_filter = ("team", "role", "source")
    search_fields = ("user__username", "team__name")


@admin.register(CommitteeSeat)
class CommitteeSeatAdmin(ReasonRequiredAdmin):
    """Seats are policy: a change needs a reason and shows in the policy history."""

    list_display = ("user", "role", "active_from", "active_to", "source")
    list_filter = ("role", "source")


@admin.register(SsoGroupMapping)
class SsoGroupMappingAdmin(admin.ModelAdmin):
    """Which provider group gives which team membership or committee seat (docs/deploy.md)."""

    list_display = ("group", "team", "team_role", "seat_role")
    list_filter = ("team", "seat_role")
    search_fields = ("group", "team__name")


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

@admin.register(ReportingLine)
class ReportingLineAdmin(admin.ModelAdmin):
    """Whom each person reports to: the manager chain that finds likely conflicts (docs/conflicts.md). Single sign-on
    keeps the lines it made; a line made here (source "by hand") is never changed by it."""

    list_display = ("person", "manager_username", "source", "changed_at")
    list_filter = ("source",)
    search_fields = ("person__username", "manager_username")


@admin.register(ConflictWaiver)
class ConflictWaiverAdmin(ReadOnlyAdmin):
    """The chair's waivers, written on the review page only (committee.services.conflict_waive): read-only."""

    list_display = ("request", "member_name", "conflict", "waived_by_name", "waived_at", "withdrawn_at")
    search_fields = ("member_name", "reason", "conflict")


@admin.register(DecisionCorrection)
class DecisionCorrectionAdmin(ReadOnlyAdmin):
    """History written by decision_correct and appeal_decide only: read-only, for a superuser too."""

    list_display = ("cycle", "request_title", "team_name", "previous_outcome", "outcome", "corrected_by_name",
                    "corrected_at", "plan_version")
    list_filter = ("cycle",)
    search_fields = ("request_title", "team_name", "reason")


@admin.register(Appeal)
class AppealAdmin(ReadOnlyAdmin):
    """Written by appeal_file and appeal_decide only: read-only, for a superuser too."""

    list_display = ("cycle", "request_title", "team_name", "status", "filed_by_name", "filed_at", "decided_by_name")
    list_filter = ("cycle", "status")
    search_fields = ("request_title", "team_name", "statement")


class EmergencyApprovalInline(admin.TabularInline):
    model = EmergencyApproval
    extra = 0
    can_delete = False
    readonly_fields = ("member_name", "as_chair", "approve", "note", "at")
    fields = readonly_fields

    def has_add_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: object = None) -> bool:
        return False


@admin.register(EmergencyRequest)
class EmergencyRequestAdmin(ReadOnlyAdmin):
    """Written only by committee/services/emergency.py: approvals place it and publish a plan version."""

    list_display = ("request", "status", "filed_by_name", "filed_at", "use_standby", "plan", "posthoc_outcome")
    list_filter = ("status", "use_standby", "posthoc_outcome")
    search_fields = ("request__title", "request__team__name", "filed_by_name")
    list_select_related = ("request__team", "request__cycle", "plan")
    inlines = [EmergencyApprovalInline]
