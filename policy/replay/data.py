"""The replay's plain data: the archived weeks it reads (inputs, loaded by policy.selectors.replay) and what it
gives (outputs, read by the policy lab's pages). No ORM, no clock; `ReplayResult.to_json` is canonical, so the
same inputs give the same bytes. The computation is `compute`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal

from allocations import engine
from allocations.commitments import CommittedWeek, RunWeek
from committee import scoring

_HOUR = timedelta(hours=1)


# ---------------------------------------------------------------------------------------------
# Inputs (plain data, loaded by policy.selectors.replay)


@dataclass(frozen=True)
class ReplayRequest:
    """One request of a past week, with its scores and the committee's (current) decision."""

    request_id: int
    title: str
    team_id: int
    team_name: str
    pool: str  # GpuPool.key
    requested_gpu_hours: int
    duration_hours: int
    submitted_at: datetime
    member_scores: Mapping[str, tuple[int, ...]]
    outcome: str  # the decision's outcome ("grant", "partial", "alternative", "defer", "reject")
    demand: engine.Demand | None  # the engine's demand for a grant (committee.selectors.decision_demand)
    archived_rank: int | None  # frozen at finalize
    auto_deferred: bool = False  # deferred by Docket at finalize: below quorum, never decided
    corrected: bool = False  # the decision was corrected (or amended on appeal) after finalize
    impact_value: Decimal | None = None
    impact_unit: str = ""
    # A run over several weeks (docs/multi-week-runs.md): the GPUs it asked per week (its first week first) and the
    # later weeks its grant covers, each whole; placed, they become commitments of those weeks.
    run_gpu_counts: tuple[int, ...] = ()
    later_weeks: tuple[RunWeek, ...] = ()


@dataclass(frozen=True)
class ActualWindow:
    """A window of a plan version of the week, as published."""

    ref: int | None
    pool: str
    gpu_count: int
    start: datetime
    end: datetime
    tier: str
    team_id: int
    team_name: str
    emergency: bool = False

    @property
    def gpu_hours(self) -> int:
        return self.gpu_count * int((self.end - self.start) / _HOUR)


@dataclass(frozen=True)
class ArchivedCommitment:
    """A later week of a run as the week held it (allocations.Commitment): where it stands, and its state."""

    week: CommittedWeek
    placed: bool  # committed or confirmed: the live engine placed it first
    settled: bool  # settled on evidence or by the committee (a release by a correction is not)


@dataclass(frozen=True)
class UsageRow:
    team_id: int
    period_start: datetime
    reported_at: datetime
    gpu_hours: Decimal


@dataclass(frozen=True)
class WeekInputs:
    """Everything archived about one finalized or published week that the replay reads."""

    week: str
    starts_at: datetime
    hours: int
    weights: Mapping[str, int]  # the rubric version the week was scored with
    rubric_version: int
    fair_shares: Mapping[int, scoring.FairShare]  # frozen at intake close; empty for a week without
    fair_share_as_of: datetime
    team_weights: Mapping[int, int]  # the fair-share weights as of intake close
    pools: tuple[engine.PoolCapacity, ...]  # as they were when the week was placed
    requests: tuple[ReplayRequest, ...]
    first_plan: tuple[ActualWindow, ...] = ()  # plan version 1 (empty: never published)
    current_plan: tuple[ActualWindow, ...] = ()  # the week's current plan version
    plan_version: int | None = None
    # The rules in force in the week (governed); None: the replay's own (ReplayInputs).
    quorum: int | None = None
    half_life_weeks: float | None = None
    trailing_weeks: int | None = None
    # The org chart: team id → (department id, the department's weight); a team not in it stands at the top level.
    team_departments: Mapping[int, tuple[int, int]] = field(default_factory=dict)
    # The later weeks of runs the week held (every state), placed first as the live engine places them.
    commitments: tuple[ArchivedCommitment, ...] = ()


@dataclass(frozen=True)
class ReplayInputs:
    weeks: tuple[WeekInputs, ...]  # oldest first
    quorum: int
    half_life_weeks: float
    trailing_weeks: int
    time_zone: str  # weeks of usage step on this zone's clock (allocations.selectors)
    usage: tuple[UsageRow, ...] = ()


