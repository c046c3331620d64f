"""The conversation around a request over the API: the same services as the review card and the request page
(committee/services/discussion.py, docs/discussion.md).

- GET  /api/v1/requests/<pk>/comments/             the committee's comments (committee members outside the team)
- POST /api/v1/requests/<pk>/comments/             a committee member outside the team comments
- GET  /api/v1/requests/<pk>/questions/            questions to the team and its answers (the team and the committee)
- POST /api/v1/requests/<pk>/questions/            a committee member outside the team asks the team
- POST /api/v1/questions/<pk>/answer/              a member of the request's team answers
- GET  /api/v1/requests/<pk>/conflicts/            declared conflicts of interest, in force or withdrawn (committee)
- POST /api/v1/requests/<pk>/conflicts/            a committee member declares one (recused)
- POST /api/v1/requests/<pk>/conflicts/withdraw/   the member withdraws their declaration
- POST /api/v1/requests/<pk>/scores/hold/          the member's stale scores still hold

The team never reads the committee's comments: a team member is refused (403), and so is a committee member
who belongs to the request's team (the pages leave the comments out for them).
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from committee import selectors, services
from committee.api.permissions import IsCommitteeMember
from committee.api.serializers import ScoreSerializer
from committee.models import ConflictDeclaration, GpuRequest, QuestionStatus, RequestComment, RequestQuestion, Score
from committee.models.discussion import (
    ANSWER_MAX_LENGTH,
    COMMENT_MAX_LENGTH,
    CONFLICT_REASON_MAX_LENGTH,
    QUESTION_MAX_LENGTH,
)
from core.http import AuthenticatedRequest
from core.serializers import StrictJSONMixin

# ---------------------------------------------------------------------------------------------
# Serializers


class CommentSerializer(serializers.ModelSerializer):
    request_id = serializers.IntegerField(read_only=True)

    class Meta:
        model = RequestComment
        fields = ("id", "request_id", "author_name", "body", "created_at")
        read_only_fields = fields


class QuestionSerializer(serializers.ModelSerializer):
    request_id = serializers.IntegerField(read_only=True)
    status = serializers.ChoiceField(
        choices=QuestionStatus.choices, read_only=True, help_text=gettext_lazy("Open until the team answers.")
    )

    class Meta:
        model = RequestQuestion
        fields = ("id", "request_id", "asked_by_name", "body", "asked_at", "status", "answer", "answered_by_name",
                  "answered_at")
        read_only_fields = fields


class ConflictSerializer(serializers.ModelSerializer):
    request_id = serializers.IntegerField(read_only=True)
    member = serializers.CharField(source="member.username", read_only=True)
    in_force = serializers.SerializerMethodField(
        help_text=gettext_lazy("The member is recused from the request until they withdraw the declaration.")
    )

    class Meta:
        model = ConflictDeclaration
        fields = ("id", "request_id", "member", "member_name", "reason", "declared_at", "withdrawn_at", "in_force")
        read_only_fields = fields

    def get_in_force(self, declaration: ConflictDeclaration) -> bool:
        return declaration.withdrawn_at is None


class CommentInputSerializer(StrictJSONMixin, serializers.Serializer):
    body = serializers.CharField(max_length=COMMENT_MAX_LENGTH, help_text=gettext_lazy("For the committee only."))


class QuestionInputSerializer(StrictJSONMixin, serializers.Serializer):
    body = serializers.CharField(max_length=QUESTION_MAX_LENGTH, help_text=gettext_lazy("The team reads it."))


class AnswerInputSerializer(StrictJSONMixin, serializers.Serializer):
    answer = serializers.CharField(max_length=ANSWER_MAX_LENGTH)


class ConflictInputSerializer(StrictJSONMixin, serializers.Serializer):
    reason = serializers.CharField(
        required=False, allow_blank=True, default="", max_length=CONFLICT_REASON_MAX_LENGTH,
        help_text=gettext_lazy("Optional: why (the committee and the decision record read it)."),
    )


# ---------------------------------------------------------------------------------------------
# Views


def _readable_request(request: Request, pk: int) -> GpuRequest:
    return selectors.request_get_for_viewer(viewer=request.user, pk=pk)


@extend_schema(tags=["review"])
class RequestCommentsView(APIView):
    """The committee's comments on a request, oldest first, and a new one. For committee members outside the
    request's team only: the team never reads them (403, as to a committee member who belongs to the team)."""

    permission_classes = [IsAuthenticated, IsCommitteeMember]

    @extend_schema(
        responses={200: CommentSerializer(many=True),
                   403: OpenApiResponse(description="Not on the committee, or a member of the request's team.")},
        operation_id="requests_comments_list",
    )
    def get(self, request: Request, pk: int) -> Response:
        gpu_request = _readable_request(request, pk)
        if selectors.user_is_team_member(user=request.user, team=gpu_request.team):
            raise exceptions.PermissionDenied(
                _("You are a member of %(team)s: the committee's comments on its requests are not shown to you.")
                % {"team": gpu_request.team.name}
            )
        rows = selectors.request_comment_list(gpu_request=gpu_request, viewer=request.user)
        return Response(CommentSerializer(rows, many=True).data)

    @extend_schema(
        request=CommentInputSerializer,
        responses={
            201: CommentSerializer,
            400: OpenApiResponse(description="No comment, or one over the limit; nothing was stored."),
            403: OpenApiResponse(description="Not on the committee, a member of the request's team, or recused."),
            409: OpenApiResponse(description="The week is finalized."),
        },
        operation_id="requests_comments_create",
    )
    def post(self, request: AuthenticatedRequest, pk: int) -> Response:
        gpu_request = _readable_request(request, pk)
        body = CommentInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        comment = services.request_comment_add(actor=request.user, gpu_request=gpu_request, **body.validated_data)
        return Response(CommentSerializer(comment).data, status=status.HTTP_201_CREATED)


