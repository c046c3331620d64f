"""The rubric (its weights and guidance, and changing them) and the weeks (cycles), as the API reads them."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from allocations import selectors as allocation_selectors
from committee import limits, scoring, selectors
from committee.models import (
    CycleStatus,
    ReviewCycle,
)
from core.serializers import StrictIntegerField, StrictJSONMixin


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
