"""Scores and decisions as the API takes them, and the ranking and the what-if it answers with."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from committee import limits, scoring, selectors
from committee.api.serializers.cycles import WeightsSerializer
from committee.api.serializers.requests import DecisionSerializer
from committee.models import (
    DecisionOutcome,
    GpuRequest,
    Score,
)
from committee.selectors.discussion import CHANGE_FIELDS
from core.serializers import StrictJSONMixin


class StaleChangeSerializer(serializers.Serializer):
    """One part of a request the team changed after the member scored it (ScoreStaleness.changes)."""

    field = serializers.ChoiceField(
        choices=[(key, key) for key in CHANGE_FIELDS], read_only=True,
        help_text=_("Which part of the request changed."),
    )
    # A declared field, though Field has a `label` attribute: the metaclass takes it out of the class.
    label = serializers.CharField(  # type: ignore[assignment]
        read_only=True, help_text=_("That part's name, in the reader's language.")
    )
    old = serializers.CharField(read_only=True, help_text=_("What it said when the member scored."))
    new = serializers.CharField(read_only=True, help_text=_("What it says now."))


class ScoreSerializer(serializers.ModelSerializer):
    """A member's score as entered, with whether it is stale (the team changed the request since) and whether it
    counts (not while the member is recused). Needs `score_flags` (selectors.request_score_flags) in the context."""

    request: serializers.PrimaryKeyRelatedField[GpuRequest] = serializers.PrimaryKeyRelatedField(read_only=True)
    member: serializers.SlugRelatedField[User] = serializers.SlugRelatedField(slug_field="username", read_only=True)
    stale = serializers.SerializerMethodField(
        help_text=_("The team changed the request after the member scored it; stale scores still count.")
    )
    stale_since = serializers.SerializerMethodField(help_text=_("When the scores were marked stale; null if not."))
    stale_changes = serializers.SerializerMethodField(
        help_text=_("What changed since the member scored, in the review's order; empty if not stale.")
    )
    counted = serializers.SerializerMethodField(
        help_text=_("False while the member is recused from the request (a conflict of interest in force).")
    )

    class Meta:
        model = Score
        fields = ("id", "request", "member", "member_name", "criterion", "value", "note", "updated_at",
                  "stale", "stale_since", "stale_changes", "counted")
        read_only_fields = fields

    def _flags(self) -> selectors.ScoreFlags:
        flags: selectors.ScoreFlags = self.context["score_flags"]
        return flags

    @extend_schema_field(serializers.BooleanField())
    def get_stale(self, score: Score) -> bool:
        return score.member_id in self._flags().stale

    @extend_schema_field(serializers.DateTimeField(allow_null=True))
    def get_stale_since(self, score: Score) -> str | None:
        row = self._flags().stale.get(score.member_id)
        return serializers.DateTimeField().to_representation(row.marked_at) if row is not None else None

    @extend_schema_field(StaleChangeSerializer(many=True))
    def get_stale_changes(self, score: Score) -> list[dict[str, str]]:
        row = self._flags().stale.get(score.member_id)
        if row is None:
            return []
        return [
            {"field": c.get("field", ""), "label": str(selectors.change_label(c.get("field", ""))),
             "old": str(c.get("old", "")), "new": str(c.get("new", ""))}
            for c in row.changes
        ]

    @extend_schema_field(serializers.BooleanField())
    def get_counted(self, score: Score) -> bool:
        return score.member_id not in self._flags().recused_ids


class _CheckedByTheService:
    """A field whose choices and bounds the schema documents and the service checks (only its JSON type is
    checked here, by StrictJSONMixin): services.score_record refuses a score in the words the review page and
    the grid use (committee/services/scores.py), not in DRF's own."""

    def run_validators(self, value: Any) -> None:
        return None


class _ScoreCriterionField(_CheckedByTheService, serializers.ChoiceField):
    def to_internal_value(self, data: Any) -> Any:
        return data


class _ScoreValueField(_CheckedByTheService, serializers.IntegerField):
    def to_internal_value(self, data: Any) -> Any:
        return data


class _ScoreNoteField(_CheckedByTheService, serializers.CharField):
    pass


