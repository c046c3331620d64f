"""The data migration carries the old versions into the one store: every week reads the values it read before."""

from __future__ import annotations

from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from allocations.elastic.selectors import elastic_policy_current, policy_in_force
from allocations.models import ElasticAction
from committee import scoring
from committee.models import CycleStatus
from committee.selectors import rubric_for_week
from committee.weeks import cycle_schedule
from governed.models import PolicyChange, PolicyValue
from governed.params import as_int
from governed.selectors import policy_value, policy_values
from policy.models import ProposalStatus
from tests.conftest import World

BEFORE = ("policy", "0002_proposal_rubric_applied_at")
LATEST = ("committee", "0020_remove_rubricversion")
ELASTIC_LATEST = ("allocations", "0014_pool_reserves_in_the_store")
ELASTIC_ACTIONS_NAMED = ("allocations", "0012_elasticaction_policy_version")
OLD_COMMITTEE = ("committee", "0018_decision_rationale_text_requestevent_detail_text")
LAUNCH = "Launch dates first."


def _migrate(target: tuple[str, str]) -> MigrationExecutor:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate([target])
    return executor


def _rubric(apps: object, number: int, weights: tuple[int, int, int, int], urgency: str) -> object:
    RubricVersion = apps.get_model("committee", "RubricVersion")  # type: ignore[attr-defined]
    first = RubricVersion.objects.get(number=1)
    return RubricVersion.objects.create(
        number=number, reason=f"Version {number}", author_name="Chair",
        business_impact_weight_pct=weights[0], feasibility_weight_pct=weights[1], urgency_weight_pct=weights[2],
        fairness_weight_pct=weights[3],
        **{f"{c}_guidance": getattr(first, f"{c}_guidance") for c in scoring.CRITERIA if c != "urgency"},
        urgency_guidance=urgency,
    )


def _cycle(apps: object, week: str, rubric: object) -> None:
    apps.get_model("committee", "ReviewCycle").objects.create(  # type: ignore[attr-defined]
        week=week, status=CycleStatus.FINALIZED, rubric=rubric, **cycle_schedule(week))


