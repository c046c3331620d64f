"""The scheduler API. Each view parses its input, calls one selector or service, and answers."""

from __future__ import annotations

import hashlib
import json
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.utils import timezone
from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, status
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from allocations import selectors, services
from allocations.api.authentication import IsSchedulerClient, SchedulerTokenAuthentication
from allocations.api.filtersets import WindowFilterSet
from allocations.api.serializers import (
    WINDOW_COLUMNS,
    AgentActionInputSerializer,
    AgentActionSerializer,
    ClusterReferenceSerializer,
    CommitmentSerializer,
    ElasticPolicySerializer,
    PoolSerializer,
    SyncStatusReportSerializer,
    SyncStatusResultSerializer,
    UsageInputSerializer,
    UsageRecordSerializer,
    WindowListSerializer,
    WindowPageSerializer,
    WindowSerializer,
)
from allocations.elastic import selectors as elastic_selectors
from allocations.elastic import services as elastic_services
from allocations.models import AllocationWindow, Cluster, SchedulerClient
from core.compression import etag_match

ETAG_FORMAT = "windows-v4"  # change when the body's shape changes, so old ETags stop matching


class SchedulerAPIView(APIView):
    """Only scheduler tokens authenticate here: sessions and personal tokens get 401."""

    authentication_classes = [SchedulerTokenAuthentication]
    permission_classes = [IsSchedulerClient]
    renderer_classes = [JSONRenderer]

    @staticmethod
    def client(request: Request) -> SchedulerClient:
        client = request.auth
        assert isinstance(client, SchedulerClient)  # IsSchedulerClient ran
        return client

    def cluster_for(self, request: Request, slug: str) -> Cluster:
        """The token's cluster if it is the one asked for; 404 otherwise (other clusters do not exist for it)."""
        cluster = self.client(request).cluster
        if slug != cluster.slug:
            raise exceptions.NotFound(_("No cluster %s for this token.") % slug)
        return cluster


# What each parameter takes, as the filterset and the page serializer check it (min, max, pattern).
SLUG: dict[str, Any] = {"type": "string", "pattern": r"^[-a-zA-Z0-9_]+$"}


def _datetime_filter_parameter(name: str) -> OpenApiParameter:
    """A date-time filter, described as its field describes itself (core.datetimes: the limits included)."""
    return OpenApiParameter(
        name, OpenApiTypes.DATETIME, description=WindowFilterSet.base_filters[name].extra["help_text"]
    )


WINDOW_PARAMETERS = [
    OpenApiParameter("cluster", SLUG, required=True, description="Cluster slug; must be the token's cluster."),
    OpenApiParameter(
        "week",
        {"type": "string", "pattern": r"^\d{4}-W\d{2}$"},
        description="ISO week, e.g. 2026-W49. Without it: the windows not yet ended.",
    ),
    OpenApiParameter("pool", SLUG, description="Pool slug."),
    OpenApiParameter("team", SLUG, description="Team slug."),
    OpenApiParameter("department", SLUG, description="Department slug: the windows of its teams. Not with `since`."),
    _datetime_filter_parameter("active_at"),
    OpenApiParameter(
        "since", {"type": "integer", "minimum": 0},
        description="Only what changed after this cursor, withdrawn windows included.",
    ),
    OpenApiParameter(
        "as_of", {"type": "integer", "minimum": 0}, description="Read as of this change sequence (page links carry it)."
    ),
    _datetime_filter_parameter("ends_after"),
    OpenApiParameter(
        "after", {"type": "integer", "minimum": 0}, description="Page: windows with a larger id. Not with `before`."
    ),
    OpenApiParameter(
        "before", {"type": "integer", "minimum": 1}, description="Page: windows with a smaller id. Not with `after`."
    ),
    OpenApiParameter("page_size", {"type": "integer", "minimum": 1, "maximum": 1000}, description="Windows per page."),
    OpenApiParameter("If-None-Match", str, OpenApiParameter.HEADER, description="An ETag from an earlier answer."),
]


