"""Serializers of the committee API: explicit fields only.

Output serializers describe what a reader sees. Input serializers (`*InputSerializer`) list the
only fields a client may send: status, team, cycle, totals, ranks and authorship are set by the
services, never by a client.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import SkipField

from allocations import selectors as allocation_selectors
from allocations.explanations import placement_text
from allocations.models import AllocationWindow, Team, WindowTier
from committee import limits, scoring, selectors
from committee.models import (
    Alternative,
    CycleStatus,
    Decision,
    DecisionOutcome,
    GpuRequest,
    ImpactForecast,
    RequestStatus,
    ReviewCycle,
    Score,
    UsageReport,
)
from committee.selectors.discussion import CHANGE_FIELDS
from committee.services import REQUEST_FIELDS
from core.isoweek import validate_iso_week
from core.serializers import StrictIntegerField, StrictJSONMixin

# ---------------------------------------------------------------------------------------------
# The rubric


class WeightsSerializer(StrictJSONMixin, serializers.Serializer):
    """A whole percent for each criterion of the one list (committee.scoring.CRITERIA), adding up to 100."""

    def get_fields(self) -> dict[str, serializers.Field]:
        return {**{c: StrictIntegerField(min_value=0, max_value=100) for c in scoring.CRITERIA},
                **super().get_fields()}

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        error = scoring.weights_errors(attrs).get("__all__")
        if error:
            raise serializers.ValidationError(error)
        return attrs


class GuidanceSerializer(StrictJSONMixin, serializers.Serializer):
    """Each criterion's guidance (committee.scoring.CRITERIA); a criterion not given keeps its own."""

    def get_fields(self) -> dict[str, serializers.Field]:
        return {**{c: serializers.CharField(required=False, allow_blank=True, max_length=limits.GUIDANCE_MAX_LENGTH)
                   for c in scoring.CRITERIA},
                **super().get_fields()}


class RubricVersionSerializer(serializers.Serializer):
    """The rubric in force from a week (committee.selectors.Rubric): `number` is the version of the committee's rules
    (the store's change) that last set a weight or a guidance."""

    number = serializers.IntegerField()
    weights = WeightsSerializer()
    guidance = GuidanceSerializer()
    reason = serializers.CharField()
    author_name = serializers.CharField()
    created_at = serializers.DateTimeField(allow_null=True)


class RubricChangeSerializer(serializers.Serializer):
    """One entry of the rubric's history: the version, the weights before it, the weeks it applied to."""

    version = RubricVersionSerializer()
    previous_weights = serializers.SerializerMethodField()
    cycle_weeks = serializers.ListField(child=serializers.CharField())

    @extend_schema_field(WeightsSerializer(allow_null=True))
    def get_previous_weights(self, change: selectors.RubricChange) -> dict[str, int] | None:
        return change.previous.weights if change.previous else None


class RubricChangeInputSerializer(StrictJSONMixin, serializers.Serializer):
    weights = WeightsSerializer()
    guidance = GuidanceSerializer(required=False)
    reason = serializers.CharField(max_length=limits.REASON_MAX_LENGTH)


# ---------------------------------------------------------------------------------------------
# Cycles


class CycleListSerializer(serializers.ListSerializer):
    """A list of cycles reads their rubric versions in one query (committee.selectors.rubric_versions_for_weeks)."""

    def to_representation(self, data: Any) -> list[Any]:
        cycles = list(data.all() if hasattr(data, "all") else data)
        self._context = {**self._context,
                         "rubric_versions": selectors.rubric_versions_for_weeks(weeks=[c.week for c in cycles])}
        return super().to_representation(cycles)


class CycleSerializer(serializers.ModelSerializer):
    status = serializers.ChoiceField(choices=CycleStatus.choices, read_only=True)
    rubric_version = serializers.SerializerMethodField(
        help_text="The version of the committee's rules that last set the rubric in force in the cycle's week.")

    class Meta:
        model = ReviewCycle
        list_serializer_class = CycleListSerializer
        fields = (
            "week",
            "status",
            "starts_at",
            "ends_at",
            "intake_closes_at",
            "review_at",
            "intake_closed_at",
            "finalized_at",
            "finalized_by_name",
            "rubric_version",
        )
        read_only_fields = fields

    def get_rubric_version(self, cycle: ReviewCycle) -> int:
        versions = self.context.get("rubric_versions") or {}
        return versions[cycle.week] if cycle.week in versions else selectors.rubric_for_week(week=cycle.week).number


