"""Webhook subscriptions over the API: the same services as the webhooks page (committee/services/webhooks.py).

- GET  /api/v1/webhooks/                     the subscriptions the caller manages (its teams'; the chair: clusters')
- POST /api/v1/webhooks/                     subscribe a team (its lead) or a cluster (the chair); the secret, once
- GET  /api/v1/webhooks/<pk>/deliveries/     the subscription's delivery log, newest first
- POST /api/v1/webhooks/<pk>/deactivate/     stop posting to it
"""

from __future__ import annotations

from typing import Any

from django.http import Http404
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from allocations.models import Cluster, Team
from committee import selectors, services
from committee.models import DeliveryState, LifecycleEventType, WebhookDelivery, WebhookSubscription
from committee.services.webhooks import TYPE_PREFIX
from core.http import AuthenticatedRequest
from core.serializers import StrictJSONMixin


class SubscriptionSerializer(serializers.ModelSerializer):
    team: serializers.SlugRelatedField[Team] = serializers.SlugRelatedField(slug_field="slug", read_only=True,
                                                                            allow_null=True)
    cluster: serializers.SlugRelatedField[Cluster] = serializers.SlugRelatedField(slug_field="slug", read_only=True,
                                                                                  allow_null=True)

    class Meta:
        model = WebhookSubscription
        fields: tuple[str, ...] = ("id", "team", "cluster", "url", "active", "created_by_name", "created_at")
        read_only_fields: tuple[str, ...] = fields


class CreatedSubscriptionSerializer(SubscriptionSerializer):
    secret = serializers.CharField(read_only=True, help_text=_(
        "The HMAC-SHA256 key of the Docket-Signature header: shown this once, never again."))

    class Meta(SubscriptionSerializer.Meta):
        fields: tuple[str, ...] = (*SubscriptionSerializer.Meta.fields, "secret")
        read_only_fields: tuple[str, ...] = fields


class SubscriptionInputSerializer(StrictJSONMixin, serializers.Serializer):
    team = serializers.SlugRelatedField(slug_field="slug", queryset=Team.objects.all(), required=False,
                                        help_text=_("A team's slug: its lead subscribes to its events."))
    cluster = serializers.SlugRelatedField(slug_field="slug", queryset=Cluster.objects.all(), required=False,
                                           help_text=_("A cluster's slug: the chair subscribes to its events."))
    url = serializers.CharField(max_length=500, help_text=_("The receiver's http(s) address."))


class AttemptSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    attempted_at = serializers.DateTimeField()
    status_code = serializers.IntegerField(allow_null=True)
    error = serializers.CharField()


class DeliverySerializer(serializers.ModelSerializer):
    event_id = serializers.UUIDField(source="event.event_id", read_only=True)
    type = serializers.SerializerMethodField()
    state = serializers.ChoiceField(choices=DeliveryState.choices, read_only=True)
    attempts = AttemptSerializer(source="attempt_log", many=True, read_only=True)

    class Meta:
        model = WebhookDelivery
        fields = ("id", "event_id", "type", "state", "attempts", "next_attempt_at", "delivered_at")
        read_only_fields = fields

    def get_type(self, delivery: WebhookDelivery) -> str:
        return TYPE_PREFIX + delivery.event.type


def _subscription(viewer: Any, pk: int) -> WebhookSubscription:
    found = selectors.webhook_subscriptions_for_viewer(viewer=viewer).filter(pk=pk).first()
    if found is None:
        raise Http404("No such subscription")
    return found


@extend_schema(tags=["webhooks"])
class WebhookListView(APIView):
    """The lifecycle-event webhooks the caller manages; a team's lead or the chair subscribes."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses=SubscriptionSerializer(many=True), operation_id="webhooks_list")
    def get(self, request: Request) -> Response:
        rows = selectors.webhook_subscriptions_for_viewer(viewer=request.user)
        return Response(SubscriptionSerializer(rows, many=True).data)

    @extend_schema(
        request=SubscriptionInputSerializer,
        responses={
            201: CreatedSubscriptionSerializer,
            400: OpenApiResponse(description="An address that is not http(s), an unknown team or cluster, or "
                                             "neither or both of them."),
            403: OpenApiResponse(description="Not the team's lead (a team), not the chair (a cluster)."),
        },
        operation_id="webhooks_create",
        description="Event types: " + ", ".join(TYPE_PREFIX + t for t in LifecycleEventType.values) + ".",
    )
    def post(self, request: AuthenticatedRequest) -> Response:
        body = SubscriptionInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        subscription, secret = services.webhook_subscription_create(actor=request.user, **body.validated_data)
        data = CreatedSubscriptionSerializer(subscription).data
        return Response({**data, "secret": secret}, status=status.HTTP_201_CREATED)


@extend_schema(tags=["webhooks"])
class WebhookDeliveriesView(APIView):
    """A subscription's delivery log: each event, its state and every attempt with what the receiver answered."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses={200: DeliverySerializer(many=True), 404: OpenApiResponse(
        description="No subscription the caller manages.")}, operation_id="webhooks_deliveries_list")
    def get(self, request: Request, pk: int) -> Response:
        subscription = _subscription(request.user, pk)
        return Response(DeliverySerializer(selectors.webhook_delivery_log(subscription=subscription), many=True).data)


@extend_schema(tags=["webhooks"])
class WebhookDeactivateView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(request=None, responses={200: SubscriptionSerializer, 404: OpenApiResponse(
        description="No subscription the caller manages.")}, operation_id="webhooks_deactivate")
    def post(self, request: AuthenticatedRequest, pk: int) -> Response:
        """Stop posting to the subscription; its pending deliveries are given up, its log stays."""
        subscription = services.webhook_subscription_deactivate(actor=request.user,
                                                                subscription=_subscription(request.user, pk))
        return Response(SubscriptionSerializer(subscription).data)
