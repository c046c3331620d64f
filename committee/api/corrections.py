"""Corrections and appeals over the API: the same services as the request page (committee/services/corrections.py).

- GET  /api/v1/requests/<pk>/corrections/   a request's corrections (whoever may read the request)
- POST /api/v1/requests/<pk>/corrections/   the chair corrects the decision, with a reason
- GET  /api/v1/requests/<pk>/appeals/       a request's appeals (whoever may read the request)
- POST /api/v1/requests/<pk>/appeals/       a member of the team appeals, within the window
- POST /api/v1/appeals/<pk>/decision/       a committee member outside the team upholds or amends
"""

from __future__ import annotations

from typing import Any

from django.http import Http404
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from committee import limits, selectors, services
from committee.api.permissions import IsCommitteeMember
from committee.models import Appeal, AppealStatus, DecisionCorrection, DecisionOutcome
from core.http import AuthenticatedRequest
from core.serializers import StrictJSONMixin


class CorrectionSerializer(serializers.ModelSerializer):
    previous_outcome = serializers.ChoiceField(choices=DecisionOutcome.choices, read_only=True)
    outcome = serializers.ChoiceField(choices=DecisionOutcome.choices, read_only=True)
    appeal_id = serializers.IntegerField(read_only=True, allow_null=True)
    plan_version = serializers.IntegerField(
        read_only=True, allow_null=True, help_text=_("The plan version the correction published; null before publish.")
    )

    class Meta:
        model = DecisionCorrection
        fields = (
            "id", "request_title", "team_name", "previous_outcome", "previous_granted_gpu_count",
            "previous_rationale", "previous_decided_by_name", "outcome", "granted_gpu_count", "rationale",
            "alternative_description", "alternative_gpu_hours", "exception_reason",
            "reason", "corrected_by_name", "corrected_at", "plan_version", "appeal_id",
        )
        read_only_fields = fields


class AppealSerializer(serializers.ModelSerializer):
    status = serializers.ChoiceField(choices=AppealStatus.choices, read_only=True)
    request_id = serializers.IntegerField(read_only=True)

    class Meta:
        model = Appeal
        fields = (
            "id", "request_id", "request_title", "team_name", "statement", "filed_by_name", "filed_at", "status",
            "decided_by_name", "decided_at", "decision_reason",
        )
        read_only_fields = fields


class GrantChoiceFields(serializers.Serializer):
    """What a correction and an appeal's amendment may grant besides the decision's outcome: the alternative, or an
    unranked request under the chair's stated exception (the decide guard's rules, committee/selectors/deciding.py)."""

    alternative = serializers.IntegerField(
        required=False, allow_null=True, min_value=1,
        help_text=_("Only for a grant of the alternative: the id of one of the request's alternatives."),
    )
    exception = serializers.CharField(
        required=False, allow_blank=True, max_length=limits.REASON_MAX_LENGTH,
        help_text=_("Only to grant a request that is not ranked (too few scores): the chair's stated exception to "
                    "the rubric, archived with the decision."),
    )


class CorrectionInputSerializer(StrictJSONMixin, GrantChoiceFields):
    outcome = serializers.ChoiceField(choices=DecisionOutcome.choices)
    granted_gpu_count = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, help_text=_("Only for a partial grant.")
    )
    rationale = serializers.CharField(max_length=limits.RATIONALE_MAX_LENGTH)
    reason = serializers.CharField(
        max_length=limits.REASON_MAX_LENGTH, help_text=_("Why the decision is corrected: the archive keeps it.")
    )


class AppealInputSerializer(StrictJSONMixin, serializers.Serializer):
    statement = serializers.CharField(max_length=limits.STATEMENT_MAX_LENGTH)


class AppealDecisionInputSerializer(StrictJSONMixin, GrantChoiceFields):
    decision = serializers.ChoiceField(choices=[services.APPEAL_UPHOLD, services.APPEAL_AMEND])
    reason = serializers.CharField(max_length=limits.REASON_MAX_LENGTH)
    outcome = serializers.ChoiceField(
        choices=DecisionOutcome.choices, required=False, help_text=_("The new decision, when amending.")
    )
    granted_gpu_count = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, help_text=_("When amending to a partial grant.")
    )
    rationale = serializers.CharField(
        required=False, max_length=limits.RATIONALE_MAX_LENGTH, help_text=_("The new rationale, when amending.")
    )