class WindowListView(SchedulerAPIView):
    """The cluster's published windows: a strong ETag, a change cursor, keyset pages."""

    @extend_schema(
        operation_id="windows_list",
        parameters=WINDOW_PARAMETERS,
        responses={200: WindowListSerializer, 304: OpenApiResponse(description="Unchanged since that ETag.")},
    )
    def get(self, request: Request) -> Response:
        filters = WindowFilterSet(request.query_params, queryset=AllocationWindow.objects.none())
        page = WindowPageSerializer(data=request.query_params)
        filters_valid, page_valid = filters.is_valid(), page.is_valid()
        if not (filters_valid and page_valid):
            raise exceptions.ValidationError({**filters.errors, **page.errors})
        params = filters.form.cleaned_data
        if params["since"] is not None and params["department"]:
            # A team's department is read live and a move is no change of the cursor: a `since` list narrowed by
            # department could never carry it, and its poller would keep windows the full list no longer has.
            raise exceptions.ValidationError({"department": [_(
                "A list since a cursor cannot be narrowed by department: the org chart can move a team between two "
                "polls without a change of the cursor. Poll the full list with its ETag, or narrow by team."
            )]})
        cluster = self.cluster_for(request, params["cluster"])
        try:
            snapshot = selectors.window_snapshot(
                cluster=cluster,
                week=params["week"] or None,
                since=_int_or_none(params["since"]),
                as_of=_int_or_none(params["as_of"]),
                ends_after=params["ends_after"],
            )
        except selectors.SnapshotUnavailable as exc:
            raise exceptions.ValidationError({"as_of": [str(exc)]}) from None
        reference = selectors.scheduler_reference(cluster=cluster)
        windows = filters.filter_queryset(snapshot.windows)
        size = page.validated_data.get("page_size") or _default_page_size()
        after, before = page.validated_data.get("after"), page.validated_data.get("before")
        conditional = request.headers.get("If-None-Match")
        # With a week or an explicit `ends_after`, the cursor and the query fix the windows in scope (windows never
        # change; a withdrawal is a change of its own), so their count adds nothing to the ETag and a 304 does not
        # count them. Only "not ended yet", the clock's scope, shrinks between two changes: there the count does.
        scope_moves = not params["week"] and params["ends_after"] is None
        rows = None
        if not conditional and after is None and before is None:
            # No ETag to compare: the first page is read now, and when it holds every window its length is the
            # count (a poller whose list fits one page makes one query less).
            rows = selectors.window_page(windows=windows.values_list(*WINDOW_COLUMNS), size=size)
        count = None
        if rows is not None and not rows.more_after:
            count = len(rows.rows)
        elif scope_moves or not conditional:
            count = windows.count()
        commitments = selectors.commitment_rows_for_cluster(
            cluster_id=cluster.pk, week=params["week"] or None, ends_after=params["ends_after"] or timezone.now(),
            pool=params["pool"] or None, team=params["team"] or None, department=params["department"] or None,
            active_at=params["active_at"],
        )

        # Windows never change, and without a publish the set in scope can only shrink (windows
        # end), so the cursor, the versions, the count and what is shown of pools, teams and
        # accounts determine the body byte for byte: a strong ETag without building it.
        etag = _etag(request, cluster, snapshot, count if scope_moves else None,
                     reference.fingerprint() + selectors.commitment_fingerprint(commitments))
        headers = {"ETag": etag, "Cache-Control": "private, no-cache", "Vary": "Authorization"}
        if matched := etag_match(conditional, etag):
            return Response(status=status.HTTP_304_NOT_MODIFIED, headers={**headers, "ETag": matched})

        if rows is None:
            rows = selectors.window_page(windows=windows.values_list(*WINDOW_COLUMNS), size=size, after=after,
                                         before=before)
        if count is None:  # an ETag that did not match, on a fixed scope
            whole = after is None and before is None and not rows.more_after
            count = len(rows.rows) if whole else windows.count()
        context = {"cluster": cluster.slug, "versions": snapshot.versions, "reference": reference}
        body = {
            "count": count,
            "next": _page_link(request, snapshot.cursor, after=rows.rows[-1][0]) if rows.more_after else None,
            "previous": _page_link(request, snapshot.cursor, before=rows.rows[0][0]) if rows.more_before else None,
            "cursor": snapshot.cursor,
            "plan_version": snapshot.plan_version,
            "results": WindowSerializer(rows.rows, many=True, context=context).data,
            "commitments": CommitmentSerializer(commitments, many=True, context=context).data,
        }
        return Response(body, headers=headers)


