"""The policy lab listens to the committee: each receiver calls one service of this app."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from committee.models import ReviewCycle
from policy import demo, services


def on_cycle_opened(sender: Any, *, cycle: ReviewCycle, now: datetime, **kwargs: Any) -> None:
    services.adoptions_apply_due(now=now)


def on_clock_ticked(sender: Any, *, now: datetime, **kwargs: Any) -> None:
    services.adoptions_apply_due(now=now)


def on_demo_seeded(sender: Any, *, now: datetime, logins: list[tuple[str, str]], **kwargs: Any) -> None:
    demo.seed_policy_lab(now=now)