@pytest.mark.django_db(transaction=True)
def test_the_old_versions_read_the_same_per_week_from_the_store(world: World) -> None:
    executor = _migrate(BEFORE)  # and committee's removal of GovernanceVersion, which comes after it
    assert not PolicyChange.objects.exists()
    old = executor.loader.project_state(("committee", "0017_decision_exception_and_corrected_alternative"))
    GovernanceVersion = old.apps.get_model("committee", "GovernanceVersion")
    rubric_apps = executor.loader.project_state([OLD_COMMITTEE, BEFORE]).apps
    # The rubric: W47 pinned version 1, W48 version 2 (its urgency guidance new), the world's W50 version 1; version 3
    # (version 2's guidance) is pinned by no cycle.
    first = rubric_apps.get_model("committee", "RubricVersion").objects.get(number=1)
    charter_urgency = first.urgency_guidance
    _cycle(rubric_apps, "2026-W47", first)
    version_2 = _rubric(rubric_apps, 2, (50, 20, 20, 10), LAUNCH)
    _cycle(rubric_apps, "2026-W48", version_2)
    rubric_apps.get_model("committee", "ReviewCycle").objects.filter(pk=world.cycle.pk).update(rubric=first)
    _rubric(rubric_apps, 3, (45, 25, 20, 10), LAUNCH)
    # The quorum: 3 from W48.
    GovernanceVersion.objects.create(
        number=2, effective_week="2026-W48", effective_monday=date(2026, 11, 23), score_quorum=3,
        fairshare_half_life_weeks=2.0, fairshare_trailing_weeks=8, reason="Three scores", author_name="Chair")
    # The elastic policy: version 2 saved in W48, and an action it started in W48 (the versions' own rows).
    elastic_apps = executor.loader.project_state([ELASTIC_ACTIONS_NAMED, BEFORE]).apps
    version_2 = elastic_apps.get_model("allocations", "ElasticPolicyVersion").objects.create(
        number=2, idle_threshold_pct=30, idle_span_hours=6, reason="Idle at 30 %", author_name="Chair",
        created_at=datetime(2026, 11, 25, 12, tzinfo=ZoneInfo("UTC")))
    elastic_apps.get_model("allocations", "ElasticAction").objects.create(
        kind="promote", pool_id=world.a100.pk, gpus=4, utilization_pct=90,
        span_start=datetime(2026, 11, 26, 9, tzinfo=UTC), span_end=datetime(2026, 11, 26, 10, tzinfo=UTC),
        policy=version_2,
        started_at=datetime(2026, 11, 26, 10, tzinfo=UTC), explanation="Promoted under version 2")
    # A pool's standby changed in the admin in W49 (the world was built in W49), with its history row.
    old_pools = elastic_apps.get_model("allocations", "GpuPool")
    old_pools.objects.filter(pk=world.a100.pk).update(standby_pct=15)
    pool = old_pools.objects.get(pk=world.a100.pk)
    history = elastic_apps.get_model("allocations", "HistoricalGpuPool")
    last = history.objects.filter(id=pool.pk).order_by("-history_date").first()
    history.objects.create(**{f.attname: getattr(last, f.attname) for f in history._meta.concrete_fields
                              if f.attname != "history_id"} | {"standby_pct": 15, "history_type": "~",
                                                               "history_date": last.history_date.replace(hour=11)})
    # An adopted proposal for W52, not yet applied.
    Proposal = elastic_apps.get_model("policy", "Proposal")
    ProposalChange = elastic_apps.get_model("policy", "ProposalChange")
    proposal = Proposal.objects.create(
        title="Bigger burst", reason="Bursts", expected_effect="Fewer waits", status=ProposalStatus.ADOPTED,
        effective_week="2026-W52", effective_monday=date(2026, 12, 21), decided_by_name="Chair",
        decided_at=datetime(2026, 12, 1, tzinfo=ZoneInfo("UTC")), decision_reason="Agreed", proposer_name="Lead")
    ProposalChange.objects.create(proposal=proposal, key="pool.a100.burst_reserve_pct", label="a100 burst reserve",
                                  unit="%", old_value="20", new_value="25")
    span = ProposalChange.objects.create(proposal=proposal, key="elastic.idle_span_hours", label="idle span (hours)",
                                         unit="hours", old_value="6", new_value="2")

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())  # every app's latest: the store alone holds the rules
    executor.loader.build_graph()
    assert {LATEST, ELASTIC_LATEST} <= set(executor.loader.applied_migrations)

    def weights(week: str) -> tuple[int, ...]:
        values = policy_values(week=week, prefix="rubric.")
        return tuple(as_int(values[f"rubric.{c}"]) for c in ("business_impact", "feasibility", "urgency", "fairness"))

    assert weights("2026-W47") == (40, 30, 20, 10)
    assert weights("2026-W48") == weights("2026-W49") == (50, 20, 20, 10)
    assert weights("2026-W50") == (40, 30, 20, 10)
    assert weights("2026-W51") == (45, 25, 20, 10)
    # The guidance too, by the version each cycle pinned; the rubric's reader gives both.
    urgency = [rubric_for_week(week=w).guidance["urgency"] for w in ("2026-W47", "2026-W48", "2026-W50", "2026-W51")]
    assert urgency == [charter_urgency, LAUNCH, charter_urgency, LAUNCH]
    assert rubric_for_week(week="2026-W48").weights == {"business_impact": 50, "feasibility": 20, "urgency": 20,
                                                        "fairness": 10}
    # Week 48's change carries its weights and its guidance together.
    week_48 = PolicyChange.objects.get(effective_week="2026-W48")
    assert {"rubric.business_impact", "rubric_guidance.urgency"} <= set(week_48.values.values_list("key", flat=True))
    assert [policy_value(key="review.quorum", week=w) for w in ("2026-W47", "2026-W48", "2026-W50")] == [2, 3, 3]
    assert [policy_value(key="elastic.idle_threshold_pct", week=w) for w in ("2026-W47", "2026-W48")] == [25, 30]
    # The action names the store's version of the thresholds it started under; its words stay as written.
    week_48_elastic = policy_in_force(now=datetime(2026, 11, 26, 10, tzinfo=UTC))
    assert week_48_elastic.idle_threshold_pct == 30
    action = ElasticAction.objects.get()
    assert action.policy_version == week_48_elastic.version > 1
    assert action.explanation == "Promoted under version 2"
    assert elastic_policy_current().policy.idle_threshold_pct == 30
    # The spans in minutes (policy 0008), each week the same span as before: 4 h, 6 h from W48, 2 h from W52.
    spans = [policy_value(key="elastic.idle_span_minutes", week=w) for w in ("2026-W47", "2026-W48", "2026-W52")]
    assert spans == [240, 360, 120]
    assert policy_value(key="elastic.recent_span_minutes", week="2026-W47") == 60
    assert not PolicyValue.objects.filter(key__endswith="_hours").exists()
    span.refresh_from_db()
    assert (span.key, span.old_value, span.new_value, span.unit) == ("elastic.idle_span_minutes", "360", "120",
                                                                     "minutes")
    standby = "pool.atlas/a100.standby_pct"
    assert [policy_value(key=standby, week=w) for w in ("2026-W48", "2026-W49")] == [10, 15]
    burst = "pool.atlas/a100.burst_reserve_pct"
    assert [policy_value(key=burst, week=w) for w in ("2026-W51", "2026-W52")] == [20, 25]
    # The proposal's week is its substantive change; the changes made outside the lab are recorded as exempt.
    week_52 = PolicyChange.objects.get(effective_week="2026-W52")
    assert week_52.exempt_reason == "" and week_52.source_ref == f"proposal:{proposal.pk}"
    assert PolicyChange.objects.get(effective_week="2026-W48").exempt_reason != ""
    assert PolicyChange.objects.get(number=1).effective_monday is None
