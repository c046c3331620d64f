"""The shape of a decision record's structured data: what a revision stores as JSON (schema 1).

reports/selectors/records.py builds it from the committee's and allocations' rows;
reports/records/decision.py renders it as Markdown. Every value is JSON-native and already formatted for
reading (labels, names), so a stored snapshot renders the same forever; beside each label Docket writes is the
code it is written from (a status, an outcome, a tier, a placement's parameters), so it renders in another
language too. Keys marked NotRequired may be missing or empty in a snapshot; the renderer says so instead of
failing.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict


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
    exception: NotRequired[str]  # a grant below quorum: the chair's stated exception to the rubric
    decided_by: str
    # Decided and placed (committee.selectors.request_outcome_map), as published; missing in older records.
    decided_gpu_hours: NotRequired[int | None]
    placement: NotRequired[str]  # PlacementStatus value: as_decided, shortened, preemptible, not_placed, ...
    placement_label: NotRequired[str]  # "shortened (6 of 16 GPUs)"
    placed_gpu_count: NotRequired[int | None]
    placed_gpu_hours: NotRequired[int | None]
    placed_text: NotRequired[str]  # "6 A100, Tue 00:00–Thu 00:00, standard (288 GPU-hours)"
    placement_reason: NotRequired[str]  # the engine's explanation
    outcome_summary: NotRequired[str]  # "Grant 16 → placed 6 (shortened)"
    # The codes and numbers the four texts above are written from (committee RequestOutcome.as_params), so a
    # reader of another language reads them in theirs; missing in older records, which show the texts as stored.
    placement_params: NotRequired[dict[str, Any]]


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
    note_text: NotRequired[dict[str, Any]]  # a note Docket wrote (an emergency's), as core.texts stores it
    windows: list[WindowSnapshot]


class PlanChangesSnapshot(TypedDict):
    """A correction against the version it supersedes."""

    from_version: int
    added: list[WindowSnapshot]
    withdrawn: list[WindowSnapshot]
    carried: int


class CorrectionSnapshot(TypedDict):
    """A decision changed after the week was finalized: before, after, why, who, when, the plan version it made."""

    request_id: int | None
    title: str
    team: str
    previous_label: str
    new_label: str
    previous_rationale: str
    rationale: str
    reason: str
    by: str
    at: str | None
    at_label: str
    plan_version: int | None
    from_appeal: bool
    exception: NotRequired[str]  # a grant below quorum: the chair's stated exception to the rubric
    # The outcomes the two labels are written from; missing in older records.
    previous_outcome: NotRequired[str]
    previous_granted_gpu_count: NotRequired[int | None]
    outcome: NotRequired[str]
    granted_gpu_count: NotRequired[int | None]


class AppealSnapshot(TypedDict):
    """A team's appeal of a published outcome and the committee's answer (empty while open)."""

    request_id: int | None
    title: str
    team: str
    filed_by: str
    filed_at: str | None
    filed_label: str
    statement: str
    status: str
    status_label: str
    decided_by: str
    decided_label: str
    reason: str
    plan_version: int | None


class PolicyFieldChangeSnapshot(TypedDict):
    label: str
    old: str | None  # None: created with `new`
    new: str
    field: NotRequired[str]  # the label's code (committee.selectors.policy.FieldChange.field); absent in old records


class PolicyChangeSnapshot(TypedDict):
    """A change of a policy parameter (a fair-share weight, a pool's reserve or cost, an account, a seat)."""

    at: str
    at_label: str
    kind: str
    subject: str
    action: str
    changes: list[PolicyFieldChangeSnapshot]
    who: str
    reason: str
    # The codes of kind, action and subject (committee.selectors.policy.policy_change_labels); absent in old records.
    kind_code: NotRequired[str]
    action_code: NotRequired[str]
    version: NotRequired[list[Any]]


class RecusalSnapshot(TypedDict):
    """A member's declared conflict of interest on a request of the week: recused from scoring and deciding it."""

    request_id: int | None
    title: str
    team: str
    member: str
    reason: str
    declared_at: str | None
    declared_label: str
    withdrawn_at: str | None  # withdrawn before the week was finalized (the scores counted again)
    withdrawn_label: str


class WaiverSnapshot(TypedDict):
    """The chair's waiver of a member's conflict found from the organisation on a request of the week (the member
    scored and decided it while the waiver was in force)."""

    request_id: int | None
    title: str
    team: str
    member: str
    conflict: str  # the conflict as found when waived ("same department as Search (Consumer Products)")
    reason: str
    waived_by: str
    waived_at: str | None
    waived_label: str
    withdrawn_at: str | None  # withdrawn before the week was finalized (the member was recused again)
    withdrawn_label: str


class ContinuationSnapshot(TypedDict):
    """A later week of a run begun in an earlier week, carried into this one (docs/multi-week-runs.md): its state
    and the evidence it was settled on."""

    request_id: int
    title: str
    team: str
    pool: str
    gpu_count: int
    week_number: int
    run_weeks: int
    state: str
    state_label: str
    utilization_pct: str | None  # the run's measured utilization in the week before, "85.3"; None: nothing measured
    threshold_pct: int | None
    team_reason: str
    settled_by: str


class RunCommittedSnapshot(TypedDict):
    """A later week that one of the week's own grants committed (a run over several weeks that began in this week),
    and its state now."""

    request_id: int
    title: str
    team: str
    pool: str
    gpu_count: int
    week: str
    week_number: int
    run_weeks: int
    state: str
    state_label: str


class GrantChangeSnapshot(TypedDict):
    """A grant of the week given back or extended after its publish (its lifecycle event's facts)."""

    kind: str  # "window.released" or "grant.extended" (the event's type)
    request_id: int | None
    title: str
    team: str
    pool: str
    gpu_count: int  # given back (a release), or the extension's window
    kept_gpu_count: int | None  # a release: what the window still holds from then
    start: str | None  # a release: from when; an extension: its window's start (ISO 8601)
    start_label: str
    end: str | None  # an extension: its window's end
    end_label: str
    plan_version: int | None
    reason: str


class AgentActionSnapshot(TypedDict):
    """What an elastic agent did during the week (allocations.AgentAction), as it reported it."""

    at: str
    at_label: str
    cluster: str
    pool: str
    kind: str  # the code (allocations.AgentActionKind); kind_label is written again in the reader's language
    kind_label: str
    team: str
    window_id: int | None
    gpus: int
    utilization_pct: float | int | None
    queue_wait_minutes: float | int | None
    span_minutes: int
    measured_by: str
    policy_version: int


class DecisionRecordSnapshot(TypedDict):
    """A week's decision: rubric, who took part, the ranking with rationale, capacity, the published plan."""

    schema: int
    # The language the labels and the archived Markdown are written in (settings.LANGUAGE_CODE when written);
    # missing in older records, written in the default language too. Readers of another language read the record
    # rendered from this data in theirs (reports.records.language).
    language: NotRequired[str]
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
    corrections: NotRequired[list[CorrectionSnapshot]]
    appeals: NotRequired[list[AppealSnapshot]]
    # The policy changes made since the previous week's intake closed, up to this week's: what it was ranked under.
    policy_changes: NotRequired[list[PolicyChangeSnapshot]]
    policy_changes_more: NotRequired[int]  # how many older ones the record leaves to the policy history page
    # Conflicts of interest declared on the week's requests, in force or withdrawn; missing in older records.
    recusals: NotRequired[list[RecusalSnapshot]]
    # The chair's waivers of conflicts found from the organisation, in force or withdrawn; missing in older records.
    waivers: NotRequired[list[WaiverSnapshot]]
    # The later weeks of runs carried into the week, with their state; missing in older records and weeks without.
    continuations: NotRequired[list[ContinuationSnapshot]]
    # The later weeks the week's own runs committed, and its grants given back or extended after its publish
    # (docs/multi-week-runs.md, docs/release.md); absent in older records and weeks without any.
    runs_committed: NotRequired[list[RunCommittedSnapshot]]
    grant_changes: NotRequired[list[GrantChangeSnapshot]]
    # What the elastic agents next to the schedulers did from the week's start (acted order), up to its end or to
    # when the revision was written; absent in older records and weeks without any.
    agent_actions: NotRequired[list[AgentActionSnapshot]]
    agent_actions_more: NotRequired[bool]  # more than the record lists: the pools' elastic history has them all
    agent_actions_partial: NotRequired[bool]  # the week had not ended when the revision was written