class PoolCapacitySerializer(serializers.Serializer):
    """What the engine can place on one pool over the cycle's week, in GPU-hours."""

    pool = serializers.CharField(help_text=_("cluster/pool, e.g. atlas/a100."))
    gpu_model = serializers.CharField()
    gpu_count = serializers.IntegerField()
    standard_gpu_hours = serializers.IntegerField(help_text=_("For priority and standard windows."))
    burst_gpu_hours = serializers.IntegerField(help_text=_("The burst reserve: preemptible windows only."))
    allocatable_gpu_hours = serializers.IntegerField(help_text=_("Standard plus burst; the cold standby is left out."))


class CycleDetailSerializer(CycleSerializer):
    capacity = serializers.SerializerMethodField()

    class Meta:
        model = ReviewCycle
        fields: tuple[str, ...] = (*CycleSerializer.Meta.fields, "capacity")
        read_only_fields = fields

    @extend_schema_field(PoolCapacitySerializer(many=True))
    def get_capacity(self, cycle: ReviewCycle) -> list[dict[str, Any]]:
        return [
            {
                "pool": pool.key,
                "gpu_model": pool.gpu_model,
                "gpu_count": pool.gpu_count,
                "standard_gpu_hours": capacity.standard_gpu_hours,
                "burst_gpu_hours": capacity.burst_gpu_hours,
                "allocatable_gpu_hours": capacity.allocatable_gpu_hours,
            }
            for pool, capacity in allocation_selectors.pool_week_capacity_list(hours=cycle.hours)
        ]


# ---------------------------------------------------------------------------------------------
# Requests and their evidence


class UsageReportSerializer(serializers.ModelSerializer):
    class Meta:
        model = UsageReport
        fields = ("gpu_hours_granted", "gpu_hours_used", "mean_utilization_pct", "notes")


class ImpactForecastSerializer(serializers.ModelSerializer):
    class Meta:
        model = ImpactForecast
        fields = ("kind", "estimated_value", "value_unit", "confidence", "narrative")


class AlternativeSerializer(serializers.ModelSerializer):
    class Meta:
        model = Alternative
        fields = ("id", "description", "gpu_hours", "quality_change", "cost_estimate", "feasible")


class DecisionSerializer(serializers.ModelSerializer):
    outcome = serializers.ChoiceField(choices=DecisionOutcome.choices, read_only=True)

    class Meta:
        model = Decision
        fields = (
            "outcome",
            "requested_gpu_count",
            "granted_gpu_count",
            "alternative",
            "alternative_description",
            "alternative_gpu_hours",
            "rationale",
            "exception_reason",
            "decided_by_name",
            "decided_at",
            "team_name",
            "request_title",
            "cycle_week",
            "priority_rank",
            "weighted_total",
        )
        read_only_fields = fields


class PlacedWindowSerializer(serializers.Serializer):
    """One window the current plan holds for the request (or the team)."""

    id = serializers.IntegerField()
    week = serializers.CharField()
    plan_version = serializers.IntegerField()
    pool = serializers.CharField(help_text=_("cluster/pool, e.g. atlas/a100."))
    gpu_model = serializers.CharField()
    gpu_count = serializers.IntegerField()
    start = serializers.DateTimeField(help_text=_("UTC, ISO 8601."))
    end = serializers.DateTimeField(help_text=_("UTC, ISO 8601."))
    tier = serializers.ChoiceField(choices=WindowTier.choices)
    gpu_hours = serializers.IntegerField()
    request_id = serializers.IntegerField(allow_null=True)
    text = serializers.CharField(help_text=_('As every page says it: "16 A100, Wed 12:00–Fri 04:00, standard".'))


def placed_window_data(*, window: AllocationWindow, plan_version: int, week_start: datetime) -> dict[str, Any]:
    return {
        "id": window.pk,
        "week": window.week,
        "plan_version": plan_version,
        "pool": window.pool.key,
        "gpu_model": window.pool.gpu_model,
        "gpu_count": window.gpu_count,
        "start": window.start,
        "end": window.end,
        "tier": window.tier,
        "gpu_hours": round(window.gpu_hours),
        "request_id": window.request_ref,
        "text": placement_text(
            gpu_count=window.gpu_count, gpu_model=window.pool.gpu_model, start=window.start, end=window.end,
            tier=window.tier, week_start=week_start,
        ),
    }


class TeamWindowQuerySerializer(serializers.Serializer):
    week = serializers.CharField(
        required=False, validators=[validate_iso_week], help_text=_("ISO week, e.g. 2026-W49 (default: every "
                                                                     "week whose plan has not ended).")
    )


