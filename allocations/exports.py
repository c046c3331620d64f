"""Windows in the shape adapters consume, built inside Docket (the Kueue export).

The same rows and the same representation as the windows API, so the YAML a Kubernetes
operator applies and the JSON a Slurm host polls never disagree.
"""

from __future__ import annotations

from datetime import datetime

from allocations import selectors
from allocations.adapters.base import DesiredWindow
from allocations.adapters.kueue import KueuePolicy, render_yaml
from allocations.api.serializers import WINDOW_COLUMNS, WindowSerializer
from allocations.models import Cluster


def desired_windows_for_kueue(*, cluster: Cluster, at: datetime) -> list[DesiredWindow]:
    """The live windows of the current plans whose week has not ended at `at`. Four queries."""
    snapshot, windows = selectors.window_list_for_kueue(cluster=cluster, at=at)
    reference = selectors.scheduler_reference(cluster=cluster)
    context = {"cluster": cluster.slug, "versions": snapshot.versions, "reference": reference}
    rows = list(windows.values_list(*WINDOW_COLUMNS))
    return [DesiredWindow.from_api(item) for item in WindowSerializer(rows, many=True, context=context).data]


def kueue_yaml(
    *, cluster: Cluster, at: datetime, cohort: str | None = None, policy: KueuePolicy | None = None
) -> str:
    """The cluster's Kueue objects at `at` as YAML (allocations.adapters.kueue.render_yaml)."""
    windows = desired_windows_for_kueue(cluster=cluster, at=at)
    return render_yaml(windows, at=at, cluster=cluster.slug, cohort=cohort, policy=policy)