@extend_schema(tags=["requests"])
class RequestQuestionsView(APIView):
    """The committee's questions to a request's team with the team's answers, oldest first (the team's members and
    the committee; another team gets 404); a committee member outside the team asks a new one."""

    def get_permissions(self) -> list[Any]:
        if self.request.method == "POST":
            return [IsAuthenticated(), IsCommitteeMember()]
        return [IsAuthenticated()]

    @extend_schema(responses=QuestionSerializer(many=True), operation_id="requests_questions_list")
    def get(self, request: Request, pk: int) -> Response:
        gpu_request = _readable_request(request, pk)
        rows = selectors.request_questions_for_viewer(gpu_request=gpu_request, viewer=request.user)
        return Response(QuestionSerializer(rows, many=True).data)

    @extend_schema(
        request=QuestionInputSerializer,
        responses={
            201: QuestionSerializer,
            400: OpenApiResponse(description="No question, or one over the limit; nothing was stored."),
            403: OpenApiResponse(description="Not on the committee, a member of the request's team, or recused."),
            409: OpenApiResponse(description="The request is not submitted, or the week is finalized."),
        },
        operation_id="requests_questions_create",
    )
    def post(self, request: AuthenticatedRequest, pk: int) -> Response:
        """Ask the team; its members are told (notification `question_asked`) and answer on the request page or
        with POST /api/v1/questions/<id>/answer/."""
        gpu_request = _readable_request(request, pk)
        body = QuestionInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        question = services.request_question_ask(actor=request.user, gpu_request=gpu_request, **body.validated_data)
        return Response(QuestionSerializer(question).data, status=status.HTTP_201_CREATED)