class PlacementSerializer(serializers.Serializer):
    """Decided and placed: the committee's decision, the current plan's windows for it, and the difference."""

    status = serializers.ChoiceField(
        choices=selectors.PlacementStatus.choices,
        help_text=_("as_decided, shortened, preemptible (demoted to the burst reserve), not_placed, "
                    "not_published, not_recorded (the week's plan holds no record of the request), "
                    "not_granted (a deferral or rejection) or undecided."),
    )
    status_label = serializers.CharField(help_text=_('The difference in words: "shortened (6 of 16 GPUs)".'))
    summary = serializers.CharField(help_text=_('"Grant 16 → placed 6 (shortened)", as the team portal says.'))
    shortened = serializers.BooleanField()
    preemptible = serializers.BooleanField()
    decided_outcome = serializers.ChoiceField(choices=DecisionOutcome.choices)
    decided_gpu_count = serializers.IntegerField(allow_null=True)
    decided_gpu_hours = serializers.IntegerField(allow_null=True, help_text=_("GPUs decided × duration."))
    plan_week = serializers.CharField(allow_null=True)
    plan_version = serializers.IntegerField(allow_null=True)
    placed_gpu_count = serializers.IntegerField(help_text=_("The most GPUs held at once; 0 when not placed."))
    placed_gpu_hours = serializers.IntegerField()
    windows = PlacedWindowSerializer(many=True)
    explanation = serializers.CharField(allow_blank=True, help_text=_("The engine's explanation, in words."))
    reasons = serializers.ListField(
        child=serializers.DictField(), help_text=_("The engine's reason codes and parameters (docs/engine.md).")
    )


def placement_data(outcome: selectors.RequestOutcome) -> dict[str, Any] | None:
    """A request's outcome as `PlacementSerializer` shows it; None while the viewer may not see the decision."""
    decided, placed = outcome.decided, outcome.placed
    if decided is None:
        return None
    return {
        "status": str(outcome.status),
        "status_label": outcome.status_label,
        "summary": outcome.summary,
        "shortened": outcome.shortened,
        "preemptible": outcome.preemptible,
        "decided_outcome": decided.outcome,
        "decided_gpu_count": decided.gpu_count,
        "decided_gpu_hours": decided.gpu_hours,
        "plan_week": placed.week if placed else None,
        "plan_version": placed.version if placed else None,
        "placed_gpu_count": placed.gpu_count if placed else 0,
        "placed_gpu_hours": placed.gpu_hours if placed else 0,
        "windows": [
            placed_window_data(window=w.window, plan_version=placed.version, week_start=placed.week_start)
            for w in placed.windows
        ] if placed else [],
        "explanation": outcome.reason,
        "reasons": placed.reasons if placed else [],
    }


class RequestSerializer(serializers.ModelSerializer):
    team: serializers.SlugRelatedField[Team] = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    team_name = serializers.CharField(source="team.name", read_only=True)
    cycle = serializers.CharField(source="cycle.week", read_only=True)
    status = serializers.ChoiceField(choices=RequestStatus.choices, read_only=True)
    requested_gpu_hours = serializers.IntegerField(read_only=True)
    usage_report = UsageReportSerializer(read_only=True, allow_null=True)
    impact_forecast = ImpactForecastSerializer(read_only=True, allow_null=True)
    alternatives = AlternativeSerializer(many=True, read_only=True)
    decision = serializers.SerializerMethodField()
    placement = serializers.SerializerMethodField()

    class Meta:
        model = GpuRequest
        fields = (
            "id",
            "team",
            "team_name",
            "cycle",
            *REQUEST_FIELDS,
            "requested_gpu_hours",
            "status",
            "submitted_at",
            "usage_report",
            "impact_forecast",
            "alternatives",
            "decision",
            "placement",
        )
        read_only_fields = fields

    @extend_schema_field(DecisionSerializer(allow_null=True))
    def get_decision(self, gpu_request: GpuRequest) -> dict[str, Any] | None:
        """The committee sees the decision as it is entered; the team once the week is finalized."""
        decision = getattr(gpu_request, "decision", None)
        request = self.context.get("request")
        if decision is None or request is None:
            return None
        if not selectors.decision_visible_to(viewer=request.user, gpu_request=gpu_request):
            return None
        return DecisionSerializer(decision).data

    @extend_schema_field(PlacementSerializer(allow_null=True))
    def get_placement(self, gpu_request: GpuRequest) -> dict[str, Any] | None:
        """Decided and placed, visible when the decision is. A list's view reads them in bulk into the context."""
        outcomes = self.context.get("outcomes")
        request = self.context.get("request")
        if outcomes is None:
            viewer = request.user if request is not None else None
            if viewer is None:
                return None
            outcomes = selectors.request_outcome_map(requests=[gpu_request], viewer=viewer)
        outcome = outcomes.get(gpu_request.pk)
        return placement_data(outcome) if outcome is not None else None


