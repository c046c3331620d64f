"""Shapes of the scheduler API: explicit input serializers, and the window as schedulers read it."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from django.utils.translation import gettext_lazy as _
from rest_framework import serializers

from allocations.models import AgentAction, AgentActionKind, SyncState, UsageRecord, WindowTier
from core.datetimes import UTCDateTimeField
from core.serializers import StrictIntegerField, StrictJSONMixin

# The columns `WindowSerializer` reads, in order (a values_list row of selectors.window_snapshot).
WINDOW_COLUMNS = ("id", "week", "pool_id", "team_id", "gpu_count", "start", "end", "tier", "request_ref",
                  "standby_gpu_count", "withdrawn_seq")


@functools.lru_cache(maxsize=4096)
def utc_iso(moment: datetime) -> str:
    """ISO 8601 in UTC with a 'Z', to the second (windows lie on the engine's hour grid).

    `isoformat` rather than `strftime`, and no conversion of what the database already gives in UTC; and kept: a
    list of 500 windows writes 1,000 of these, of a few dozen hours of one week (docs/benchmarks.md, "Windows API").
    Two equal instants are the same text, whatever their time zones, so a kept answer is always the right one."""
    offset = moment.utcoffset()
    if offset is None or offset:
        moment = moment.astimezone(UTC)
    return moment.isoformat(timespec="seconds")[:19] + "Z"


def window_json(row: tuple[Any, ...], *, cluster: str, versions: Mapping[str, int], reference: Any) -> dict[str, Any]:
    """One window's JSON from a `WINDOW_COLUMNS` row: `cluster` slug, `versions` week -> plan version, `reference`
    (allocations.selectors.SchedulerReference) its pools, teams, accounts and offers."""
    window_id, week, pool_id, team_id, gpu_count, start, end, tier, request_ref, standby, withdrawn_seq = row
    pool_slug, gpu_model, label, per_node = reference.pools[pool_id]
    team_slug, account = reference.teams[team_id]
    offer = reference.offers.get(window_id) if withdrawn_seq is None else None
    return {
        "id": window_id,
        "plan_version": versions.get(week),
        "cluster": cluster,
        "pool": pool_slug,
        "gpu_model": gpu_model,
        "scheduler_label": label,
        "gpu_count": gpu_count,
        "gpus_per_node": per_node,
        "start": utc_iso(start),
        "end": utc_iso(end),
        "team": team_slug,
        "account": account,
        "department": reference.department_of(team_id),
        "tier": tier,
        "request_id": request_ref,
        "withdrawn": withdrawn_seq is not None,
        "lendable_gpus": offer[0] if offer else 0,
        "lendable_reason": offer[1] if offer else None,
        "standby_gpus": standby,
    }


class WindowRowsSerializer(serializers.ListSerializer):
    """A list of windows: the context read once, not once a row (DRF finds a child's context by walking up to the
    root), for a list of 500."""

    def to_representation(self, data: Any) -> list[dict[str, Any]]:
        context: Mapping[str, Any] = self.context
        cluster, versions, reference = context["cluster"], context["versions"], context["reference"]
        return [window_json(row, cluster=cluster, versions=versions, reference=reference) for row in data]


class WindowSerializer(serializers.Serializer):
    """One window, as the scheduler package parses it (scheduler/src/docket_scheduler/base.py `DesiredWindow`).

    The fields document the shape; `to_representation` builds it straight from a
    `WINDOW_COLUMNS` row and the context (`cluster` slug, `versions` week → plan version,
    `reference` pools/teams/accounts), because a list of 500 windows through 15 DRF fields
    each would cost more than everything else the request does.
    """

    id = serializers.IntegerField()
    plan_version = serializers.IntegerField(help_text=_("The current plan version of the window's week."))
    cluster = serializers.CharField()
    pool = serializers.CharField()
    gpu_model = serializers.CharField()
    scheduler_label = serializers.CharField(allow_blank=True)
    gpu_count = serializers.IntegerField()
    gpus_per_node = serializers.IntegerField()
    start = serializers.DateTimeField(help_text=_("UTC, ISO 8601."))
    end = serializers.DateTimeField(help_text=_("UTC, ISO 8601; the window holds its GPUs while start ≤ t < end."))
    team = serializers.CharField()
    account = serializers.CharField(allow_null=True, help_text=_("The team's scheduler account on the cluster."))
    department = serializers.CharField(
        allow_null=True, help_text=_("The slug of the team's department (cost centre); null when it belongs to none.")
    )
    tier = serializers.ChoiceField(choices=WindowTier.choices)
    request_id = serializers.IntegerField(allow_null=True)
    withdrawn = serializers.BooleanField(
        help_text=_("True only in a `since` list: a newer plan version no longer holds this window.")
    )
    lendable_gpus = serializers.IntegerField(
        min_value=0,
        help_text=_(
            "GPUs of this window the elastic policy offers to preemptible work now (docs/elastic.md): the "
            "owner measured idle, or a quiet standard window at night. 0 when nothing is offered."
        ),
    )
    lendable_reason = serializers.ChoiceField(
        choices=[("idle", "idle"), ("night_open", "night_open")],
        allow_null=True,
        help_text=_("Why the GPUs are offered: `idle` (granted but idle) or `night_open`; null when none are."),
    )
    standby_gpus = serializers.IntegerField(
        min_value=0,
        help_text=_(
            "GPUs of this preemptible window the chair let it take from the pool's cold standby (an emergency, "
            "docs/emergencies.md): the scheduler wakes that many of the standby for it. 0 for every other window."
        ),
    )

    class Meta:
        list_serializer_class = WindowRowsSerializer

    def to_representation(self, instance: Any) -> dict[str, Any]:
        context: Mapping[str, Any] = self.context
        return window_json(instance, cluster=context["cluster"], versions=context["versions"],
                           reference=context["reference"])


class CommitmentSerializer(serializers.Serializer):
    """A later week of a run over several weeks (docs/multi-week-runs.md), as the windows list shows it beside the
    windows: GPUs the run holds from the week's first hour to its last, before that week's new requests. Built from
    a `COMMITMENT_COLUMNS` row and the windows list's `reference`, as `WindowSerializer` is."""

    id = serializers.IntegerField()
    week = serializers.CharField(help_text=_("The ISO week the run continues in."))
    cluster = serializers.CharField()
    pool = serializers.CharField()
    gpu_count = serializers.IntegerField()
    start = serializers.DateTimeField(help_text=_("UTC, ISO 8601: the week's first hour, where the run's window "
                                                  "of the week before ends."))
    end = serializers.DateTimeField(help_text=_("UTC, ISO 8601: the week's end."))
    team = serializers.CharField()
    account = serializers.CharField(allow_null=True)
    department = serializers.CharField(allow_null=True, help_text=_("The slug of the team's department, or null."))
    state = serializers.ChoiceField(
        choices=[(s, s) for s in ("committed", "confirmed", "withheld", "released")],
        help_text=_("committed: promised by the run's first week; confirmed: continues on the evidence; withheld: "
                    "the committee decides at the week's review; released: no longer held."),
    )
    request_id = serializers.IntegerField(help_text=_("The run's request (of its first week)."))
    week_of_run = serializers.IntegerField(help_text=_("2 for the run's second week."))
    run_weeks = serializers.IntegerField()

    def to_representation(self, instance: Any) -> dict[str, Any]:
        commitment_id, week, pool_id, team_id, gpu_count, start, end, state, request_ref, number, weeks = instance
        context: Mapping[str, Any] = self.context
        team_slug, account = context["reference"].teams[team_id]
        return {
            "id": commitment_id, "week": week, "cluster": context["cluster"],
            "pool": context["reference"].pools[pool_id][0], "gpu_count": gpu_count, "start": utc_iso(start),
            "end": utc_iso(end), "team": team_slug, "account": account,
            "department": context["reference"].department_of(team_id), "state": state, "request_id": request_ref,
            "week_of_run": number, "run_weeks": weeks,
        }


class WindowListSerializer(serializers.Serializer):
    """The windows list's envelope (documentation only)."""

    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    cursor = serializers.IntegerField(help_text=_("Change sequence of this snapshot: pass it as `since` next time."))
    plan_version = serializers.IntegerField(allow_null=True)
    results = WindowSerializer(many=True)
    commitments = CommitmentSerializer(
        many=True,
        help_text=_("The later weeks of runs in scope (the week asked for, or not ended), every state, on every "
                    "page; read live like `account`: they do not move the cursor, and the ETag changes with them."),
    )


class ClusterPoolSerializer(serializers.Serializer):
    slug = serializers.CharField()
    gpu_model = serializers.CharField()
    scheduler_label = serializers.CharField(allow_blank=True, help_text=_("E.g. the Slurm feature or GPU type."))
    gpus_per_node = serializers.IntegerField()


class ClusterAccountSerializer(serializers.Serializer):
    team = serializers.CharField(help_text=_("The team's slug."))
    account = serializers.CharField(help_text=_("The team's scheduler account on the cluster."))
    fair_share_weight = serializers.IntegerField(
        help_text=_("The team's fair-share weight: its share within its department (or the top level).")
    )
    department = serializers.CharField(
        allow_null=True, help_text=_("The slug of the team's department; null when it belongs to none.")
    )
    department_weight = serializers.IntegerField(
        allow_null=True, help_text=_("The department's fair-share weight at the top level; null without one.")
    )


class DepartmentTeamSerializer(serializers.Serializer):
    team = serializers.CharField(help_text=_("The team's slug."))
    fair_share_weight = serializers.IntegerField(help_text=_("The team's fair-share weight within its department."))


class DepartmentSerializer(serializers.Serializer):
    slug = serializers.CharField(help_text=_("The department's slug."))
    fair_share_weight = serializers.IntegerField(help_text=_("The department's fair-share weight at the top level."))
    teams = DepartmentTeamSerializer(many=True)


class ClusterReferenceSerializer(serializers.Serializer):
    """What a collector needs to name a cluster's usage: its pools, and each team's scheduler account."""

    cluster = serializers.CharField()
    pools = ClusterPoolSerializer(many=True)
    accounts = ClusterAccountSerializer(many=True)
    departments = DepartmentSerializer(many=True, help_text=_("Each department with its teams (every team in one, "
                                                              "with or without an account on the cluster)."))


class WindowPageSerializer(serializers.Serializer):
    """Paging of the windows list: keyset on the window id, so pages stay exact as windows end."""

    after = StrictIntegerField(required=False, min_value=0)
    before = StrictIntegerField(required=False, min_value=1)
    page_size = StrictIntegerField(required=False, min_value=1, max_value=1000)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if "after" in attrs and "before" in attrs:
            raise serializers.ValidationError(_("Use either after or before."))
        return attrs


# Numbers past their column's range are refused here (400) rather than overflow the database (500).
# Window ids are 64-bit (BigAutoField).
MAX_WINDOW_ID = 2**63 - 1
MAX_NODES = 2**31 - 1  # the column is a PositiveIntegerField (32 bits)


class SyncStatusItemSerializer(StrictJSONMixin, serializers.Serializer):
    window = serializers.IntegerField(min_value=1, max_value=MAX_WINDOW_ID)
    state = serializers.ChoiceField(choices=SyncState.choices)
    nodes_requested = serializers.IntegerField(min_value=0, max_value=MAX_NODES)
    nodes_reserved = serializers.IntegerField(min_value=0, max_value=MAX_NODES)
    message = serializers.CharField(allow_blank=True, max_length=2000, required=False, default="")


class SyncStatusReportSerializer(StrictJSONMixin, serializers.Serializer):
    # DRF passes max_length on to the ListSerializer that many=True makes; the stubs do not list it.
    statuses = SyncStatusItemSerializer(many=True, max_length=10000)  # type: ignore[call-arg]


class SyncStatusResultSerializer(serializers.Serializer):
    recorded = serializers.IntegerField()


class UsageInputSerializer(StrictJSONMixin, serializers.Serializer):
    """What a scheduler reports; the cluster is its token's, never a field."""

    team = serializers.SlugField()
    pool = serializers.SlugField(help_text=_("A pool of the token's cluster."))
    window = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, max_value=MAX_WINDOW_ID, default=None
    )
    period_start = UTCDateTimeField()
    period_end = UTCDateTimeField()
    gpu_hours_used = serializers.DecimalField(max_digits=12, decimal_places=2, min_value=0)
    mean_utilization_pct = serializers.DecimalField(max_digits=5, decimal_places=1, min_value=0, max_value=100)
    mean_queue_wait_minutes = serializers.DecimalField(
        max_digits=10, decimal_places=1, min_value=0, required=False, default=Decimal(0)
    )
    idempotency_key = serializers.CharField(
        max_length=100, help_text=_("Chosen by the client: the same key again changes nothing.")
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["period_end"] <= attrs["period_start"]:
            raise serializers.ValidationError({"period_end": [_("The period must end after it starts.")]})
        return attrs


class UsageRecordSerializer(serializers.ModelSerializer):
    cluster = serializers.CharField(source="pool.cluster.slug")
    pool = serializers.CharField(source="pool.slug")
    team = serializers.CharField(source="team.slug")
    window = serializers.IntegerField(source="window_id", allow_null=True)

    class Meta:
        model = UsageRecord
        fields = (
            "id",
            "cluster",
            "pool",
            "team",
            "window",
            "period_start",
            "period_end",
            "gpu_hours_used",
            "mean_utilization_pct",
            "mean_queue_wait_minutes",
            "idempotency_key",
            "reported_by",
            "reported_at",
        )
        read_only_fields = fields


class PoolSerializer(serializers.Serializer):
    """A GPU pool, as a script filing a request needs it: the id to send as `pool`, its GPUs and reserves."""

    id = serializers.IntegerField(help_text=_("Send this as a request's `pool`."))
    key = serializers.CharField(help_text=_("cluster/pool, e.g. atlas/a100."))
    cluster = serializers.CharField(help_text=_("The cluster's slug."))
    slug = serializers.CharField()
    gpu_model = serializers.CharField()
    gpu_count = serializers.IntegerField()
    gpus_per_node = serializers.IntegerField()
    burst_reserve_pct = serializers.IntegerField(help_text=_("Held back for preemptible windows."))
    standby_pct = serializers.IntegerField(help_text=_("The cold standby, never placed by the weekly plan."))
    fast_lane_pct = serializers.IntegerField(
        help_text=_("The fast-lane reserve, never placed by the weekly plan: small requests granted on submission."))
    burst_reserve_gpus = serializers.IntegerField()
    standby_gpus = serializers.IntegerField()
    fast_lane_gpus = serializers.IntegerField()
    standard_gpus = serializers.IntegerField(help_text=_("What priority and standard windows can hold at once."))
    standard_gpu_hours_per_week = serializers.IntegerField(help_text=_("Over a week of 168 hours."))
    burst_gpu_hours_per_week = serializers.IntegerField(help_text=_("Over a week of 168 hours."))


class AgentActionInputSerializer(StrictJSONMixin, serializers.Serializer):
    """One action the elastic agent took (docket_scheduler.elastic_agent); the cluster is its token's."""

    idempotency_key = serializers.CharField(
        max_length=100, help_text=_("Chosen by the agent, one per action: the same key again changes nothing.")
    )
    kind = serializers.ChoiceField(choices=AgentActionKind.choices)
    pool = serializers.SlugField(help_text=_("A pool of the token's cluster."))
    window = serializers.IntegerField(required=False, allow_null=True, min_value=1, max_value=MAX_WINDOW_ID,
                                      default=None)
    team = serializers.SlugField(required=False, allow_null=True, default=None)
    gpus = StrictIntegerField(min_value=0, max_value=1_000_000, help_text=_("The GPUs the action moved."))
    acted_at = UTCDateTimeField()
    utilization_pct = serializers.DecimalField(max_digits=5, decimal_places=1, min_value=0, max_value=100,
                                               required=False, allow_null=True, default=None)
    queue_wait_minutes = serializers.DecimalField(max_digits=10, decimal_places=1, min_value=0, required=False,
                                                  allow_null=True, default=None)
    span_minutes = StrictIntegerField(min_value=0, max_value=10_080, help_text=_("The span the measurement covers."))
    measured_by = serializers.CharField(max_length=40, help_text=_('"prometheus" or "slurm".'))
    policy_version = StrictIntegerField(min_value=1, max_value=1_000_000)
    applied = serializers.CharField(max_length=1000, help_text=_("What the agent changed in the scheduler."))


class AgentActionSerializer(serializers.ModelSerializer):
    cluster = serializers.CharField(source="cluster.slug")
    pool = serializers.CharField(source="pool.slug")
    team = serializers.CharField(source="team.slug", allow_null=True, default=None)
    window = serializers.IntegerField(source="window_id", allow_null=True)

    class Meta:
        model = AgentAction
        fields = ("id", "cluster", "pool", "window", "team", "kind", "gpus", "acted_at", "utilization_pct",
                  "queue_wait_minutes", "span_minutes", "measured_by", "policy_version", "applied",
                  "idempotency_key", "reported_by", "received_at")


class ElasticPolicyPoolSerializer(serializers.Serializer):
    pool = serializers.CharField()
    gpu_count = serializers.IntegerField()
    scheduler_label = serializers.CharField()
    burst_reserve_gpus = serializers.IntegerField()
    standby_gpus = serializers.IntegerField()


class ElasticPolicyParametersSerializer(serializers.Serializer):
    idle_threshold_pct = serializers.IntegerField()
    idle_span_minutes = serializers.IntegerField()
    offer_idle_to_preemptible = serializers.BooleanField()
    promote_utilization_pct = serializers.IntegerField()
    promote_queue_wait_minutes = serializers.IntegerField()
    recent_span_minutes = serializers.IntegerField()
    night_start = serializers.CharField()
    night_end = serializers.CharField()
    night_utilization_pct = serializers.IntegerField()
    standby_wake_minutes = serializers.IntegerField()


class ElasticPolicySerializer(serializers.Serializer):
    """The elastic policy in force, as the agent next to the scheduler reads it."""

    cluster = serializers.CharField()
    version = serializers.IntegerField()
    effective_week = serializers.CharField(allow_null=True)
    time_zone = serializers.CharField()
    parameters = ElasticPolicyParametersSerializer()
    pools = ElasticPolicyPoolSerializer(many=True)