@extend_schema(tags=["requests"])
class QuestionAnswerView(APIView):
    """A member of the request's team answers the committee's open question, once; the committee members outside
    the team are told (notification `question_answered`). Another team gets 404, the committee 403."""

    permission_classes = [IsAuthenticated]

    @extend_schema(
        request=AnswerInputSerializer,
        responses={
            200: QuestionSerializer,
            400: OpenApiResponse(description="No answer, or one over the limit; nothing was stored."),
            403: OpenApiResponse(description="Not a member of the request's team."),
            409: OpenApiResponse(description="The question was already answered, or the week is finalized."),
        },
        operation_id="questions_answer",
    )
    def post(self, request: AuthenticatedRequest, pk: int) -> Response:
        data = request.data  # a body the parser refuses (malformed, nested too deep) is a 400 whatever the id
        question = selectors.question_get_for_viewer(pk=pk, viewer=request.user)
        body = AnswerInputSerializer(data=data)
        body.is_valid(raise_exception=True)
        answered = services.request_question_answer(actor=request.user, question=question, **body.validated_data)
        return Response(QuestionSerializer(answered).data)


@extend_schema(tags=["review"])
class RequestConflictsView(APIView):
    """Conflicts of interest declared on a request, in force or withdrawn, oldest first (the committee); a committee
    member outside the request's team declares one and is recused from scoring and deciding it."""

    permission_classes = [IsAuthenticated, IsCommitteeMember]

    @extend_schema(responses=ConflictSerializer(many=True), operation_id="requests_conflicts_list")
    def get(self, request: Request, pk: int) -> Response:
        gpu_request = _readable_request(request, pk)
        return Response(ConflictSerializer(selectors.request_conflict_list(gpu_request=gpu_request), many=True).data)

    @extend_schema(
        request=ConflictInputSerializer,
        responses={
            201: ConflictSerializer,
            400: OpenApiResponse(description="A reason over the limit; nothing was stored."),
            403: OpenApiResponse(description="Not on the committee, or a member of the request's team."),
            409: OpenApiResponse(description="A declaration is already in force, or the week is finalized."),
        },
        operation_id="requests_conflicts_declare",
    )
    def post(self, request: AuthenticatedRequest, pk: int) -> Response:
        gpu_request = _readable_request(request, pk)
        body = ConflictInputSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        declared = services.conflict_declare(actor=request.user, gpu_request=gpu_request, **body.validated_data)
        return Response(ConflictSerializer(declared).data, status=status.HTTP_201_CREATED)


@extend_schema(tags=["review"])
class RequestConflictWithdrawView(APIView):
    """The caller withdraws their declaration in force on a request, before the week is finalized: their scores
    count again. The declaration stays, with `withdrawn_at`."""

    permission_classes = [IsAuthenticated, IsCommitteeMember]

    @extend_schema(
        request=None,
        responses={
            200: ConflictSerializer,
            409: OpenApiResponse(description="No declaration of the caller's in force, or the week is finalized."),
        },
        operation_id="requests_conflicts_withdraw",
    )
    def post(self, request: AuthenticatedRequest, pk: int) -> Response:
        gpu_request = _readable_request(request, pk)
        withdrawn = services.conflict_withdraw(actor=request.user, gpu_request=gpu_request)
        return Response(ConflictSerializer(withdrawn).data)


@extend_schema(tags=["review"])
class RequestScoresHoldView(APIView):
    """The caller read what the team changed and their stale scores of the request still hold: no longer stale.
    Answers every member's scores of the request, as GET …/scores/ does."""

    permission_classes = [IsAuthenticated, IsCommitteeMember]

    @extend_schema(
        request=None,
        responses={
            200: ScoreSerializer(many=True),
            409: OpenApiResponse(description="The caller's scores are not stale, or the week is not in review."),
        },
        operation_id="requests_scores_hold",
    )
    def post(self, request: AuthenticatedRequest, pk: int) -> Response:
        gpu_request = _readable_request(request, pk)
        services.scores_confirm(actor=request.user, gpu_request=gpu_request)
        scores = Score.objects.filter(request=gpu_request).select_related("member").order_by("criterion", "member_name")
        context = {"score_flags": selectors.request_score_flags(gpu_request=gpu_request)}
        return Response(ScoreSerializer(scores, many=True, context=context).data)
