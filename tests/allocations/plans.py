"""Publishing plans and issuing scheduler tokens for the allocations tests, through the services."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from allocations import services
from allocations.engine import EngineWindow, Explanation, Reason, instant_param
from allocations.models import AllocationPlan, GpuPool, Team
from committee import weeks
from tests.clock import FIXED_NOW


@dataclass(frozen=True)
class W:
    """A window to publish: hours are offsets from the week's start (whole hours, or a fraction where a test needs a
    window to start at a given instant)."""

    pool: GpuPool
    team: Team
    gpus: int
    start_h: float
    end_h: float
    ref: int
    tier: str = "standard"


def this_week() -> str:
    """The week of the suite's pinned instant (tests/clock.py): 2026-W49."""
    return weeks.current_week_label(FIXED_NOW)


def week_start(week: str) -> datetime:
    return weeks.week_bounds(week)[0]


def publish(windows: Sequence[W], *, week: str | None = None, by: str = "Chris Chair",
            explanations: Sequence[Explanation] | None = None, **extra: Any) -> AllocationPlan:
    week = week or this_week()
    start, end = weeks.week_bounds(week)
    engine_windows = [
        EngineWindow(ref=w.ref, pool=w.pool.key, gpu_count=w.gpus,
                     start=start + timedelta(hours=w.start_h), end=start + timedelta(hours=w.end_h), tier=w.tier)
        for w in windows
    ]
    if explanations is None:
        explanations = [placed(w) for w in engine_windows]
    pools = {w.pool.key: w.pool for w in windows}
    teams = {w.ref: w.team for w in windows}
    return services.plan_publish(
        week=week, week_starts_at=start, week_ends_at=end, source_ref=extra.pop("source_ref", "test"),
        windows=engine_windows, explanations=explanations, pools=pools, teams=teams, published_by_name=by, **extra,
    )


def placed(window: EngineWindow, *, gpu_model: str = "") -> Explanation:
    """The engine's explanation of a window placed as asked."""
    params = {"start": instant_param(window.start), "end": instant_param(window.end), "gpu_count": window.gpu_count,
              "gpu_model": gpu_model, "preemptible": window.tier == "preemptible"}
    return Explanation(ref=window.ref, placed=True, shortened=False, reasons=(Reason("placed", params),))


def token_for(cluster: Any, name: str = "sync") -> str:
    return services.scheduler_client_create(cluster=cluster, name=name).token


def bearer(token: str) -> dict[str, Any]:
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}
