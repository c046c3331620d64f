"""A grant's realized outcome over the API: the same service as the request's outcome page (docs/outcomes.md).

- GET  /api/v1/requests/<pk>/outcome/   what was asked (the forecast, when the last window ended, the due day) and
                                        what the team reported
- POST /api/v1/requests/<pk>/outcome/   a member of the request's team reports it, or corrects it
"""

from __future__ import annotations

from django.http import Http404
from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from committee import limits, selectors, services
from committee.models import RealizedOutcome
from committee.selectors.realized import OutcomeLine, outcome_lines
from core.http import AuthenticatedRequest
from core.serializers import StrictJSONMixin


@extend_schema_field(OpenApiTypes.NUMBER)
class RawValueField(serializers.Field):
    """A JSON number or a text, handed to the service as it came: the service reads it and says what is wrong with
    it, in the words the page's form shows."""

    default_error_messages = {"invalid": _("Give the realized value as a number or a text.")}

    def to_internal_value(self, data: object) -> object:
        if isinstance(data, bool) or not isinstance(data, int | float | str) or len(str(data)) > 40:
            self.fail("invalid")
        return data

    def to_representation(self, value: object) -> object:
        return value


class OutcomeInputSerializer(StrictJSONMixin, serializers.Serializer):
    value = RawValueField(help_text=_("The realized value in the forecast's unit: a number from 0, at most "
                                              "two decimals."))
    note = serializers.CharField(allow_blank=True, max_length=limits.OUTCOME_NOTE_MAX_LENGTH,
                                 help_text=_("How it was measured, or why it differs from the forecast."))


class OutcomeSerializer(serializers.Serializer):
    request_id = serializers.IntegerField(source="outcome.request_id", read_only=True)
    forecast_value = serializers.DecimalField(max_digits=14, decimal_places=2, read_only=True)
    unit = serializers.CharField(read_only=True)
    last_window_end = serializers.DateTimeField(source="outcome.last_window_end", read_only=True)
    due_at = serializers.DateTimeField(source="outcome.due_at", read_only=True)
    overdue = serializers.BooleanField(read_only=True)
    value = serializers.DecimalField(source="outcome.value", max_digits=14, decimal_places=2, read_only=True,
                                     allow_null=True)
    note = serializers.CharField(source="outcome.note", read_only=True)
    reported_by = serializers.CharField(source="outcome.reported_by_name", read_only=True)
    reported_at = serializers.DateTimeField(source="outcome.reported_at", read_only=True, allow_null=True)
    ratio = serializers.DecimalField(max_digits=12, decimal_places=4, read_only=True, allow_null=True,
                                     help_text=_("Realized ÷ forecast; null until reported or for a forecast of 0."))
    a100_gpu_hours = serializers.DecimalField(max_digits=14, decimal_places=2, read_only=True,
                                              help_text=_("The grant's GPU-hours in the common unit."))
    value_per_gpu_hour = serializers.DecimalField(max_digits=16, decimal_places=2, read_only=True, allow_null=True)


def _line(outcome: RealizedOutcome) -> OutcomeLine:
    return outcome_lines(outcomes=[outcome], now=timezone.now())[0]


@extend_schema(tags=["requests"])
class RequestOutcomeView(APIView):
    """A granted request's realized outcome against its impact forecast, asked for when its last window ended."""

    permission_classes = [IsAuthenticated]

    def _outcome(self, request: AuthenticatedRequest, pk: int) -> RealizedOutcome:
        gpu_request = selectors.request_get_for_viewer(viewer=request.user, pk=pk)
        outcome = (RealizedOutcome.objects.select_related("request__impact_forecast", "request__team")
                   .filter(request=gpu_request).first())
        if outcome is None:
            raise Http404("The outcome of this request is not asked for (its grant has not ended).")
        return outcome

    @extend_schema(responses={200: OutcomeSerializer,
                              404: OpenApiResponse(description="No such request the viewer may read, or its "
                                                               "outcome is not asked for yet.")},
                   operation_id="requests_outcome_retrieve")
    def get(self, request: AuthenticatedRequest, pk: int) -> Response:
        """The outcome asked for and, once reported, the team's report."""
        return Response(OutcomeSerializer(_line(self._outcome(request, pk))).data)

    @extend_schema(
        request=OutcomeInputSerializer,
        responses={
            200: OutcomeSerializer,
            400: OpenApiResponse(description="The value is not a number from 0 with at most two decimals, or no "
                                             "note."),
            403: OpenApiResponse(description="Not a member of the request's team."),
            404: OpenApiResponse(description="No such request the viewer may read."),
            409: OpenApiResponse(description="Not asked for yet: the grant's last window has not ended."),
        },
        operation_id="requests_outcome_report",
    )
    def post(self, request: AuthenticatedRequest, pk: int) -> Response:
        """Report the realized outcome (or correct it: the request's history keeps what it replaced)."""
        gpu_request = selectors.request_get_for_viewer(viewer=request.user, pk=pk)
        body = OutcomeInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        services.outcome_report(actor=request.user, gpu_request=gpu_request, **body.validated_data)
        return Response(OutcomeSerializer(_line(self._outcome(request, pk))).data)
