"""Every write of the committee app, one module per concept; import from here."""

from committee.services.budgets import department_budget_set
from committee.services.chat import chat_intake_closing_announce, chat_send
from committee.services.clock import (
    CLOCK_RUNNERS,
    OWN_TRANSACTIONS,
    clock_tick,
    committee_remind_review,
    cycle_close_due_intake,
    cycle_open_following,
    cycle_open_next,
    teams_remind_unfiled,
)
from committee.services.corrections import (
    APPEAL_AMEND,
    APPEAL_UPHOLD,
    CorrectionValues,
    appeal_decide,
    appeal_file,
    correction_check,
    decision_correct,
)
from committee.services.discussion import (
    conflict_declare,
    conflict_waive,
    conflict_waiver_withdraw,
    conflict_withdraw,
    request_comment_add,
    request_question_answer,
    request_question_ask,
    scores_confirm,
    scores_mark_stale,
)
from committee.services.elastic import elastic_policy_change
from committee.services.events import lifecycle_event_record, lifecycle_events_due
from committee.services.extension import grant_extension_file
from committee.services.governance import governance_version_create
from committee.services.notification_kinds import (
    NOTIFICATION_KINDS,
    UnknownNotificationKind,
    notification_kind_get,
    notification_kind_register,
)
from committee.services.notifications import (
    NOTIFY_TASK,
    digests_send,
    notification_enqueue,
    notification_preferences_set,
    notifications_deliver,
    notifications_mark_read,
    notifications_record,
)
from committee.services.publishing import cycle_publish
from committee.services.ranking import cycle_ranking_changed
from committee.services.realized import outcome_ask, outcome_asks_due, outcome_report
from committee.services.records import record_agent_actions_due
from committee.services.release import Release, window_release
from committee.services.requests import (
    REQUEST_FIELDS,
    actor_name,
    cycle_create,
    request_carry,
    request_create,
    request_event_record,
    request_events_record,
    request_problems,
    request_return,
    request_submit,
    request_update,
    request_withdraw,
    team_filing_set,
)
from committee.services.review import (
    cycle_close_intake,
    cycle_finalize,
    request_decide,
)
from committee.services.rubric import rubric_change
from committee.services.runs import (
    run_commitments_publish,
    run_continuation_decide,
    run_continuation_explain,
    run_extension_file,
)
from committee.services.scores import score_record, scores_record
from committee.services.sso import (
    SsoSyncResult,
    sso_grants_for_groups,
    sso_group_map_apply,
    sso_group_map_parse,
    sso_group_map_rows,
    sso_manager_sync,
    sso_memberships_sync,
)
from committee.services.tokens import personal_token_create, personal_token_revoke, personal_token_revoke_all
from committee.services.webhooks import (
    webhook_deliver,
    webhook_retries_enqueue,
    webhook_subscription_create,
    webhook_subscription_deactivate,
)

__all__ = [
    "APPEAL_AMEND",
    "APPEAL_UPHOLD",
    "CLOCK_RUNNERS",
    "NOTIFICATION_KINDS",
    "NOTIFY_TASK",
    "OWN_TRANSACTIONS",
    "REQUEST_FIELDS",
    "CorrectionValues",
    "Release",
    "SsoSyncResult",
    "UnknownNotificationKind",
    "actor_name",
    "appeal_decide",
    "appeal_file",
    "chat_intake_closing_announce",
    "chat_send",
    "clock_tick",
    "committee_remind_review",
    "conflict_declare",
    "conflict_waive",
    "conflict_waiver_withdraw",
    "conflict_withdraw",
    "correction_check",
    "cycle_close_due_intake",
    "cycle_close_intake",
    "cycle_create",
    "cycle_finalize",
    "cycle_open_following",
    "cycle_open_next",
    "cycle_publish",
    "cycle_ranking_changed",
    "decision_correct",
    "department_budget_set",
    "digests_send",
    "elastic_policy_change",
    "governance_version_create",
    "grant_extension_file",
    "lifecycle_event_record",
    "lifecycle_events_due",
    "notification_enqueue",
    "notification_kind_get",
    "notification_kind_register",
    "notification_preferences_set",
    "notifications_deliver",
    "notifications_mark_read",
    "notifications_record",
    "outcome_ask",
    "outcome_asks_due",
    "outcome_report",
    "personal_token_create",
    "personal_token_revoke",
    "personal_token_revoke_all",
    "record_agent_actions_due",
    "request_carry",
    "request_comment_add",
    "request_create",
    "request_decide",
    "request_event_record",
    "request_events_record",
    "request_problems",
    "request_question_answer",
    "request_question_ask",
    "request_return",
    "request_submit",
    "request_update",
    "request_withdraw",
    "rubric_change",
    "run_commitments_publish",
    "run_continuation_decide",
    "run_continuation_explain",
    "run_extension_file",
    "score_record",
    "scores_confirm",
    "scores_mark_stale",
    "scores_record",
    "sso_grants_for_groups",
    "sso_group_map_apply",
    "sso_group_map_parse",
    "sso_group_map_rows",
    "sso_manager_sync",
    "sso_memberships_sync",
    "team_filing_set",
    "teams_remind_unfiled",
    "webhook_deliver",
    "webhook_retries_enqueue",
    "webhook_subscription_create",
    "webhook_subscription_deactivate",
    "window_release",
]
