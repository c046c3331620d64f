"""The forward calendar over the API (docs/multi-week-runs.md, docs/api.md):

- GET /api/v1/calendar/   every pool over the weeks ahead a run filed now may span: committed, reserved, free
"""

from __future__ import annotations

from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from committee import selectors
from core.datetimes import UTCDateTimeField


class CalendarWeekSerializer(serializers.Serializer):
    week = serializers.CharField(read_only=True, help_text=_("ISO week, YYYY-Www."))
    start = UTCDateTimeField(read_only=True, help_text=_("Monday 00:00 in the committee's zone."))
    end = UTCDateTimeField(read_only=True, help_text=_("The next Monday 00:00 in the committee's zone."))
    hours = serializers.IntegerField(read_only=True, help_text=_("167, 168 or 169 (summer time)."))
    capacity_gpu_hours = serializers.IntegerField(read_only=True, help_text=_("All the pool's GPUs over the week."))
    reserved_gpu_hours = serializers.IntegerField(
        read_only=True, help_text=_("Held back by the burst reserve and the cold standby in force that week."))
    committed_gpu_hours = serializers.IntegerField(
        read_only=True, help_text=_("Held by windows of published plans and by runs' commitments (committed or "
                                    "confirmed), each counted once."))
    free_gpu_hours = serializers.IntegerField(read_only=True, help_text=_("Capacity less reserves and commitments."))
    committed_pct = serializers.IntegerField(
        read_only=True, help_text=_("Committed as a share of capacity less reserves, rounded (over 100 when windows "
                                    "use the burst reserve)."))


class PoolCalendarSerializer(serializers.Serializer):
    pool = serializers.CharField(source="pool.key", read_only=True, help_text=_("cluster/pool"))
    gpu_model = serializers.CharField(source="pool.gpu_model", read_only=True)
    gpu_count = serializers.IntegerField(source="pool.gpu_count", read_only=True)
    weeks = CalendarWeekSerializer(many=True, read_only=True)


@extend_schema(tags=["pools"])
class ForwardCalendarView(APIView):
    """Every pool over the weeks after the current one that a run filed now may span (the policy's
    grants.max_weeks): GPU-hours committed, reserved and free, week by week. For anyone signed in (session or
    personal token)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(operation_id="calendar_list", responses=PoolCalendarSerializer(many=True))
    def get(self, request: Request) -> Response:
        return Response(PoolCalendarSerializer(selectors.forward_calendar(now=timezone.now()), many=True).data)
