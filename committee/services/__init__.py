"""Every write of the committee app, one module per concept; import from here."""

from committee.services.chat import chat_intake_closing_announce, chat_send
from committee.services.clock import (
    committee_remind_review,
    cycle_close_due_intake,
    cycle_open_following,
    cycle_open_next,
    teams_remind_unfiled,
)
from committee.services.corrections import (
    APPEAL_AMEND,
    APPEAL_UPHOLD,
    appeal_decide,
    appeal_file,
    decision_correct,
)
from committee.services.elastic import elastic_policy_change
from committee.services.notifications import (
    digests_send,
    notification_preferences_set,
    notifications_for_appeal_decided,
    notifications_for_appeal_filed,
    notifications_for_decision_corrected,
    notifications_for_decisions_published,
    notifications_for_intake_closed,
    notifications_for_request_submitted,
    notifications_record,
)
from committee.services.publishing import cycle_publish
from committee.services.requests import (
    REQUEST_FIELDS,
    actor_name,
    cycle_create,
    gpu_request_carry,
    gpu_request_create,
    gpu_request_problems,
    gpu_request_return,
    gpu_request_submit,
    gpu_request_update,
    gpu_request_withdraw,
    request_event_record,
    request_events_record,
    team_filing_set,
)
from committee.services.review import (
    cycle_close_intake,
    cycle_finalize,
    request_decide,
    score_record,
)
from committee.services.rubric import rubric_change
from committee.services.sso import (
    SsoSyncResult,
    sso_grants_for_groups,
    sso_group_map_apply,
    sso_group_map_parse,
    sso_group_map_rows,
    sso_memberships_sync,
)
from committee.services.tokens import personal_token_create, personal_token_revoke, personal_token_revoke_all

__all__ = [
    "APPEAL_AMEND",
    "APPEAL_UPHOLD",
    "REQUEST_FIELDS",
    "SsoSyncResult",
    "actor_name",
    "appeal_decide",
    "appeal_file",
    "chat_intake_closing_announce",
    "chat_send",
    "committee_remind_review",
    "cycle_close_due_intake",
    "cycle_close_intake",
    "cycle_create",
    "cycle_finalize",
    "cycle_open_following",
    "cycle_open_next",
    "cycle_publish",
    "decision_correct",
    "digests_send",
    "elastic_policy_change",
    "gpu_request_carry",
    "gpu_request_create",
    "gpu_request_problems",
    "gpu_request_return",
    "gpu_request_submit",
    "gpu_request_update",
    "gpu_request_withdraw",
    "notification_preferences_set",
    "notifications_for_appeal_decided",
    "notifications_for_appeal_filed",
    "notifications_for_decision_corrected",
    "notifications_for_decisions_published",
    "notifications_for_intake_closed",
    "notifications_for_request_submitted",
    "notifications_record",
    "personal_token_create",
    "personal_token_revoke",
    "personal_token_revoke_all",
    "request_decide",
    "request_event_record",
    "request_events_record",
    "rubric_change",
    "score_record",
    "sso_grants_for_groups",
    "sso_group_map_apply",
    "sso_group_map_parse",
    "sso_group_map_rows",
    "sso_memberships_sync",
    "team_filing_set",
    "teams_remind_unfiled",
]
