"""Reads, already scoped to who asks: one module per concept, every name importable from here."""

from __future__ import annotations

from committee.selectors.cycles import (
    RubricChange,
    cycle_for_review,
    cycle_get,
    cycle_list,
    rubric_current,
    rubric_history,
)
from committee.selectors.fairshare import (
    fair_share_for_cycle,
    fair_share_live,
)
from committee.selectors.notifications import (
    COMMITTEE_KINDS,
    TEAM_KINDS,
    committee_member_ids,
    digest_list_for_user,
    notification_kinds_for,
    notification_opt_outs,
    notification_waiting_count,
    team_member_ids,
)
from committee.selectors.people import (
    NO_ROLES,
    Viewer,
    ViewerRoles,
    team_list_for_user,
    user_is_chair,
    user_is_committee,
    user_is_team_member,
    viewer_roles,
    viewer_roles_new_request,
)
from committee.selectors.policy import (
    FieldChange,
    PolicyChange,
    policy_history,
)
from committee.selectors.publishing import (
    cycle_demands,
    started_windows,
)
from committee.selectors.requests import (
    cycle_open_for_intake,
    pool_list,
    request_get_for_viewer,
    request_list_for_team_member,
    request_list_for_viewer,
)
from committee.selectors.review import (
    REVIEWED_STATUSES,
    CycleReview,
    MemberScores,
    PoolLoad,
    ReviewRow,
    ScoreInput,
    cycle_ranking,
    cycle_review,
    decision_list_for_cycle,
    decision_list_granted,
    decision_visible_to,
    score_sheet,
)

__all__ = [
    "COMMITTEE_KINDS",
    "NO_ROLES",
    "REVIEWED_STATUSES",
    "TEAM_KINDS",
    "CycleReview",
    "FieldChange",
    "MemberScores",
    "PolicyChange",
    "PoolLoad",
    "ReviewRow",
    "RubricChange",
    "ScoreInput",
    "Viewer",
    "ViewerRoles",
    "committee_member_ids",
    "cycle_demands",
    "cycle_for_review",
    "cycle_get",
    "cycle_list",
    "cycle_open_for_intake",
    "cycle_ranking",
    "cycle_review",
    "decision_list_for_cycle",
    "decision_list_granted",
    "decision_visible_to",
    "digest_list_for_user",
    "fair_share_for_cycle",
    "fair_share_live",
    "notification_kinds_for",
    "notification_opt_outs",
    "notification_waiting_count",
    "policy_history",
    "pool_list",
    "request_get_for_viewer",
    "request_list_for_team_member",
    "request_list_for_viewer",
    "rubric_current",
    "rubric_history",
    "score_sheet",
    "started_windows",
    "team_list_for_user",
    "team_member_ids",
    "user_is_chair",
    "user_is_committee",
    "user_is_team_member",
    "viewer_roles",
    "viewer_roles_new_request",
]
