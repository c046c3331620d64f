from django.contrib import admin

from allocations.models import Cluster, GpuPool, Team


@admin.register(Team)
class TeamAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "fair_share_weight")
    prepopulated_fields = {"slug": ("name",)}
    search_fields = ("name", "slug")


class GpuPoolInline(admin.TabularInline):
    model = GpuPool
    extra = 0


@admin.register(Cluster)
class ClusterAdmin(admin.ModelAdmin):
    list_display = ("name", "slug", "scheduler_kind")
    prepopulated_fields = {"slug": ("name",)}
    inlines = [GpuPoolInline]


@admin.register(GpuPool)
class GpuPoolAdmin(admin.ModelAdmin):
    list_display = ("__str__", "cluster", "gpu_model", "gpu_count", "gpus_per_node", "burst_reserve_pct", "standby_pct")
    list_filter = ("cluster", "gpu_model")