class ScoreInputSerializer(StrictJSONMixin, serializers.Serializer):
    """The caller's own score of a request on one member-scored criterion (fairness is computed)."""

    criterion = _ScoreCriterionField(choices=[(c, c) for c in scoring.MEMBER_SCORED])
    value = _ScoreValueField(min_value=scoring.SCORE_MIN, max_value=scoring.SCORE_MAX)
    note = _ScoreNoteField(required=False, allow_blank=True, default="", max_length=limits.SCORE_NOTE_MAX_LENGTH)


class DecisionInputSerializer(StrictJSONMixin, serializers.Serializer):
    outcome = serializers.ChoiceField(choices=DecisionOutcome.choices)
    granted_gpu_count = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, help_text=_("Only for a partial grant.")
    )
    alternative = serializers.IntegerField(
        required=False, allow_null=True, min_value=1,
        help_text=_("Only for a grant of the alternative: the id of one of the request's alternatives."),
    )
    granted_weeks = serializers.IntegerField(
        required=False, allow_null=True, min_value=1,
        help_text=_("Only for a grant of a run over several weeks: its first weeks only; omitted for the whole run."),
    )
    rationale = serializers.CharField(max_length=limits.RATIONALE_MAX_LENGTH)
    exception = serializers.CharField(
        required=False, allow_blank=True, max_length=limits.REASON_MAX_LENGTH,
        help_text=_("Only to grant a request that is not ranked (too few scores): the chair's stated exception to "
                    "the rubric, archived with the decision."),
    )




class CriterionResultSerializer(serializers.Serializer):
    criterion = serializers.CharField()
    weight_pct = serializers.IntegerField()
    score = serializers.DecimalField(max_digits=4, decimal_places=2, allow_null=True)
    count = serializers.IntegerField(help_text=_("How many member scores; 0 for a computed criterion."))
    points = serializers.DecimalField(max_digits=5, decimal_places=2, allow_null=True)
    computed = serializers.BooleanField()
    below_quorum = serializers.BooleanField()


class SuggestionSerializer(serializers.Serializer):
    criterion = serializers.CharField()
    value = serializers.IntegerField()
    explanation = serializers.CharField()


class RankingRowSerializer(serializers.Serializer):
    """One request of a cycle's ranking; `rank` and `total` are null below quorum."""

    request = serializers.IntegerField(source="request.pk")
    title = serializers.CharField(source="request.title")
    team = serializers.CharField(source="request.team.slug")
    team_name = serializers.CharField(source="request.team.name")
    pool = serializers.IntegerField(source="request.pool_id")
    requested_gpu_hours = serializers.IntegerField(source="request.requested_gpu_hours")
    submitted_at = serializers.DateTimeField(source="result.submitted_at")
    rank = serializers.IntegerField(source="result.rank", allow_null=True)
    total = serializers.DecimalField(source="result.total", max_digits=5, decimal_places=2, allow_null=True)
    arithmetic = serializers.CharField(source="result.arithmetic")
    missing = serializers.ListField(source="result.missing", child=serializers.CharField())
    criteria = CriterionResultSerializer(source="result.criteria", many=True)
    fairness_explanation = serializers.SerializerMethodField()
    suggestions = serializers.SerializerMethodField()
    # A field of the row's serializer, bound once for the whole list: a row's decision builds no serializer.
    decision = DecisionSerializer(allow_null=True, read_only=True)

    def get_fairness_explanation(self, row: selectors.ReviewRow) -> str:
        return row.fair_share.explanation() if row.fair_share else ""

    @extend_schema_field(SuggestionSerializer(many=True))
    def get_suggestions(self, row: selectors.ReviewRow) -> list[dict[str, Any]]:
        return [
            {"criterion": s.criterion, "value": s.value, "explanation": s.explanation}
            for s in row.suggestions.values()
        ]


class WhatIfRowSerializer(RankingRowSerializer):
    move = serializers.SerializerMethodField(help_text=_("Places moved against the current ranking; up is positive."))

    def get_move(self, row: selectors.ReviewRow) -> int:
        return int(self.context.get("moves", {}).get(row.request.pk, 0))


class WhatIfSerializer(serializers.Serializer):
    """One page of the what-if: page n of the current ranking beside page n of the proposed one."""

    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    current_weights = WeightsSerializer()
    proposed_weights = WeightsSerializer()
    current = RankingRowSerializer(many=True)
    proposed = WhatIfRowSerializer(many=True)