@extend_schema(tags=["requests"])
class RequestCorrectionsView(APIView):
    """A request's corrections, oldest first (whoever may read the request); the chair corrects its decision."""

    def get_permissions(self) -> list[Any]:
        if self.request.method == "POST":  # who may correct this request: the decide guard, in the service
            return [IsAuthenticated(), IsCommitteeMember()]
        return [IsAuthenticated()]

    @extend_schema(responses=CorrectionSerializer(many=True), operation_id="requests_corrections_list")
    def get(self, request: Request, pk: int) -> Response:
        gpu_request = selectors.request_get_for_viewer(viewer=request.user, pk=pk)
        if not selectors.decision_visible_to(viewer=request.user, gpu_request=gpu_request):
            raise Http404("No decision yet")
        rows = DecisionCorrection.objects.filter(decision__request=gpu_request).order_by("corrected_at", "id")
        return Response(CorrectionSerializer(rows, many=True).data)

    @extend_schema(
        request=CorrectionInputSerializer,
        responses={
            201: CorrectionSerializer,
            400: OpenApiResponse(description="No reason or rationale, a GPU count the decision does not allow, or "
                                             "a correction that changes nothing."),
            403: OpenApiResponse(description="Not the chair, or the chair of the request's team or recused from it."),
            409: OpenApiResponse(description="The week is not finalized yet."),
        },
        operation_id="requests_corrections_create",
    )
    def post(self, request: AuthenticatedRequest, pk: int) -> Response:
        """Correct the decision of a finalized or published week; after publish, the next plan version."""
        gpu_request = selectors.request_get_for_viewer(viewer=request.user, pk=pk)
        body = CorrectionInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        correction = services.decision_correct(actor=request.user, gpu_request=gpu_request, **body.validated_data)
        return Response(CorrectionSerializer(correction).data, status=status.HTTP_201_CREATED)


@extend_schema(tags=["requests"])
class RequestAppealsView(APIView):
    """A request's appeals, oldest first (whoever may read the request); a member of the team files one."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses=AppealSerializer(many=True), operation_id="requests_appeals_list")
    def get(self, request: Request, pk: int) -> Response:
        gpu_request = selectors.request_get_for_viewer(viewer=request.user, pk=pk)
        return Response(AppealSerializer(gpu_request.appeals.order_by("filed_at", "id"), many=True).data)

    @extend_schema(
        request=AppealInputSerializer,
        responses={
            201: AppealSerializer,
            400: OpenApiResponse(description="No statement."),
            403: OpenApiResponse(description="Not a member of the request's team."),
            409: OpenApiResponse(description="The week is not published, the appeal window closed, or an appeal "
                                             "is already open."),
        },
        operation_id="requests_appeals_create",
    )
    def post(self, request: AuthenticatedRequest, pk: int) -> Response:
        """Appeal the request's outcome with a statement, within DOCKET_APPEAL_WINDOW_HOURS of publication."""
        gpu_request = selectors.request_get_for_viewer(viewer=request.user, pk=pk)
        body = AppealInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        appeal = services.appeal_file(actor=request.user, gpu_request=gpu_request, **body.validated_data)
        return Response(AppealSerializer(appeal).data, status=status.HTTP_201_CREATED)


@extend_schema(tags=["requests"])
class AppealDecisionView(APIView):
    """A committee member outside the team answers an open appeal: uphold, or amend (a correction)."""

    permission_classes = [IsAuthenticated, IsCommitteeMember]

    @extend_schema(
        request=AppealDecisionInputSerializer,
        responses={
            200: AppealSerializer,
            400: OpenApiResponse(description="No reason, or an amendment the decision does not allow."),
            403: OpenApiResponse(description="A member of the appealing team, recused from the request, or (to "
                                             "amend) not the member who records decisions."),
            409: OpenApiResponse(description="The appeal was already answered."),
        },
        operation_id="appeals_decide",
    )
    def post(self, request: AuthenticatedRequest, pk: int) -> Response:
        data = request.data  # a body the parser refuses (malformed, nested too deep) is a 400 whatever the id
        try:
            appeal = Appeal.objects.select_related("request__team", "cycle").get(pk=pk)
        except Appeal.DoesNotExist:
            raise exceptions.NotFound() from None
        selectors.request_get_for_viewer(viewer=request.user, pk=appeal.request_id)
        body = AppealDecisionInputSerializer(data=data)
        body.is_valid(raise_exception=True)
        decided = services.appeal_decide(actor=request.user, appeal=appeal, **body.validated_data)
        return Response(AppealSerializer(decided).data)