class UsageReportInputSerializer(StrictJSONMixin, UsageReportSerializer):
    pass


class ImpactForecastInputSerializer(StrictJSONMixin, ImpactForecastSerializer):
    pass


class AlternativeInputSerializer(StrictJSONMixin, AlternativeSerializer):
    pass


class RequestInputSerializer(StrictJSONMixin, serializers.ModelSerializer):
    """What a team sends to file or replace a request. The team comes from the URL; status from the services."""

    usage_report = UsageReportInputSerializer()
    impact_forecast = ImpactForecastInputSerializer()
    # DRF passes max_length on to the ListSerializer that many=True makes; the stubs do not list it.
    alternatives = AlternativeInputSerializer(
        many=True, required=False, max_length=limits.MAX_ALTERNATIVES  # type: ignore[call-arg]
    )

    class Meta:
        model = GpuRequest
        fields = (*REQUEST_FIELDS, "usage_report", "impact_forecast", "alternatives")
        validators: list[Any] = []  # the services check every invariant, with the team and cycle they know

    def to_internal_value(self, data: Any) -> Any:
        """StrictJSONMixin stops at a value of the wrong JSON type; the other fields' own errors are added to its
        answer, so one 400 lists every error of the body."""
        try:
            return super().to_internal_value(data)
        except serializers.ValidationError as exc:
            if not (isinstance(data, Mapping) and isinstance(exc.detail, dict)):
                raise
            rest = {key: value for key, value in data.items() if key not in exc.detail}
            if len(rest) == len(data):
                raise
            try:
                super().to_internal_value(rest)
            except serializers.ValidationError as more:
                if isinstance(more.detail, dict):
                    extra = {key: value for key, value in more.detail.items() if key not in exc.detail}
                    raise serializers.ValidationError({**exc.detail, **extra}) from None
            raise

    def partial_values(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The request's fields, and each alternative's GPU-hours, that pass their own checks in a body that
        failed others: the rules that span fields (services.request_problems) are checked on them too."""
        data = self.initial_data if isinstance(getattr(self, "initial_data", None), Mapping) else {}
        values: dict[str, Any] = {}
        for name in REQUEST_FIELDS:
            field = self.fields[name]
            try:
                values[name] = field.run_validation(field.get_value(data))
            except (serializers.ValidationError, DjangoValidationError, SkipField):
                continue
        alternatives: list[dict[str, Any]] = []
        raw = data.get("alternatives")
        if isinstance(raw, list):
            hours_field = AlternativeInputSerializer().fields["gpu_hours"]
            for item in raw[: limits.MAX_ALTERNATIVES]:
                row: dict[str, Any] = {}
                if isinstance(item, Mapping) and "gpu_hours" in item:
                    with contextlib.suppress(serializers.ValidationError, DjangoValidationError):
                        row["gpu_hours"] = hours_field.run_validation(item["gpu_hours"])
                alternatives.append(row)
        return values, alternatives

    def service_kwargs(self) -> dict[str, Any]:
        data = dict(self.validated_data)
        usage = data.pop("usage_report")
        forecast = data.pop("impact_forecast")
        alternatives = data.pop("alternatives", [])
        return {"fields": data, "usage": usage, "forecast": forecast, "alternatives": alternatives}


# ---------------------------------------------------------------------------------------------
# Scores and decisions


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
    rationale = serializers.CharField(max_length=limits.RATIONALE_MAX_LENGTH)
    exception = serializers.CharField(
        required=False, allow_blank=True, max_length=limits.REASON_MAX_LENGTH,
        help_text=_("Only to grant a request that is not ranked (too few scores): the chair's stated exception to "
                    "the rubric, archived with the decision."),
    )


# ---------------------------------------------------------------------------------------------
# Ranking and what-if


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
    decision = serializers.SerializerMethodField()

    def get_fairness_explanation(self, row: selectors.ReviewRow) -> str:
        return row.fair_share.explanation() if row.fair_share else ""

    @extend_schema_field(SuggestionSerializer(many=True))
    def get_suggestions(self, row: selectors.ReviewRow) -> list[dict[str, Any]]:
        return [
            {"criterion": s.criterion, "value": s.value, "explanation": s.explanation}
            for s in row.suggestions.values()
        ]

    @extend_schema_field(DecisionSerializer(allow_null=True))
    def get_decision(self, row: selectors.ReviewRow) -> dict[str, Any] | None:
        return DecisionSerializer(row.decision).data if row.decision else None


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
