"""Requests and their evidence (usage, impact forecast, alternatives), decision and placement, as the API has them."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.fields import SkipField

from allocations.explanations import placement_text
from allocations.models import AllocationWindow, Team, WindowTier
from committee import limits, selectors
from committee.models import (
    Alternative,
    Decision,
    DecisionOutcome,
    GpuRequest,
    ImpactForecast,
    RequestPoolOption,
    RequestStatus,
    UsageReport,
)
from committee.services import REQUEST_FIELDS
from core.isoweek import validate_iso_week
from core.serializers import StrictJSONMixin


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


class PoolOptionSerializer(serializers.ModelSerializer):
    """Another pool the request may run on, with its conversion (docs/engine.md, "Either pool")."""

    pool_key = serializers.CharField(source="pool.key", read_only=True, help_text=_("The pool as cluster/slug."))

    class Meta:
        model = RequestPoolOption
        fields = ("pool", "pool_key", "gpu_count", "duration_hours")


class PoolOptionInputSerializer(StrictJSONMixin, serializers.ModelSerializer):
    """One other pool as a team sends it: the pool's id, and the GPUs and hours there (left out: the conversion
    offered from the pools' billing weights)."""

    gpu_count = serializers.IntegerField(required=False, min_value=1)
    duration_hours = serializers.IntegerField(required=False, min_value=1)

    class Meta:
        model = RequestPoolOption
        fields = ("pool", "gpu_count", "duration_hours")


class DecisionSerializer(serializers.ModelSerializer):
    outcome = serializers.ChoiceField(choices=DecisionOutcome.choices, read_only=True)
    weeks_granted = serializers.IntegerField(
        read_only=True, help_text=_("The weeks of the request's run the decision places: 0 for a deferral or a "
                                    "rejection, else its first weeks or the whole run (run_weeks).")
    )

    class Meta:
        model = Decision
        fields = (
            "outcome",
            "requested_gpu_count",
            "granted_gpu_count",
            "weeks_granted",
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


WEEKLY_GPU_COUNTS_HELP = _("A run's GPUs per week, its first week first (the first equal to gpu_count, one count for "
                           "each of run_weeks, each at most the pool's GPUs); empty: the same GPUs every week.")


class JSONWholeNumberField(serializers.IntegerField):
    """An integer that is a JSON number in the body: a string or a boolean is refused, as StrictJSONMixin refuses
    them for a field of its own (it checks only the list around this one)."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise serializers.ValidationError(str(_("Incorrect type: expected an integer.")), code="invalid")
        return super().to_internal_value(data)


def weekly_gpu_counts_field(**kwargs: Any) -> serializers.ListField:
    return serializers.ListField(
        child=JSONWholeNumberField(min_value=1), max_length=52, help_text=WEEKLY_GPU_COUNTS_HELP, **kwargs
    )


class RequestSerializer(serializers.ModelSerializer):
    team: serializers.SlugRelatedField[Team] = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    team_name = serializers.CharField(source="team.name", read_only=True)
    cycle = serializers.CharField(source="cycle.week", read_only=True)
    status = serializers.ChoiceField(choices=RequestStatus.choices, read_only=True)
    requested_gpu_hours = serializers.IntegerField(read_only=True)
    usage_report = UsageReportSerializer(read_only=True, allow_null=True)
    impact_forecast = ImpactForecastSerializer(read_only=True, allow_null=True)
    alternatives = AlternativeSerializer(many=True, read_only=True)
    pool_options = PoolOptionSerializer(many=True, read_only=True)
    weekly_gpu_counts = weekly_gpu_counts_field(read_only=True)
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
            "pool_options",
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
    pool_options = PoolOptionInputSerializer(
        many=True, required=False, max_length=limits.MAX_POOL_OPTIONS  # type: ignore[call-arg]
    )
    weekly_gpu_counts = weekly_gpu_counts_field(required=False)

    class Meta:
        model = GpuRequest
        fields = (*REQUEST_FIELDS, "usage_report", "impact_forecast", "alternatives", "pool_options")
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
        pool_options = data.pop("pool_options", None)
        kwargs = {"fields": data, "usage": usage, "forecast": forecast, "alternatives": alternatives}
        if pool_options is not None:
            kwargs["pool_options"] = [dict(row) for row in pool_options]
        return kwargs