class WindowDetailView(SchedulerAPIView):
    """One window of the token's cluster, live or withdrawn."""

    @extend_schema(operation_id="windows_retrieve", responses={200: WindowSerializer})
    def get(self, request: Request, pk: int) -> Response:
        cluster = self.client(request).cluster
        found = selectors.window_detail(cluster=cluster, window_id=pk)
        if found is None:
            raise exceptions.NotFound(_("No window %s on this token's cluster.") % pk)
        windows, versions = found
        row = windows.values_list(*WINDOW_COLUMNS).get()
        reference = selectors.scheduler_reference(cluster=cluster)
        context = {"cluster": cluster.slug, "versions": versions, "reference": reference}
        return Response(WindowSerializer(row, context=context).data)


class SyncStatusView(SchedulerAPIView):
    """How the scheduler holds each window after a sync; the committee sees the latest beside the window."""

    @extend_schema(
        operation_id="windows_sync_status",
        request=SyncStatusReportSerializer,
        responses={200: SyncStatusResultSerializer},
    )
    def post(self, request: Request) -> Response:
        report = SyncStatusReportSerializer(data=request.data)
        report.is_valid(raise_exception=True)
        recorded = services.sync_status_record(client=self.client(request), statuses=report.validated_data["statuses"])
        return Response({"recorded": recorded})


class ClusterReferenceView(SchedulerAPIView):
    """The token's cluster as a usage collector names it: pools (by scheduler label) and team accounts, with the
    department tree the syncs give the scheduler (weights, departments)."""

    @extend_schema(operation_id="clusters_retrieve", responses={200: ClusterReferenceSerializer})
    def get(self, request: Request, slug: str) -> Response:
        cluster = self.cluster_for(request, slug)
        reference = selectors.scheduler_reference(cluster=cluster)
        body = {
            "cluster": cluster.slug,
            "pools": [
                {"slug": pool_slug, "gpu_model": model, "scheduler_label": label, "gpus_per_node": per_node}
                for pool_slug, model, label, per_node in sorted(reference.pools.values())
            ],
            "accounts": sorted(
                (
                    {"team": team, "account": account, "fair_share_weight": reference.places[pk][0],
                     "department": reference.places[pk][1], "department_weight": reference.places[pk][2]}
                    for pk, (team, account) in reference.teams.items()
                    if account is not None
                ),
                key=lambda entry: (entry["team"], entry["account"]),
            ),
            "departments": selectors.scheduler_departments(reference),
        }
        return Response(ClusterReferenceSerializer(body).data)


class UsageCreateView(SchedulerAPIView):
    """Usage a scheduler measured; idempotent on (pool, idempotency_key)."""

    @extend_schema(
        operation_id="usage_create",
        request=UsageInputSerializer,
        responses={
            201: UsageRecordSerializer,
            400: OpenApiResponse(description="Field errors; nothing stored."),
            409: OpenApiResponse(description="The idempotency key was used for different data; nothing stored."),
        },
    )
    def post(self, request: Request) -> Response:
        data = UsageInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        try:
            result = services.measured_usage_record(
                client=self.client(request),
                team_slug=values["team"],
                pool_slug=values["pool"],
                window_id=values["window"],
                period_start=values["period_start"],
                period_end=values["period_end"],
                gpu_hours_used=values["gpu_hours_used"],
                mean_utilization_pct=values["mean_utilization_pct"],
                mean_queue_wait_minutes=values["mean_queue_wait_minutes"],
                idempotency_key=values["idempotency_key"],
            )
        except services.IdempotencyConflict as exc:
            return Response(
                {
                    "idempotency_key": [_("This key was already used for different data (record %s).")
                                        % exc.record.pk]
                },
                status=status.HTTP_409_CONFLICT,
            )
        headers = {"Idempotent-Replayed": "true"} if result.replayed else {}
        return Response(UsageRecordSerializer(result.record).data, status=status.HTTP_201_CREATED, headers=headers)


@extend_schema(tags=["elastic"])
class ElasticPolicyView(SchedulerAPIView):
    """The elastic policy in force for the token's cluster: what its agent applies every minute."""

    @extend_schema(
        operation_id="elastic_policy_retrieve",
        parameters=[OpenApiParameter("If-None-Match", str, OpenApiParameter.HEADER,
                                     description="An ETag from an earlier answer.")],
        responses={200: ElasticPolicySerializer, 304: OpenApiResponse(description="Unchanged since that ETag.")},
    )
    def get(self, request: Request) -> Response:
        body = ElasticPolicySerializer(
            elastic_selectors.published_policy(cluster=self.client(request).cluster, now=timezone.now())).data
        digest = hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()[:40]
        etag = f'"elastic-{digest}"'
        headers = {"ETag": etag, "Cache-Control": "private, no-cache", "Vary": "Authorization"}
        if matched := etag_match(request.headers.get("If-None-Match"), etag):
            return Response(status=status.HTTP_304_NOT_MODIFIED, headers={**headers, "ETag": matched})
        return Response(body, headers=headers)


