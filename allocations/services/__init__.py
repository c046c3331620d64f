"""Every write of the allocations app, one module per concept; import from here.

- `publishing`: a week's plan published as its next version (`plan_publish`);
- `schedulers`: scheduler clients and their tokens, and the sync status they report;
- `usage`: the measured usage the scheduler side reports;
- `commitments`: the later weeks of runs (`commitments_record`, `commitment_settle`,
  `commitments_give_back`).

One function per operation; the pages, the API, the management commands and the committee's
publishing glue all call these.
"""

from allocations.services.commitments import (
    PlacedRun,
    commitment_decide,
    commitment_reason_set,
    commitment_settle,
    commitments_give_back,
    commitments_record,
)
from allocations.services.publishing import plan_publish
from allocations.services.schedulers import (
    TOKEN_PREFIX,
    IssuedToken,
    scheduler_client_create,
    scheduler_client_rotate,
    scheduler_client_seen,
    sync_status_record,
)
from allocations.services.usage import (
    USAGE_MAX_CHAINED,
    IdempotencyConflict,
    UsageResult,
    measured_usage_record,
)

__all__ = [
    "TOKEN_PREFIX",
    "USAGE_MAX_CHAINED",
    "IdempotencyConflict",
    "IssuedToken",
    "PlacedRun",
    "UsageResult",
    "commitment_decide",
    "commitment_reason_set",
    "commitment_settle",
    "commitments_give_back",
    "commitments_record",
    "measured_usage_record",
    "plan_publish",
    "scheduler_client_create",
    "scheduler_client_rotate",
    "scheduler_client_seen",
    "sync_status_record",
]
