"""The fast lane over the API: the same service as the page (committee/services/fastlane.py, docs/fast-lane.md).

- POST /api/v1/teams/<team>/fast-lane/   a member of the team files a small request of the running week; it is
                                         granted and placed at once, or told which check refused it and sent to the
                                         next weekly review as a normal request
"""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from allocations.models import GpuPool, Team
from committee import limits
from committee.models import FastLaneCheck, FastLaneRequest, FastLaneStatus
from committee.services.fastlane import fast_lane_request_file
from core.datetimes import UTCDateTimeField
from core.http import AuthenticatedRequest
from core.serializers import StrictJSONMixin


class FastLaneInputSerializer(StrictJSONMixin, serializers.Serializer):
    pool = serializers.CharField(help_text=_("cluster/pool, e.g. atlas/a100."))
    title = serializers.CharField(max_length=200, help_text=_("What needs the GPUs."))
    gpu_count = serializers.IntegerField(min_value=1, help_text=_("GPUs, all of them for the whole duration."))
    duration_hours = serializers.IntegerField(
        min_value=1, help_text=_("Hours from the start; it must end by the end of the running week."))
    earliest_start = UTCDateTimeField(required=False, allow_null=True,
                                      help_text=_("Not before this instant; omitted or null: from now."))
    justification = serializers.CharField(required=False, allow_blank=True,
                                          max_length=limits.JUSTIFICATION_MAX_LENGTH)

    def validate_pool(self, value: str) -> GpuPool:
        cluster, _slash, slug = value.partition("/")
        pool = GpuPool.objects.select_related("cluster").filter(cluster__slug=cluster, slug=slug).first()
        if pool is None:
            raise serializers.ValidationError(str(_("There is no pool “%(pool)s”.") % {"pool": value}))
        return pool


class FastLaneSerializer(serializers.Serializer):
    request = serializers.IntegerField(source="request_id", read_only=True, help_text=_("The request's id."))
    status = serializers.ChoiceField(choices=FastLaneStatus.choices, read_only=True)
    failed_check = serializers.ChoiceField(
        choices=[("", ""), *FastLaneCheck.choices], read_only=True,
        help_text=_("The first check that failed, in the order they run; empty when granted."))
    reason = serializers.SerializerMethodField(help_text=_("Why it was refused, in the reader's language."))
    cycle = serializers.CharField(source="request.cycle.week", read_only=True,
                                  help_text=_("The week the request is now in: the running week when granted, the "
                                              "next review's when refused."))
    plan_version = serializers.IntegerField(source="plan.version", read_only=True, allow_null=True,
                                            help_text=_("The plan version that placed it; null when refused."))

    def get_reason(self, fast: FastLaneRequest) -> str:
        return fast.reason_display


@extend_schema(tags=["requests"])
class TeamFastLaneView(APIView):
    """A member of the team files a fast-lane request of the running week: granted on submission, or refused with
    the check that failed and moved to the next weekly review."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        request=FastLaneInputSerializer,
        responses={
            201: FastLaneSerializer,
            400: OpenApiResponse(description="No title, GPUs outside 1..the pool's, an unknown pool, or a duration "
                                             "that runs past the week's end. Nothing is filed."),
            403: OpenApiResponse(description="Not a member of the team."),
            404: OpenApiResponse(description="No such team."),
            409: OpenApiResponse(description="No week is running."),
        },
        operation_id="teams_fast_lane_create",
    )
    def post(self, request: AuthenticatedRequest, team: str) -> Response:
        """File and decide at once: 201 with `status` granted (placed, `plan_version`) or refused (`failed_check`,
        `reason`)."""
        team_obj = get_object_or_404(Team, slug=team)
        body = FastLaneInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data: dict[str, Any] = dict(body.validated_data)
        fast = fast_lane_request_file(actor=request.user, team=team_obj, **data)
        return Response(FastLaneSerializer(fast).data, status=status.HTTP_201_CREATED)