# ---------------------------------------------------------------------------------------------
# Outputs


@dataclass(frozen=True)
class RequestRun:
    request_id: int
    team_id: int
    pool: str
    rank: int | None
    total: Decimal | None
    fairness: Decimal | None
    decided_gpu_hours: int
    placed_gpu_hours: int
    unplaced_value: Decimal | None  # in the request's impact unit
    dropped: bool  # a grant dropped: below the quorum
    window: tuple[str, int, str, str, str] | None  # pool, GPUs, start, end, tier


@dataclass(frozen=True)
class PoolRun:
    pool: str
    placeable_gpu_hours: int
    placed_gpu_hours: int
    idle_gpu_hours: int
    contended_hours: int


@dataclass(frozen=True)
class WeekRun:
    requests: tuple[RequestRun, ...]  # in rank order, then below quorum
    pools: tuple[PoolRun, ...]
    fairness: Mapping[int, Decimal]  # per team, 0–10
    # The runs' later weeks placed first in the week (run's request id, window as `RequestRun.window`), oldest run
    # first: they are not the week's requests, but they hold its GPUs.
    carried: tuple[tuple[int, tuple[str, int, str, str, str]], ...] = ()


@dataclass(frozen=True)
class Note:
    """A difference worth reading, as a code and its parameters (the template words it)."""

    week: str
    code: str
    params: Mapping[str, object]


@dataclass(frozen=True)
class WeekReplay:
    week: str
    baseline: WeekRun
    proposed: WeekRun
    actual_placed: Mapping[int, int]  # per request id, GPU-hours in the current plan


@dataclass(frozen=True)
class Measure:
    """One number for the baseline, the proposal and (where archived) what happened."""

    baseline: Decimal
    proposed: Decimal
    actual: Decimal | None = None

    @property
    def change(self) -> Decimal:
        return self.proposed - self.baseline


@dataclass(frozen=True)
class TeamRow:
    team_id: int
    team_name: str
    mean_rank: Measure  # over the team's ranked requests; 0 when none is ranked
    ranked: Measure  # how many of its requests are ranked
    decided_gpu_hours: Measure
    placed_gpu_hours: Measure
    unplaced_value: Mapping[str, Measure]  # per unit

    @property
    def outcome(self) -> str:
        """"gains", "loses" or "same": by placed GPU-hours, then unplaced value."""
        change = self.placed_gpu_hours.change
        if change == 0:
            values = [m.change for m in self.unplaced_value.values()]
            if any(v < 0 for v in values) and not any(v > 0 for v in values):
                return "gains"
            if any(v > 0 for v in values) and not any(v < 0 for v in values):
                return "loses"
            return "same"
        return "gains" if change > 0 else "loses"


@dataclass(frozen=True)
class PoolRow:
    pool: str
    placeable_gpu_hours: Measure
    placed_gpu_hours: Measure
    idle_gpu_hours: Measure
    contended_hours: Measure


@dataclass(frozen=True)
class ReplayResult:
    weeks: tuple[str, ...]
    overrides: tuple[tuple[str, str], ...]
    teams: tuple[TeamRow, ...]
    pools: tuple[PoolRow, ...]
    detail: tuple[WeekReplay, ...]
    notes: tuple[Note, ...]

    @property
    def gains(self) -> list[TeamRow]:
        return [t for t in self.teams if t.outcome == "gains"]

    @property
    def losses(self) -> list[TeamRow]:
        return [t for t in self.teams if t.outcome == "loses"]

    def to_json(self) -> str:
        """The whole result as canonical JSON: the same inputs give the same bytes."""
        return json.dumps(asdict(self), sort_keys=True, default=_json_default, separators=(",", ":"))

    @property
    def fingerprint(self) -> str:
        return hashlib.sha256(self.to_json().encode()).hexdigest()[:16]


def _json_default(value: object) -> object:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, datetime):
        return engine.instant_param(value)
    raise TypeError(f"not JSON: {value!r}")
