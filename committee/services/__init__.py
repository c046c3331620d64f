"""Every write of the committee app, one module per concept; import from here."""

from committee.services.clock import (
    committee_remind_review,
    cycle_close_due_intake,
    cycle_open_next,
    teams_remind_unfiled,
)
from committee.services.notifications import (
    digests_send,
    notification_preferences_set,
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
    gpu_request_create,
    gpu_request_submit,
    gpu_request_update,
    gpu_request_withdraw,
    request_event_record,
    request_events_record,
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
    sso_memberships_sync,
    user_tokens_revoke,
)
from committee.services.tokens import personal_token_create, personal_token_revoke

__all__ = [
    "REQUEST_FIELDS",
    "SsoSyncResult",
    "actor_name",
    "committee_remind_review",
    "cycle_close_due_intake",
    "cycle_close_intake",
    "cycle_create",
    "cycle_finalize",
    "cycle_open_next",
    "cycle_publish",
    "digests_send",
    "gpu_request_create",
    "gpu_request_submit",
    "gpu_request_update",
    "gpu_request_withdraw",
    "notification_preferences_set",
    "notifications_for_decisions_published",
    "notifications_for_intake_closed",
    "notifications_for_request_submitted",
    "notifications_record",
    "personal_token_create",
    "personal_token_revoke",
    "request_decide",
    "request_event_record",
    "request_events_record",
    "rubric_change",
    "score_record",
    "sso_grants_for_groups",
    "sso_memberships_sync",
    "teams_remind_unfiled",
    "user_tokens_revoke",
]
