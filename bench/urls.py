"""The app's URLs plus one bare Django JSON view, for the windows API benchmark only."""

from django.http import HttpRequest, JsonResponse
from django.urls import include, path

from allocations.models import AllocationWindow

BARE_FIELDS = {
    "id": "id",
    "plan_version": "plan__version",
    "cluster": "cluster__slug",
    "pool": "pool__slug",
    "gpu_model": "pool__gpu_model",
    "scheduler_label": "pool__scheduler_label",
    "gpu_count": "gpu_count",
    "gpus_per_node": "pool__gpus_per_node",
    "start": "start",
    "end": "end",
    "team": "team__slug",
    "tier": "tier",
    "request_id": "request_ref",
}


def bare_windows(request: HttpRequest) -> JsonResponse:
    """The same 500 windows with the same keys, straight from one query into JsonResponse: no DRF,
    no authentication, no snapshot, no ETag. What any Django JSON endpoint costs at the least."""
    columns = list(BARE_FIELDS.values())
    rows = AllocationWindow.objects.filter(cluster__slug=request.GET.get("cluster", "bench")).order_by("id")
    results = [
        {**{key: row[column] for key, column in BARE_FIELDS.items()}, "account": None, "withdrawn": False}
        for row in rows.values(*columns)[:500]
    ]
    body = {"count": len(results), "next": None, "previous": None, "results": results}
    # Compact separators, as DRF's JSONRenderer writes: the two bodies differ by a few bytes only.
    return JsonResponse(body, json_dumps_params={"separators": (",", ":")})


urlpatterns = [
    path("bench/bare-windows/", bare_windows),
    path("", include("config.urls")),
]
