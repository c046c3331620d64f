"""The shape of a decision record's structured data: what a revision stores as JSON (schema 1).

reports/selectors/records.py builds it from the committee's and allocations' rows;
reports/records.py renders it as Markdown. Every value is JSON-native and already formatted for
reading (labels, names), so a stored snapshot renders the same forever. Keys marked NotRequired
may be missing or empty in a snapshot; the renderer says so instead of failing.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict


class CycleSnapshot(TypedDict):
    week: str
    status: str
    status_label: str
    starts_at: str | None
    ends_at: str | None
    starts_label: str
    ends_label: str
    finalized_at: str | None
    finalized_label: str
    finalized_by: NotRequired[str]


class CriterionSnapshot(TypedDict):
    key: str
    label: str
    weight_pct: int
    computed: bool


class RubricSnapshot(TypedDict):
    version: int
    criteria: list[CriterionSnapshot]


class ParticipantSnapshot(TypedDict):
    name: str
    scored: int
    decided: int


class RankingRowSnapshot(TypedDict):
    """One request of the week, ranked or not, with its scores and the committee's decision."""

    rank: int | None
    request_id: int | None
    title: str
    team: str
    pool: str
    gpu_count: int
    duration_hours: int
    gpu_hours: int
    scores: dict[str, float | int | None]
    score_counts: dict[str, int]
    total: float | int | None
    decision: str | None
    decision_label: str | None
    granted_gpu_count: int | None
    alternative: NotRequired[str]  # "grant the alternative": the alternative's description
    alternative_gpu_hours: NotRequired[int]
    rationale: str
    decided_by: str


class PoolCapacitySnapshot(TypedDict):
    pool: str
    capacity_gpu_hours: int
    requested_gpu_hours: int
    granted_gpu_hours: int


class WindowSnapshot(TypedDict):
    id: int
    cluster: str
    pool: str
    team: str
    gpu_count: int
    start: str | None
    end: str | None
    start_label: str
    end_label: str
    tier: str
    tier_label: str
    request_id: int | None


class PlanSnapshot(TypedDict):
    version: int
    published_at: str | None
    published_label: str
    published_by: str
    note: str
    windows: list[WindowSnapshot]


class PlanChangesSnapshot(TypedDict):
    """A correction against the version it supersedes."""

    from_version: int
    added: list[WindowSnapshot]
    withdrawn: list[WindowSnapshot]
    carried: int


class DecisionRecordSnapshot(TypedDict):
    """A week's decision: rubric, who took part, the ranking with rationale, capacity, the published plan."""

    schema: int
    cycle: CycleSnapshot
    rubric: RubricSnapshot
    quorum: NotRequired[int]
    participants: NotRequired[list[ParticipantSnapshot]]
    outcome_counts: NotRequired[dict[str, int]]
    outcome_labels: list[list[str]]
    ranking: NotRequired[list[RankingRowSnapshot]]
    capacity: NotRequired[list[PoolCapacitySnapshot]]
    plan: NotRequired[PlanSnapshot | None]
    plan_changes: NotRequired[PlanChangesSnapshot | None]
    previous_record: NotRequired[str | None]
