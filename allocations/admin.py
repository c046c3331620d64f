from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib import admin, messages
from django.http import HttpRequest
from django.utils.translation import gettext as _

from allocations import services
from allocations.models import (
    AllocationPlan,
    AllocationWindow,
    Cluster,
    ClusterAccount,
    ElasticAction,
    GpuPool,
    SchedulerClient,
    Team,
    UsageRecord,
    WindowSyncStatus,
)
from core.admin import ReadOnlyAdmin
from core.history import ReasonRequiredAdmin

# Policy (fair-share weights, pools, cluster accounts): every change needs a reason and is kept in the history.


@admin.register(Team)
class TeamAdmin(ReasonRequiredAdmin):
    list_display = ("name", "slug", "fair_share_weight")
    prepopulated_fields = {"slug": ("name",)}
    search_fields = ("name", "slug")


class GpuPoolInline(admin.TabularInline):
    """Shown on the cluster; a pool is added or changed on its own page, where a reason is asked for."""

    model = GpuPool
    extra = 0
    show_change_link = True
    fields = ("slug", "gpu_model", "gpu_count", "burst_reserve_pct", "standby_pct", "cost_per_gpu_hour")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Cluster)
class ClusterAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "scheduler_kind")
    prepopulated_fields = {"slug": ("name",)}
    inlines = [GpuPoolInline]


@admin.register(GpuPool)
class GpuPoolAdmin(ReasonRequiredAdmin):
    """A pool's reserves are governed parameters: set when the pool is added, then changed only through the one
    service that keeps one change a week (the policy lab, governed.services.policy_change_record). Read only here,
    on the change page and when a historical row is reverted."""

    list_display = (
        "__str__", "cluster", "gpu_model", "gpu_count", "gpus_per_node", "burst_reserve_pct", "standby_pct",
        "cost_per_gpu_hour", "queue_wait_target_minutes",
    )
    list_filter = ("cluster", "gpu_model")
    RESERVE_FIELDS = ("burst_reserve_pct", "standby_pct")

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        readonly = tuple(super().get_readonly_fields(request, obj))
        return readonly if obj is None else (*readonly, *self.RESERVE_FIELDS)

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        if change:
            # A revert from the history page brings the old row's reserves with it: keep the governed ones.
            stored = GpuPool.objects.filter(pk=obj.pk).values(*self.RESERVE_FIELDS).first() or {}
            kept = [name for name, value in stored.items() if getattr(obj, name) != value]
            for name, value in stored.items():
                setattr(obj, name, value)
            if kept:
                messages.warning(request, _(
                    "A pool's burst reserve and cold standby change through the policy lab, at most one change a "
                    "week; they were kept as they are."))
        super().save_model(request, obj, form, change)


# --- plans, windows and schedulers ------------------------------------------------------------


# Published rows are written by services only: the admin shows them and changes nothing.


@admin.register(AllocationPlan)
class AllocationPlanAdmin(ReadOnlyAdmin):
    list_display = ("week", "version", "published_at", "published_by_name", "source_ref", "change_seq")
    list_filter = ("week",)
    search_fields = ("week", "published_by_name", "source_ref")


@admin.register(AllocationWindow)
class AllocationWindowAdmin(ReadOnlyAdmin):
    list_display = ("id", "week", "cluster", "pool", "team", "gpu_count", "start", "end", "tier", "request_ref")
    list_filter = ("week", "cluster", "tier")
    list_select_related = ("cluster", "pool", "pool__cluster", "team")


@admin.register(WindowSyncStatus)
class WindowSyncStatusAdmin(ReadOnlyAdmin):
    list_display = ("window", "state", "nodes_requested", "nodes_reserved", "client_name", "reported_at")
    list_filter = ("state",)


@admin.register(ElasticAction)
class ElasticActionAdmin(ReadOnlyAdmin):
    list_display = ("kind", "pool", "window", "team", "gpus", "utilization_pct", "started_at", "ended_at")
    list_filter = ("kind", "pool")
    list_select_related = ("pool", "pool__cluster", "window", "team")


@admin.register(UsageRecord)
class UsageRecordAdmin(ReadOnlyAdmin):
    list_display = ("team", "pool", "period_start", "period_end", "gpu_hours_used", "mean_utilization_pct",
                    "reported_by")
    list_filter = ("pool", "team")
    list_select_related = ("team", "pool", "pool__cluster")


@admin.register(ClusterAccount)
class ClusterAccountAdmin(ReasonRequiredAdmin):
    list_display = ("cluster", "team", "account")
    list_filter = ("cluster",)


ROTATION_OVERLAP = timedelta(hours=24)  # the admin's rotation with overlap; the command takes any


@admin.register(SchedulerClient)
class SchedulerClientAdmin(admin.ModelAdmin):
    """Adding a scheduler issues its token and shows it once; only its hash is stored."""

    list_display = ("name", "cluster", "token_prefix", "is_active", "created_at", "last_seen_at",
                    "previous_token_expires_at")
    list_filter = ("cluster", "is_active")
    readonly_fields = ("token_prefix", "created_at", "last_seen_at", "previous_token_expires_at")
    actions = ["issue_new_token", "issue_new_token_with_overlap"]

    def get_fields(self, request: HttpRequest, obj: SchedulerClient | None = None) -> tuple[str, ...]:
        if obj is None:
            return ("cluster", "name")
        return ("cluster", "name", "is_active", "token_prefix", "created_at", "last_seen_at",
                "previous_token_expires_at")

    def get_readonly_fields(self, request: HttpRequest, obj: SchedulerClient | None = None) -> list[str]:
        return [*self.readonly_fields, "cluster"] if obj else []

    def save_model(self, request: HttpRequest, obj: SchedulerClient, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        issued = services.scheduler_client_create(cluster=obj.cluster, name=obj.name)
        obj.pk = issued.client.pk
        obj.refresh_from_db()
        self._show_token(request, issued)

    @admin.action(description=_("Issue a new token (the old one stops working)"))
    def issue_new_token(self, request: HttpRequest, queryset: Any) -> None:
        for client in queryset.select_related("cluster"):
            self._show_token(request, services.scheduler_client_rotate(client=client))

    @admin.action(description=_("Issue a new token (the old one works 24 more hours)"))
    def issue_new_token_with_overlap(self, request: HttpRequest, queryset: Any) -> None:
        for client in queryset.select_related("cluster"):
            self._show_token(request, services.scheduler_client_rotate(client=client, overlap=ROTATION_OVERLAP))

    def _show_token(self, request: HttpRequest, issued: services.IssuedToken) -> None:
        messages.warning(
            request,
            _("Token for %(name)s (%(cluster)s): %(token)s — copy it now, it is not shown again.")
            % {"name": issued.client.name, "cluster": issued.client.cluster.slug, "token": issued.token},
        )
