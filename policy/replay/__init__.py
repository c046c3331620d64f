"""Counterfactual replay of past weeks under proposed policy parameters (docs/policy-lab.md, "Replay").

`overrides` parses and checks what a proposal changes; `compute` is the pure replay (`data` its shapes): archived
inputs (policy.selectors.replay loads them) and overrides in, one `ReplayResult` out. No ORM, no
clock: the same inputs give byte-identical results (`ReplayResult.to_json`).
"""

from policy.replay.compute import replay
from policy.replay.data import (
    ActualWindow,
    ArchivedCommitment,
    ReplayInputs,
    ReplayRequest,
    ReplayResult,
    UsageRow,
    WeekInputs,
)
from policy.replay.overrides import MAX_WEEKS, MIN_WEEKS, Overrides, ReplayErrors, overrides_parse

__all__ = [
    "MAX_WEEKS",
    "MIN_WEEKS",
    "ActualWindow",
    "ArchivedCommitment",
    "Overrides",
    "ReplayErrors",
    "ReplayInputs",
    "ReplayRequest",
    "ReplayResult",
    "UsageRow",
    "WeekInputs",
    "overrides_parse",
    "replay",
]
