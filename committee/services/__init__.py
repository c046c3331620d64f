"""Every write of the committee app, one module per concept; import from here."""

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

__all__ = [
    "REQUEST_FIELDS",
    "actor_name",
    "cycle_create",
    "gpu_request_create",
    "gpu_request_submit",
    "gpu_request_update",
    "gpu_request_withdraw",
    "request_event_record",
]
