"""POST /api/v1/cycles/<week>/publish/: the chair publishes a finalized week (or a correction)."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from allocations import selectors as allocation_selectors
from allocations.explanations import REASON_CODES
from allocations.models import AllocationPlan, PlanExplanation
from committee import selectors, services
from committee.api.permissions import IsChair
from core.http import AuthenticatedRequest
from core.serializers import StrictJSONMixin


class PublishInputSerializer(StrictJSONMixin, serializers.Serializer):
    reason = serializers.CharField(
        required=False, allow_blank=True, max_length=2000, help_text=_("Required for a correction (version 2 on).")
    )


class ReasonSerializer(serializers.Serializer):
    """One of the engine's reasons as stored (allocations.explanations.reasons_as_json)."""

    code = serializers.ChoiceField(choices=REASON_CODES, read_only=True)
    params = serializers.DictField(
        read_only=True,
        help_text=_("The code's parameters, plain JSON values; instants are ISO 8601 UTC strings (docs/engine.md)."),
    )


class PlanExplanationSerializer(serializers.ModelSerializer):
    request_id = serializers.IntegerField(source="request_ref")
    text = serializers.CharField(help_text=_("The reasons in words, as rendered when the plan was published."))
    reasons = ReasonSerializer(
        many=True, read_only=True,
        help_text=_("The engine's reason codes with their parameters, in reading order, for a client to word in "
                    "its own language; empty for a plan published before reasons were stored."),
    )

    class Meta:
        model = PlanExplanation
        fields = ("request_id", "position", "placed", "shortened", "text", "reasons")
        read_only_fields = fields


class PublishedPlanSerializer(serializers.ModelSerializer):
    cursor = serializers.IntegerField(source="change_seq", help_text=_("The windows API's change sequence."))
    supersedes_version = serializers.IntegerField(source="supersedes.version", allow_null=True, default=None)
    window_count = serializers.SerializerMethodField()
    explanations = PlanExplanationSerializer(many=True)

    class Meta:
        model = AllocationPlan
        fields = ("week", "version", "cursor", "supersedes_version", "published_at", "published_by_name",
                  "source_ref", "note", "window_count", "explanations")
        read_only_fields = fields

    def get_window_count(self, plan: AllocationPlan) -> int:
        return allocation_selectors.plan_window_list(plan=plan).count()


class CyclePublishView(APIView):
    """Run the engine on the week's grants and publish the windows as the week's next plan version."""

    permission_classes = [IsAuthenticated, IsChair]

    @extend_schema(
        tags=["cycles"],
        operation_id="cycles_publish",
        request=PublishInputSerializer,
        responses={
            201: PublishedPlanSerializer,
            400: OpenApiResponse(description="A correction without a reason."),
            409: OpenApiResponse(description="The week is not finalized (nor published)."),
        },
    )
    def post(self, request: AuthenticatedRequest, week: str) -> Response:
        data = PublishInputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        cycle = selectors.cycle_get(week=week)
        plan = services.cycle_publish(actor=request.user, cycle=cycle, reason=data.validated_data.get("reason", ""))
        return Response(PublishedPlanSerializer(plan).data, status=status.HTTP_201_CREATED)
