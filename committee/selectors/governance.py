"""The quorum and fair-share rules in force for a week, read from the one store of governed parameters (governed)."""

from __future__ import annotations

from dataclasses import dataclass

from governed import params
from governed.selectors import policy_value, policy_values

GOVERNANCE_KEYS = (params.QUORUM, params.FAIRSHARE_HALF_LIFE, params.FAIRSHARE_TRAILING)


@dataclass(frozen=True)
class Governance:
    """The review and fair-share rules of one week."""

    week: str
    score_quorum: int
    fairshare_half_life_weeks: float
    fairshare_trailing_weeks: int


def governance_for_week(*, week: str) -> Governance:
    """The rules in force for `week` (YYYY-Www): the latest change effective by then, else version 1 (the settings).

    One query. A change effective from a later week does not apply: the weeks before it keep the rules they had.
    """
    values = {k: v for k, v in policy_values(week=week).items() if k in GOVERNANCE_KEYS}

    def get(key: str) -> object:
        return values[key] if key in values else policy_value(key=key, week=week)

    return Governance(
        week=week,
        score_quorum=params.as_int(get(params.QUORUM)),
        fairshare_half_life_weeks=params.as_float(get(params.FAIRSHARE_HALF_LIFE)),
        fairshare_trailing_weeks=params.as_int(get(params.FAIRSHARE_TRAILING)),
    )