@extend_schema(tags=["elastic"])
class AgentActionCreateView(SchedulerAPIView):
    """An action the elastic agent took; idempotent on (cluster, idempotency_key)."""

    @extend_schema(
        operation_id="elastic_actions_create",
        request=AgentActionInputSerializer,
        responses={
            201: AgentActionSerializer,
            400: OpenApiResponse(description="Field errors; nothing stored."),
            409: OpenApiResponse(description="The idempotency key was used for different data; nothing stored."),
        },
    )
    def post(self, request: Request) -> Response:
        data = AgentActionInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        try:
            result = elastic_services.agent_action_record(
                client=self.client(request), idempotency_key=values["idempotency_key"], kind=values["kind"],
                pool_slug=values["pool"], window_id=values["window"], team_slug=values["team"], gpus=values["gpus"],
                acted_at=values["acted_at"], utilization_pct=values["utilization_pct"],
                queue_wait_minutes=values["queue_wait_minutes"], span_minutes=values["span_minutes"],
                measured_by=values["measured_by"], policy_version=values["policy_version"],
                applied=values["applied"],
            )
        except elastic_services.AgentActionConflict as exc:
            return Response(
                {"idempotency_key": [_("This key was already used for different data (action %s).")
                                     % exc.action.pk]},
                status=status.HTTP_409_CONFLICT,
            )
        headers = {"Idempotent-Replayed": "true"} if result.replayed else {}
        return Response(AgentActionSerializer(result.action).data, status=status.HTTP_201_CREATED, headers=headers)


# --- helpers ----------------------------------------------------------------------------------


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def _default_page_size() -> int:
    return int(settings.REST_FRAMEWORK.get("PAGE_SIZE") or 100)


def _etag(request: Request, cluster: Cluster, snapshot: selectors.WindowSnapshot, count: int | None,
          fingerprint: str) -> str:
    params = sorted((key, value) for key, values in request.query_params.lists() for value in values)
    key = repr((
        ETAG_FORMAT,
        request.get_host(),
        request.path,
        params,
        cluster.pk,
        cluster.slug,
        snapshot.cursor,
        sorted(snapshot.versions.items()),
        snapshot.plan_version,
        count,
        fingerprint,
    ))
    return '"' + hashlib.sha256(key.encode()).hexdigest()[:40] + '"'


def _page_link(request: Request, cursor: int, **position: int) -> str:
    params = [(k, v) for k, values in request.query_params.lists() for v in values if k not in ("after", "before",
                                                                                                  "as_of")]
    params.append(("as_of", str(cursor)))
    params.extend((k, str(v)) for k, v in position.items())
    return request.build_absolute_uri(request.path + "?" + urlencode(params))


@extend_schema(tags=["pools"])
class PoolListView(APIView):
    """Every GPU pool with its GPUs and reserves, for a person (session or personal token) filing requests."""

    renderer_classes = [JSONRenderer]

    @extend_schema(operation_id="pools_list", responses=PoolSerializer(many=True))
    def get(self, request: Request) -> Response:
        rows = [
            {
                "id": pool.pk,
                "key": pool.key,
                "cluster": pool.cluster.slug,
                "slug": pool.slug,
                "gpu_model": pool.gpu_model,
                "gpu_count": pool.gpu_count,
                "gpus_per_node": pool.gpus_per_node,
                "burst_reserve_pct": pool.burst_reserve_pct,
                "standby_pct": pool.standby_pct,
                "fast_lane_pct": pool.fast_lane_pct,
                "burst_reserve_gpus": burst,
                "standby_gpus": standby,
                "fast_lane_gpus": fast,
                "standard_gpus": pool.gpu_count - burst - standby - fast,
                "standard_gpu_hours_per_week": capacity.standard_gpu_hours,
                "burst_gpu_hours_per_week": capacity.burst_gpu_hours,
            }
            for pool, capacity, (burst, standby, fast) in selectors.pool_list_with_capacity(hours=168)
        ]
        return Response(PoolSerializer(rows, many=True).data)
