from __future__ import annotations

from datetime import timedelta
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.http import HttpRequest
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from allocations import services
from allocations.models import (
    AllocationPlan,
    AllocationWindow,
    Cluster,
    ClusterAccount,
    Department,
    ElasticAction,
    GpuPool,
    SchedulerClient,
    Team,
    UsageRecord,
    WindowSyncStatus,
)
from core.admin import ReadOnlyAdmin
from core.datetimes import format_isoweek
from core.history import ChangeReasonForm, ReasonRequiredAdmin
from governed.models import ChangeSource
from governed.params import POOL_PREFIX, PRICE, PRICE_MAX
from governed.services import policy_change_record

# Policy (fair-share weights, pools, cluster accounts): every change needs a reason and is kept in the history.


@admin.register(Department)
class DepartmentAdmin(ReasonRequiredAdmin):
    """The org chart's upper level: a cost centre and its fair-share weight; its teams are listed on its page."""

    list_display = ("name", "slug", "fair_share_weight")
    prepopulated_fields = {"slug": ("name",)}
    search_fields = ("name", "slug")


@admin.register(Team)
class TeamAdmin(ReasonRequiredAdmin):
    list_display = ("name", "slug", "department", "fair_share_weight")
    list_filter = ("department",)
    list_select_related = ("department",)
    prepopulated_fields = {"slug": ("name",)}
    search_fields = ("name", "slug")


class GpuPoolInline(admin.TabularInline):
    """Shown on the cluster; a pool is added or changed on its own page, where a reason is asked for."""

    model = GpuPool
    extra = 0
    show_change_link = True
    fields = ("slug", "gpu_model", "gpu_count", "burst_reserve_pct", "standby_pct", "price_per_gpu_hour")
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


class GpuPoolAddForm(ChangeReasonForm):
    """A new pool's first burst reserve, cold standby and price, which the one store records (not fields of the
    pool)."""

    burst_reserve_pct = forms.IntegerField(
        label=gettext_lazy("burst reserve %"), min_value=0, max_value=99, initial=20,
        help_text=gettext_lazy("Held back from standard windows; preemptible work may use it."))
    standby_pct = forms.IntegerField(
        label=gettext_lazy("cold standby %"), min_value=0, max_value=99, initial=10,
        help_text=gettext_lazy("Never allocated: spare capacity for failures."))
    price_per_gpu_hour = forms.DecimalField(
        label=gettext_lazy("price per GPU-hour"), min_value=0, max_value=PRICE_MAX, max_digits=11, decimal_places=4,
        initial=0,
        help_text=gettext_lazy("What one GPU-hour of this pool is charged; later changed in the policy lab."))

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        burst, standby = data.get("burst_reserve_pct"), data.get("standby_pct")
        if burst is not None and standby is not None and burst + standby >= 100:
            raise forms.ValidationError(gettext_lazy("The burst reserve and the cold standby must stay below 100%."))
        return data


@admin.register(GpuPool)
class GpuPoolAdmin(ReasonRequiredAdmin):
    """A pool's reserves and price are governed parameters, never fields of the pool: a new pool's first ones are
    recorded in the one store (governed.services.policy_change_record, exempt from one change a week: a pool that did
    not exist changes no number in force); after that the admin shows those in force this week and changes them
    nowhere: they change through the policy lab, at most one change a week."""

    list_display = (
        "__str__", "cluster", "gpu_model", "gpu_count", "gpus_per_node", "burst_reserve_pct", "standby_pct",
        "price_per_gpu_hour", "queue_wait_target_minutes",
    )
    list_filter = ("cluster", "gpu_model")
    RESERVE_FIELDS = ("burst_reserve_pct", "standby_pct")
    GOVERNED_FIELDS = (*RESERVE_FIELDS, PRICE)

    def get_form(self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any) -> Any:
        if obj is None:
            kwargs["form"] = GpuPoolAddForm
        return super().get_form(request, obj, change=change, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        readonly = tuple(super().get_readonly_fields(request, obj))
        return readonly if obj is None else (*readonly, *self.GOVERNED_FIELDS)

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if not change:
            pool = GpuPool.objects.select_related("cluster").get(pk=obj.pk)
            policy_change_record(
                actor=request.user if request.user.is_authenticated else None,
                changes={f"{POOL_PREFIX}{pool.key}.{name}": form.cleaned_data[name] for name in self.GOVERNED_FIELDS},
                effective_week=format_isoweek(timezone.now()), reason=form.cleaned_data["change_reason"],
                source=ChangeSource.ADMIN, source_ref=f"pool:{pool.pk}",
                exempt_reason=_("A new pool's first reserves and price: no number in force changes."),
            )


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
