"""Giving GPUs back and asking for more hours over the API: the same services as the request page
(committee/services/release.py, committee/services/extension.py).

- POST /api/v1/requests/<pk>/release/     a lead of the request's team gives GPUs of its window back
- POST /api/v1/requests/<pk>/extension/   a member of the team asks for more hours of its running window
- POST /api/v1/requests/<pk>/run-extension/   a lead asks to extend a run over several weeks by more weeks
"""

from __future__ import annotations

from django.utils import timezone
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response
from rest_framework.views import APIView

from committee import limits, selectors, services
from core.datetimes import UTCDateTimeField
from core.http import AuthenticatedRequest
from core.serializers import StrictJSONMixin


class ReleaseInputSerializer(StrictJSONMixin, serializers.Serializer):
    gpu_count = serializers.IntegerField(min_value=1, help_text=_("How many GPUs of the window to give back."))
    effective_from = UTCDateTimeField(
        required=False, allow_null=True,
        help_text=_("The whole hour from which they are given back; omitted or null: at once (the next whole hour)."),
    )
    reason = serializers.CharField(
        required=False, allow_blank=True, max_length=limits.REASON_MAX_LENGTH,
        help_text=_("Why, for the request's history and the archive."),
    )


class ReleaseSerializer(serializers.Serializer):
    plan_version = serializers.IntegerField(source="plan.version", read_only=True,
                                            help_text=_("The plan version the release published."))
    effective_from = UTCDateTimeField(read_only=True)
    released_gpu_count = serializers.IntegerField(read_only=True)
    kept_gpu_count = serializers.IntegerField(read_only=True, help_text=_("What the window holds from then."))


@extend_schema(tags=["requests"])
class RequestReleaseView(APIView):
    """A lead of the request's team gives GPUs of its window back; the week's waitlist is placed again."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        request=ReleaseInputSerializer,
        responses={
            201: ReleaseSerializer,
            400: OpenApiResponse(description="An hour in the past, not whole or not before the window ends; GPUs "
                                             "outside 1..what the window holds from then."),
            403: OpenApiResponse(description="Not a lead of the request's team."),
            404: OpenApiResponse(description="No such request the viewer may read."),
            409: OpenApiResponse(description="The week is not published, the request holds no window, or its window "
                                             "has ended."),
        },
        operation_id="requests_release_create",
    )
    def post(self, request: AuthenticatedRequest, pk: int) -> Response:
        """Give GPUs of the request's window back (all or part, at once or from an hour); publishes the next plan
        version."""
        gpu_request = selectors.request_get_for_viewer(viewer=request.user, pk=pk)
        body = ReleaseInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        release = services.window_release(actor=request.user, gpu_request=gpu_request, **body.validated_data)
        return Response(ReleaseSerializer(release).data, status=status.HTTP_201_CREATED)


class ExtensionInputSerializer(StrictJSONMixin, serializers.Serializer):
    hours = serializers.IntegerField(min_value=1, help_text=_("How many more hours, from where the window ends."))
    justification = serializers.CharField(max_length=limits.JUSTIFICATION_MAX_LENGTH,
                                          help_text=_("Why the run needs them: the committee reads it."))


class ExtensionSerializer(serializers.Serializer):
    emergency_id = serializers.IntegerField(source="pk", read_only=True)
    request_id = serializers.IntegerField(read_only=True, help_text=_("The extension's own request."))
    extends = serializers.IntegerField(source="extends_id", read_only=True)
    status = serializers.CharField(read_only=True)


@extend_schema(tags=["requests"])
class RequestExtensionView(APIView):
    """A member of the request's team asks for more hours of its running window, within the week."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        request=ExtensionInputSerializer,
        responses={
            201: ExtensionSerializer,
            400: OpenApiResponse(description="Hours outside 1..what the week has left after the window, or no "
                                             "justification."),
            403: OpenApiResponse(description="Not a member of the request's team."),
            404: OpenApiResponse(description="No such request the viewer may read."),
            409: OpenApiResponse(description="The week is not running, the request holds no window, or its window "
                                             "has ended."),
        },
        operation_id="requests_extension_create",
    )
    def post(self, request: AuthenticatedRequest, pk: int) -> Response:
        """Ask for more hours: an emergency the chair and one member approve from the burst reserve."""
        gpu_request = selectors.request_get_for_viewer(viewer=request.user, pk=pk)
        body = ExtensionInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        emergency = services.grant_extension_file(actor=request.user, gpu_request=gpu_request, **body.validated_data)
        return Response(ExtensionSerializer(emergency).data, status=status.HTTP_201_CREATED)


class RunExtensionInputSerializer(StrictJSONMixin, serializers.Serializer):
    weeks = serializers.IntegerField(min_value=1, help_text=_("How many more weeks, from the week after the run's "
                                                              "last held week (at most grants.max_weeks)."))
    reason = serializers.CharField(max_length=2000, help_text=_("Why the run needs them: the committee reads it."))


class RunExtensionSerializer(serializers.Serializer):
    request_id = serializers.IntegerField(source="pk", read_only=True,
                                          help_text=_("The continuing request, submitted into the review."))
    week = serializers.CharField(source="cycle.week", read_only=True)
    run_weeks = serializers.IntegerField(read_only=True)
    gpu_count = serializers.IntegerField(read_only=True)
    extends_run = serializers.IntegerField(source="extends_run_id", read_only=True)
    status = serializers.CharField(read_only=True)


@extend_schema(tags=["requests"])
class RequestRunExtensionView(APIView):
    """A lead of the team asks to extend a running run over several weeks by more weeks: a continuing request in the
    review of the week after the run's last week (docs/multi-week-runs.md)."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        request=RunExtensionInputSerializer,
        responses={
            201: RunExtensionSerializer,
            400: OpenApiResponse(description="Weeks outside 1..grants.max_weeks, or no reason."),
            403: OpenApiResponse(description="Not a lead of the request's team."),
            404: OpenApiResponse(description="No such request the viewer may read."),
            409: OpenApiResponse(description="Not a run held now, the week after it takes no requests yet, or the "
                                             "run already asks for more weeks there."),
        },
        operation_id="requests_run_extension_create",
    )
    def post(self, request: AuthenticatedRequest, pk: int) -> Response:
        """Ask for more weeks of the run: a continuing request, filed and submitted into the next review."""
        gpu_request = selectors.request_get_for_viewer(viewer=request.user, pk=pk)
        body = RunExtensionInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        extension = services.run_extension_file(actor=request.user, gpu_request=gpu_request, now=timezone.now(),
                                                **body.validated_data)
        return Response(RunExtensionSerializer(extension).data, status=status.HTTP_201_CREATED)
