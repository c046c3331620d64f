"""Every write of the committee app, one module per concept; import from here."""

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
)
from committee.services.review import (
    cycle_close_intake,
    cycle_finalize,
    decision_record,
    score_record,
)
from committee.services.rubric import rubric_change
from committee.services.tokens import personal_token_create, personal_token_hash, personal_token_revoke

__all__ = [
    "REQUEST_FIELDS",
    "actor_name",
    "cycle_close_intake",
    "cycle_create",
    "cycle_finalize",
    "cycle_publish",
    "decision_record",
    "gpu_request_create",
    "gpu_request_submit",
    "gpu_request_update",
    "gpu_request_withdraw",
    "personal_token_create",
    "personal_token_hash",
    "personal_token_revoke",
    "request_event_record",
    "rubric_change",
    "score_record",
]
