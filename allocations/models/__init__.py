"""Resources and their tenants (teams, clusters, GPU pools), the plans placed on them, the schedulers that read
them and the elastic pool's actions.

This app knows nothing of committees: a team here is only the tenant of allocation windows. One module per concern:
`resources` (teams, clusters, pools, measured usage), `plans` (published plans and their windows), `commitments`
(the later weeks of a run), `schedulers` (accounts, tokens, sync status) and `elastic` (the elastic pool's actions,
docs/elastic.md).
"""

from allocations.models.commitments import (
    PLACED_STATES,
    Commitment,
    CommitmentState,
)
from allocations.models.elastic import (
    AgentAction,
    AgentActionKind,
    ElasticAction,
    ElasticActionKind,
)
from allocations.models.plans import (
    AllocationPlan,
    AllocationWindow,
    PlanExplanation,
    PlanSequence,
    WindowTier,
    WindowWithdrawal,
)
from allocations.models.resources import (
    Cluster,
    Department,
    GpuPool,
    SchedulerKind,
    Team,
    UsageRecord,
)
from allocations.models.schedulers import (
    ClusterAccount,
    SchedulerClient,
    SyncState,
    WindowSyncStatus,
)

__all__ = [
    "PLACED_STATES",
    "AgentAction",
    "AgentActionKind",
    "AllocationPlan",
    "AllocationWindow",
    "Cluster",
    "ClusterAccount",
    "Commitment",
    "CommitmentState",
    "Department",
    "ElasticAction",
    "ElasticActionKind",
    "GpuPool",
    "PlanExplanation",
    "PlanSequence",
    "SchedulerClient",
    "SchedulerKind",
    "SyncState",
    "Team",
    "UsageRecord",
    "WindowSyncStatus",
    "WindowTier",
    "WindowWithdrawal",
]
