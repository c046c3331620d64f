"""The rule every sync follows before it removes a scheduler object (docket_scheduler.base.RemovalGuard), and the
wait after failed passes (client.backoff_delay), on plain data. The same against the real slurmctld and Docket:
tests/allocations/test_slurm_sync_faults.py."""

from __future__ import annotations

from docket_scheduler.base import Removal, RemovalGuard, Withdrawal
from docket_scheduler.client import backoff_delay


def test_the_guard_lets_ordinary_removals_through_and_asks_docket_about_the_rest() -> None:
    asked: list[int] = []

    def check(window: int) -> tuple[Withdrawal, str]:
        asked.append(window)
        return (Withdrawal.WITHDRAWN, "withdrawn") if window == 1 else (Withdrawal.HELD, f"held {window}")

    guard = RemovalGuard(max_remove_pct=50, check=check)
    upcoming, live, ended = (Removal("r1", frozenset({1}), live=False), Removal("r2", frozenset({2}), live=True),
                             Removal("r3", frozenset({3}), live=False, ended=True))
    # One upcoming of four managed: not live, within the share: no question asked.
    assert guard.allowed([upcoming], managed=4) == [upcoming] and asked == []
    # A live one is asked about; Docket still holds it: kept, with the reason, and reportable.
    assert guard.allowed([live, ended], managed=4) == [ended] and asked == [2]
    assert guard.held == {2: guard.refused["r2"]} and "held 2" in guard.refused["r2"]
    # Two of three (more than half): both asked; the withdrawn one goes, the ended one needs no answer.
    assert guard.allowed([upcoming, Removal("r4", frozenset({4}), live=False), ended], managed=3) == [ended, upcoming]
    # Without Docket to ask, a guarded removal is refused.
    assert RemovalGuard().allowed([live], managed=10) == []


def test_backoff_doubles_with_jitter_up_to_the_cap() -> None:
    assert backoff_delay(0, interval_s=60, cap_s=900) == 60
    assert [backoff_delay(n, interval_s=60, cap_s=900, rng=lambda low, high: high) for n in (1, 2, 3, 4, 5)] == \
        [120, 240, 480, 900, 900]
    assert backoff_delay(3, interval_s=60, cap_s=900, rng=lambda low, high: low) == 240
