"""The policy lab's reads: the proposal board (proposals.py) and the replay's archived inputs (replay.py)."""

from policy.selectors.proposals import (
    OBSERVED_RESULT_GRACE,
    WEEKS_AHEAD_MAX,
    Board,
    BoardRow,
    ObservedStatus,
    observed_due_at,
    observed_status,
    observed_status_label,
    proposal_board,
    proposal_get,
    proposal_vote_of,
    replay_query_pairs,
    week_earliest,
    week_next_free,
)

__all__ = [
    "OBSERVED_RESULT_GRACE",
    "WEEKS_AHEAD_MAX",
    "Board",
    "BoardRow",
    "ObservedStatus",
    "observed_due_at",
    "observed_status",
    "observed_status_label",
    "proposal_board",
    "proposal_get",
    "proposal_vote_of",
    "replay_query_pairs",
    "week_earliest",
    "week_next_free",
]
