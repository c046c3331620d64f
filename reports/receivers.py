"""The archive listens to the committee: each receiver calls one service and holds no logic of its own.

The committee sends its signals after the change has committed, so the services read committed
rows; each service is idempotent, so a signal delivered twice writes one revision.
"""

from __future__ import annotations

from typing import Any

from committee.models import ReviewCycle, RubricVersion
from reports import services


def _committed(cycle: ReviewCycle) -> ReviewCycle:
    # The sender's instance may be older than the database (finalized and published in one go).
    return ReviewCycle.objects.select_related("rubric").get(pk=cycle.pk)


def on_cycle_finalized(sender: Any, *, cycle: ReviewCycle, **kwargs: Any) -> None:
    services.decision_record_sync(cycle=_committed(cycle))


def on_cycle_published(sender: Any, *, cycle: ReviewCycle, **kwargs: Any) -> None:
    services.decision_record_sync(cycle=_committed(cycle))


def on_rubric_changed(sender: Any, *, rubric_version: RubricVersion, **kwargs: Any) -> None:
    services.policy_page_sync(rubric_version=rubric_version)
