"""The committee's REST API: the same selectors and services as the pages, with the same permissions.

Each view parses its input with an explicit serializer, calls one selector or service, and answers.
A service's PermissionDenied becomes 403, its ValidationError 400 with the same messages and its
StateConflict 409 (core.errors.api_exception_handler, for every view).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from django.db.models import QuerySet
from django.http import Http404
from django.shortcuts import get_object_or_404
from django.utils.translation import gettext as _
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import exceptions, generics, status
from rest_framework.pagination import PageNumberPagination
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from allocations import selectors as allocation_selectors
from allocations.models import Team
from committee import selectors, services
from committee.api.filtersets import CycleFilterSet, RequestFilterSet
from committee.api.permissions import IsChair, IsCommitteeMember, IsCommitteeMemberToScore
from committee.api.serializers import (
    CycleDetailSerializer,
    CycleSerializer,
    DecisionInputSerializer,
    DecisionSerializer,
    PlacedWindowSerializer,
    RankingRowSerializer,
    RequestInputSerializer,
    RequestSerializer,
    RubricChangeInputSerializer,
    RubricChangeSerializer,
    RubricVersionSerializer,
    ScoreInputSerializer,
    ScoreSerializer,
    TeamWindowQuerySerializer,
    WeightsSerializer,
    WhatIfSerializer,
    placed_window_data,
)
from committee.models import GpuRequest, ReviewCycle, Score
from core.errors import StateConflict
from core.http import AuthenticatedRequest


def _cycle(week: str) -> ReviewCycle:
    return selectors.cycle_get(week=week)


def _readable_request(request: Request, pk: int) -> GpuRequest:
    """A request the caller may read (their team's, or any for the committee); 404 otherwise."""
    return selectors.request_get_for_viewer(viewer=request.user, pk=pk)


# ---------------------------------------------------------------------------------------------
# Cycles


@extend_schema(tags=["cycles"])
class CycleListView(generics.ListAPIView):
    """Every weekly cycle, newest first. Anyone signed in: weeks and their state are not secret."""

    serializer_class = CycleSerializer
    filterset_class = CycleFilterSet

    def get_queryset(self) -> QuerySet[ReviewCycle]:
        return selectors.cycle_list()


@extend_schema(tags=["cycles"])
class CycleDetailView(generics.RetrieveAPIView):
    """One weekly cycle, with each pool's capacity for its week: what the engine can place."""

    serializer_class = CycleDetailSerializer
    lookup_field = "week"

    def get_queryset(self) -> QuerySet[ReviewCycle]:
        return selectors.cycle_list()


class CycleTransitionView(APIView):
    permission_classes = [IsAuthenticated, IsChair]
    service: Callable[..., ReviewCycle]

    def post(self, request: AuthenticatedRequest, week: str) -> Response:
        cycle = type(self).service(cycle=_cycle(week), actor=request.user)
        return Response(CycleSerializer(selectors.cycle_get(week=cycle.week)).data)


@extend_schema(tags=["cycles"], request=None, responses=CycleSerializer)
class CycleCloseIntakeView(CycleTransitionView):
    """Close intake (the chair): requests freeze and the cycle goes to review. 409 unless the cycle is open."""

    service = services.cycle_close_intake

    @extend_schema(operation_id="cycles_close_intake")
    def post(self, request: AuthenticatedRequest, week: str) -> Response:
        return super().post(request, week)


@extend_schema(tags=["cycles"], request=None, responses=CycleSerializer)
class CycleFinalizeView(CycleTransitionView):
    """Finalize (the chair) once every ranked request has a decision.

    409 while the week is not in review, or while a ranked request is undecided (naming them).
    """

    service = services.cycle_finalize

    @extend_schema(operation_id="cycles_finalize")
    def post(self, request: AuthenticatedRequest, week: str) -> Response:
        return super().post(request, week)


@extend_schema(tags=["review"])
class CycleRankingView(generics.GenericAPIView):
    """The cycle's requests ranked by the rubric in force in its week, with each criterion's mean, points and the
    arithmetic.

    Paged like every list of the API (`?page=`, `count`, `next`, `previous`, `results`), in rank order:
    ranked requests first, then those below quorum.
    """

    permission_classes = [IsAuthenticated, IsCommitteeMember]
    serializer_class = RankingRowSerializer
    filter_backends: list[Any] = []

    @extend_schema(responses=RankingRowSerializer(many=True), operation_id="cycles_ranking")
    def get(self, request: Request, week: str) -> Response:
        rows = selectors.ranking_rows(cycle=_cycle(week))  # the week's ranking, kept once per change
        page: list[selectors.ReviewRow] = self.paginate_queryset(rows) or []  # type: ignore[arg-type]
        selectors.review_rows_suggestions_load(rows=page)
        return self.get_paginated_response(RankingRowSerializer(page, many=True).data)


@extend_schema(tags=["review"])
class CycleWhatIfView(generics.GenericAPIView):
    """The chair's preview: the ranking under other weights beside the current one. Nothing is saved.

    Paged like the ranking (`?page=`; `count`, `next`, `previous`): page n of the current ranking beside
    page n of the proposed one, each `move` against the whole current ranking.
    """

    permission_classes = [IsAuthenticated, IsChair]
    serializer_class = WhatIfSerializer
    filter_backends: list[Any] = []

    @extend_schema(
        parameters=[WeightsSerializer, OpenApiParameter("page", int)],
        responses=WhatIfSerializer, operation_id="cycles_what_if",
    )
    def get(self, request: Request, week: str) -> Response:
        cycle = _cycle(week)
        query = WeightsSerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        weights = dict(query.validated_data)
        current = selectors.ranking_rows(cycle=cycle)  # both rankings kept once per change, each page read alone
        proposed = selectors.ranking_rows(cycle=cycle, weights=weights)
        moves = proposed.ranking.moves(before=current.ranking)
        proposed_page: list[selectors.ReviewRow] = self.paginate_queryset(proposed) or []  # type: ignore[arg-type]
        paginator = cast(PageNumberPagination, self.paginator)  # the API's DEFAULT_PAGINATION_CLASS
        start = (paginator.page.number - 1) * paginator.page.paginator.per_page if paginator.page else 0
        current_page = current[start:start + len(proposed_page)]
        selectors.review_rows_suggestions_load(rows=[*current_page, *proposed_page])
        body = {
            "count": len(proposed),
            "next": paginator.get_next_link(),
            "previous": paginator.get_previous_link(),
            "current_weights": selectors.rubric_for_week(week=cycle.week).weights,
            "proposed_weights": weights,
            "current": current_page,
            "proposed": proposed_page,
        }
        return Response(WhatIfSerializer(body, context={"moves": moves}).data)


# ---------------------------------------------------------------------------------------------
# Requests


@extend_schema(tags=["requests"])
class RequestListView(generics.ListAPIView):
    """Requests the caller may read: their teams' requests, or every request for the committee."""

    serializer_class = RequestSerializer
    filterset_class = RequestFilterSet
    queryset = GpuRequest.objects.none()  # the schema's model; get_queryset scopes the real one

    def get_queryset(self) -> QuerySet[GpuRequest]:
        if getattr(self, "swagger_fake_view", False):
            return GpuRequest.objects.none()
        return selectors.request_list_for_viewer(viewer=self.request.user).select_related("decision")

    def get_serializer(self, *args: Any, **kwargs: Any) -> Any:
        """A page of requests reads its decisions and placements in bulk (a constant number of queries)."""
        if args and kwargs.get("many"):
            rows = list(args[0])
            context = self.get_serializer_context()
            context["outcomes"] = selectors.request_outcome_map(requests=rows, viewer=self.request.user)
            return super().get_serializer(rows, *args[1:], context=context, **kwargs)
        return super().get_serializer(*args, **kwargs)


def _request_body(
    request: Request, *, team: Team, cycle: ReviewCycle, gpu_request: GpuRequest | None = None
) -> RequestInputSerializer:
    """The request's body, valid; else one 400 with every error at once: the body's own, and the rules that span
    fields, the week and the team's requests (services.request_problems) on the fields that passed, keyed as
    the service keys them (`alternatives.1.gpu_hours`). A body from outside the team hears only its own errors."""
    body = RequestInputSerializer(data=request.data)
    if body.is_valid():
        return body
    errors: dict[str, Any] = dict(body.errors)
    if selectors.user_is_team_member(user=request.user, team=team):
        fields, alternatives = body.partial_values()
        problems = services.request_problems(
            team=team, cycle=cycle, fields=fields, alternatives=alternatives, gpu_request=gpu_request
        )
        for key, messages in problems.items():
            kept = errors.get(key)
            errors[key] = [*kept, *messages] if isinstance(kept, list) else messages
    raise exceptions.ValidationError(errors)


@extend_schema(tags=["requests"])
class TeamRequestCreateView(APIView):
    """File a draft request for a team in the cycle open for intake (409 when none is). Only the team's members."""

    @extend_schema(
        request=RequestInputSerializer, responses={201: RequestSerializer}, operation_id="teams_requests_create"
    )
    def post(self, request: AuthenticatedRequest, team: str) -> Response:
        team_obj = get_object_or_404(Team, slug=team)
        cycle = selectors.cycle_open_for_intake()
        if cycle is None:
            raise StateConflict(_("No cycle is open for intake right now."))
        body = _request_body(request, team=team_obj, cycle=cycle)
        created = services.request_create(actor=request.user, team=team_obj, cycle=cycle, **body.service_kwargs())
        fresh = _readable_request(request, created.pk)
        return Response(RequestSerializer(fresh, context={"request": request}).data, status=status.HTTP_201_CREATED)


@extend_schema(tags=["requests"])
class RequestDetailView(APIView):
    """One request with its evidence; a team member replaces it whole (PUT) while intake is open."""

    @extend_schema(responses=RequestSerializer, operation_id="requests_retrieve")
    def get(self, request: Request, pk: int) -> Response:
        return Response(RequestSerializer(_readable_request(request, pk), context={"request": request}).data)

    @extend_schema(request=RequestInputSerializer, responses=RequestSerializer, operation_id="requests_update")
    def put(self, request: AuthenticatedRequest, pk: int) -> Response:
        gpu_request = _readable_request(request, pk)
        body = _request_body(request, team=gpu_request.team, cycle=gpu_request.cycle, gpu_request=gpu_request)
        services.request_update(actor=request.user, gpu_request=gpu_request, **body.service_kwargs())
        return Response(RequestSerializer(_readable_request(request, pk), context={"request": request}).data)


class RequestTransitionView(APIView):
    service: Callable[..., GpuRequest]

    def post(self, request: AuthenticatedRequest, pk: int) -> Response:
        gpu_request = _readable_request(request, pk)
        type(self).service(actor=request.user, gpu_request=gpu_request)
        return Response(RequestSerializer(_readable_request(request, pk), context={"request": request}).data)


@extend_schema(tags=["requests"], request=None, responses=RequestSerializer)
class RequestSubmitView(RequestTransitionView):
    """Put a draft in front of the committee (a team member, while intake is open; 409 otherwise)."""

    service = services.request_submit

    @extend_schema(operation_id="requests_submit")
    def post(self, request: AuthenticatedRequest, pk: int) -> Response:
        return super().post(request, pk)


@extend_schema(tags=["requests"], request=None, responses=RequestSerializer)
class RequestWithdrawView(RequestTransitionView):
    """Take a draft or submitted request back (a team member, while intake is open; 409 otherwise)."""

    service = services.request_withdraw

    @extend_schema(operation_id="requests_withdraw")
    def post(self, request: AuthenticatedRequest, pk: int) -> Response:
        return super().post(request, pk)


@extend_schema(tags=["requests"])
class TeamWindowListView(APIView):
    """A team's windows in the current plans: of one `week`, or of every week whose plan has not ended.

    For the team's members and the committee; anyone else is refused (403).
    """

    @extend_schema(
        operation_id="teams_windows_list",
        parameters=[TeamWindowQuerySerializer],
        responses={200: PlacedWindowSerializer(many=True)},
    )
    def get(self, request: Request, team: str) -> Response:
        team_obj = get_object_or_404(Team, slug=team)
        roles = selectors.viewer_roles(user=request.user)
        if not roles.committee and team_obj.pk not in roles.team_ids:
            raise exceptions.PermissionDenied(_("Only the team's members and the committee read its windows."))
        query = TeamWindowQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        rows = allocation_selectors.team_window_list(team=team_obj, week=query.validated_data.get("week"))
        data = [
            placed_window_data(window=window, plan_version=plan.version, week_start=plan.week_starts_at)
            for plan, window in rows
        ]
        return Response(PlacedWindowSerializer(data, many=True).data)


# ---------------------------------------------------------------------------------------------
# Scores and decisions


@extend_schema(tags=["review"])
class RequestScoresView(APIView):
    """Every member's scores of a request (committee), each saying whether it is stale and whether it counts, and
    recording the caller's own score."""

    permission_classes = [IsAuthenticated, IsCommitteeMemberToScore]

    def _request(self, request: Request, pk: int) -> GpuRequest:
        return _readable_request(request, pk)

    @extend_schema(responses=ScoreSerializer(many=True), operation_id="requests_scores_list")
    def get(self, request: Request, pk: int) -> Response:
        gpu_request = self._request(request, pk)
        scores = Score.objects.filter(request=gpu_request).select_related("member").order_by("criterion", "member_name")
        context = {"score_flags": selectors.request_score_flags(gpu_request=gpu_request)}
        return Response(ScoreSerializer(scores, many=True, context=context).data)

    @extend_schema(request=ScoreInputSerializer, responses=ScoreSerializer, operation_id="requests_scores_record")
    def post(self, request: AuthenticatedRequest, pk: int) -> Response:
        """Record or revise the caller's score on one criterion. Refused for a request of the caller's own team.

        A refused score answers the status and the words of the review page and the grid
        (committee/services/scores.py), through the site's exception handler (core/errors.py)."""
        gpu_request = self._request(request, pk)
        body = ScoreInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        score = services.score_record(actor=request.user, gpu_request=gpu_request, **body.validated_data)
        context = {"score_flags": selectors.request_score_flags(gpu_request=gpu_request)}
        return Response(ScoreSerializer(score, context=context).data)


@extend_schema(tags=["review"])
class RequestDecisionView(APIView):
    """A request's decision: the committee sees it as entered, the team once the week is finalized."""

    @extend_schema(responses=DecisionSerializer, operation_id="requests_decision_retrieve")
    def get(self, request: Request, pk: int) -> Response:
        gpu_request = _readable_request(request, pk)
        decision = getattr(gpu_request, "decision", None)
        if decision is None or not selectors.decision_visible_to(viewer=request.user, gpu_request=gpu_request):
            raise Http404("No decision yet")
        return Response(DecisionSerializer(decision).data)

    @extend_schema(
        request=DecisionInputSerializer, responses=DecisionSerializer, operation_id="requests_decision_record"
    )
    def put(self, request: AuthenticatedRequest, pk: int) -> Response:
        """Record or revise the decision: the chair, or any committee member when DOCKET_DECISIONS_RECORDED_BY
        is "committee" (403 otherwise, saying so); never on the caller's own team's request, nor on one they
        are recused from."""
        if not selectors.user_is_committee(user=request.user):
            raise exceptions.PermissionDenied(IsCommitteeMember.message)
        gpu_request = _readable_request(request, pk)
        body = DecisionInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        decision = services.request_decide(actor=request.user, gpu_request=gpu_request, **body.validated_data)
        return Response(DecisionSerializer(decision).data)


# ---------------------------------------------------------------------------------------------
# The rubric


@extend_schema(tags=["rubric"])
class RubricView(APIView):
    """The current rubric: the one a cycle opened now would be scored with."""

    @extend_schema(responses=RubricVersionSerializer, operation_id="rubric_retrieve")
    def get(self, request: Request) -> Response:
        return Response(RubricVersionSerializer(selectors.rubric_current()).data)


@extend_schema(tags=["rubric"])
class RubricVersionsView(APIView):
    """The rubric's history, newest first (anyone signed in); a new version (the chair)."""

    def get_permissions(self) -> list[Any]:
        if self.request.method == "POST":
            return [IsAuthenticated(), IsChair()]
        return [IsAuthenticated()]

    @extend_schema(responses=RubricChangeSerializer(many=True), operation_id="rubric_versions_list")
    def get(self, request: Request) -> Response:
        return Response(RubricChangeSerializer(selectors.rubric_history(), many=True).data)

    @extend_schema(
        request=RubricChangeInputSerializer,
        responses={201: RubricVersionSerializer},
        operation_id="rubric_versions_create",
    )
    def post(self, request: AuthenticatedRequest) -> Response:
        """Save a new version with a reason; it applies from the next cycle to open."""
        body = RubricChangeInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        rubric = services.rubric_change(
            actor=request.user,
            weights=body.validated_data["weights"],
            guidance=body.validated_data.get("guidance"),
            reason=body.validated_data["reason"],
        )
        return Response(RubricVersionSerializer(rubric).data, status=status.HTTP_201_CREATED)
