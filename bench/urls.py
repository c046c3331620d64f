"""The app's URLs plus one bare Django JSON view, for the windows API benchmark only."""

from django.http import HttpRequest, JsonResponse
from django.urls import include, path

from allocations.models import AllocationWindow, ElasticAction, ElasticActionKind

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
    """The same 500 windows with the same keys and values, the elastic policy's offers included (`lendable_gpus`,
    `lendable_reason`: one query, as allocations.selectors.window_offers reads them), straight from two queries into
    JsonResponse: no DRF, no authentication, no snapshot, no ETag. What any Django JSON endpoint costs at the least."""
    cluster = request.GET.get("cluster", "bench")
    offers: dict[int, tuple[int, str]] = {}
    for window_id, gpus, kind in (
        ElasticAction.objects.filter(
            pool__cluster__slug=cluster, ended_at__isnull=True, window__isnull=False, gpus__gt=0,
            kind__in=[ElasticActionKind.IDLE, ElasticActionKind.NIGHT_OPEN],
        ).order_by("id").values_list("window_id", "gpus", "kind")
    ):
        if window_id not in offers or offers[window_id][0] < gpus:
            offers[window_id] = (gpus, kind)
    columns = list(BARE_FIELDS.values())
    rows = AllocationWindow.objects.filter(cluster__slug=cluster).order_by("id")
    results = []
    for row in rows.values(*columns)[:500]:
        offer = offers.get(row["id"])
        results.append({
            **{key: row[column] for key, column in BARE_FIELDS.items()}, "account": None, "withdrawn": False,
            "lendable_gpus": offer[0] if offer else 0, "lendable_reason": offer[1] if offer else None,
        })
    body = {"count": len(results), "next": None, "previous": None, "results": results}
    # Compact separators, as DRF's JSONRenderer writes: the two bodies differ by a few bytes only.
    return JsonResponse(body, json_dumps_params={"separators": (",", ":")})


urlpatterns = [
    path("bench/bare-windows/", bare_windows),
    path("", include("config.urls")),
]
