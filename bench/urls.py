"""The app's URLs plus one bare Django JSON view, for the windows API benchmark only."""

from django.db.models import Subquery
from django.http import HttpRequest, JsonResponse
from django.urls import include, path

from allocations.models import AllocationPlan, AllocationWindow, Commitment, ElasticAction, ElasticActionKind

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
    "department": "team__department__slug",
    "tier": "tier",
    "request_id": "request_ref",
    "standby_gpus": "standby_gpu_count",
}
COMMITMENT_FIELDS = {
    "id": "id",
    "week": "week",
    "cluster": "pool__cluster__slug",
    "pool": "pool__slug",
    "gpu_count": "gpu_count",
    "start": "start",
    "end": "end",
    "team": "team__slug",
    "department": "team__department__slug",
    "state": "state",
    "request_id": "request_ref",
    "week_of_run": "week_number",
    "run_weeks": "run_weeks",
}


def bare_windows(request: HttpRequest) -> JsonResponse:
    """The API's answer for one week with the same keys and values: the envelope (count, links, the cursor, the
    week's plan version, the commitments beside the windows) and each window with the elastic policy's offers
    (`lendable_gpus`, `lendable_reason`: one query, as allocations.selectors.window_offers reads them). Four queries
    straight into JsonResponse: no DRF, no authentication, no snapshot as of a cursor, no ETag, and `account` always
    null (the bench's teams have none). What any Django JSON endpoint answering the same costs at the least."""
    cluster = request.GET.get("cluster", "bench")
    week = request.GET.get("week", "2030-W10")
    offers: dict[int, tuple[int, str]] = {}
    for window_id, gpus, kind in (
        ElasticAction.objects.filter(
            pool__cluster__slug=cluster, ended_at__isnull=True, window__isnull=False, gpus__gt=0,
            kind__in=[ElasticActionKind.IDLE, ElasticActionKind.NIGHT_OPEN],
        ).order_by("id").values_list("window_id", "gpus", "kind")
    ):
        if window_id not in offers or offers[window_id][0] < gpus:
            offers[window_id] = (gpus, kind)
    latest = AllocationPlan.objects.order_by("-change_seq").values("change_seq")[:1]
    plan = (AllocationPlan.objects.filter(week=week).annotate(top=Subquery(latest)).order_by("-change_seq")
            .values_list("version", "top").first())
    commitments = [
        {key: row[column] for key, column in COMMITMENT_FIELDS.items()} | {"account": None}
        for row in Commitment.objects.filter(pool__cluster__slug=cluster, week=week).order_by("id")
        .values(*COMMITMENT_FIELDS.values())
    ]
    columns = list(BARE_FIELDS.values())
    rows = AllocationWindow.objects.filter(cluster__slug=cluster, week=week).order_by("id")
    results = []
    for row in rows.values(*columns)[:500]:
        offer = offers.get(row["id"])
        results.append({
            **{key: row[column] for key, column in BARE_FIELDS.items()}, "account": None, "withdrawn": False,
            "lendable_gpus": offer[0] if offer else 0, "lendable_reason": offer[1] if offer else None,
        })
    body = {"count": len(results), "next": None, "previous": None, "cursor": plan[1] if plan else 0,
            "plan_version": plan[0] if plan else None, "results": results, "commitments": commitments}
    # Compact separators, as DRF's JSONRenderer writes: the two bodies differ by a few bytes only.
    return JsonResponse(body, json_dumps_params={"separators": (",", ":")})


urlpatterns = [
    path("bench/bare-windows/", bare_windows),
    path("", include("config.urls")),
]
