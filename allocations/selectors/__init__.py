"""Reads of the allocations app, already scoped to who asks: one module per concept, every name importable from here.

- `capacity`: what each pool can hold in a week;
- `windows`: the published windows as the scheduler API serves them;
- `plans`: the published plans as the pages and the committee read them;
- `lending`: the GPU-hours a standard window lent to others and they used (its charge's credit);
- `prices`: what a pool's GPU-hour costs in a week;
- `usage`: the measured usage, per team and week and per team and pool;
- `commitments`: the later weeks of runs and the evidence they continue on.
"""

from allocations.selectors.capacity import (
    pool_capacity,
    pool_list_with_capacity,
    pool_reserves_for_week,
    pool_reserves_now,
    pool_week_capacity,
    pool_week_capacity_list,
)
from allocations.selectors.commitments import (
    COMMITMENT_COLUMNS,
    Continuation,
    commitment_continuation,
    commitment_fingerprint,
    commitment_gpu_hours_by_pool,
    commitment_list_committed_by_week,
    commitment_list_for_runs,
    commitment_list_for_week,
    commitment_list_for_weeks,
    commitment_rows_for_cluster,
    committed_week,
    run_utilization_pct,
)
from allocations.selectors.lending import window_lent_credits
from allocations.selectors.plans import (
    RequestAllocation,
    plan_explanation_map,
    plan_for_week,
    plan_last_windows,
    plan_week_current,
    plan_week_list,
    plan_window_list,
    plan_withdrawn_list,
    request_allocation,
    request_allocation_map,
    team_window_list,
)
from allocations.selectors.prices import pool_prices, pool_prices_and_weights_for_weeks, pool_prices_for_weeks
from allocations.selectors.usage import (
    MeasuredUsage,
    usage_counted_factors,
    usage_gpu_hours_by_team_per_week,
    usage_measured_by_team_pool,
    usage_report_initial,
)
from allocations.selectors.windows import (
    SchedulerReference,
    SnapshotUnavailable,
    WindowPage,
    WindowSnapshot,
    change_seq_latest,
    scheduler_departments,
    scheduler_reference,
    window_detail,
    window_offers,
    window_page,
    window_snapshot,
)

__all__ = [
    "COMMITMENT_COLUMNS",
    "Continuation",
    "MeasuredUsage",
    "RequestAllocation",
    "SchedulerReference",
    "SnapshotUnavailable",
    "WindowPage",
    "WindowSnapshot",
    "change_seq_latest",
    "commitment_continuation",
    "commitment_fingerprint",
    "commitment_gpu_hours_by_pool",
    "commitment_list_committed_by_week",
    "commitment_list_for_runs",
    "commitment_list_for_week",
    "commitment_list_for_weeks",
    "commitment_rows_for_cluster",
    "committed_week",
    "plan_explanation_map",
    "plan_for_week",
    "plan_last_windows",
    "plan_week_current",
    "plan_week_list",
    "plan_window_list",
    "plan_withdrawn_list",
    "pool_capacity",
    "pool_list_with_capacity",
    "pool_prices",
    "pool_prices_and_weights_for_weeks",
    "pool_prices_for_weeks",
    "pool_reserves_for_week",
    "pool_reserves_now",
    "pool_week_capacity",
    "pool_week_capacity_list",
    "request_allocation",
    "request_allocation_map",
    "run_utilization_pct",
    "scheduler_departments",
    "scheduler_reference",
    "team_window_list",
    "usage_counted_factors",
    "usage_gpu_hours_by_team_per_week",
    "usage_measured_by_team_pool",
    "usage_report_initial",
    "window_detail",
    "window_lent_credits",
    "window_offers",
    "window_page",
    "window_snapshot",
]
