"""The GPU-hours a standard window lent and others used, hour by hour (allocations/selectors/lending.py): what
exceeds the free GPUs ran on lent ones, shared among the lenders by the GPUs each offered, never more than offered,
and a lender's own preemptible work is not credited to it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

from allocations.selectors.lending import Held, Lend, Use, lent_credit_hours

T0 = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)
H = timedelta(hours=1)
A, B, C = 1, 2, 3  # teams
POOL = 7


def lend(window_id: int, team: int, gpus: int, hours: float = 1) -> Lend:
    return Lend(window_id=window_id, team_id=team, pool_id=POOL, gpus=gpus, start=T0, end=T0 + hours * H)


def use(team: int, gpu_hours: str, hours: int = 1) -> Use:
    return Use(team_id=team, pool_id=POOL, start=T0, end=T0 + hours * H, gpu_hours=Decimal(gpu_hours))


def held(gpus: int) -> Held:
    return Held(pool_id=POOL, gpus=gpus, start=T0 - H, end=T0 + 10 * H)


def test_two_lenders_share_what_others_used_beyond_the_free_gpus_by_what_each_offered():
    # 16 GPUs, 14 held: 2 free. C used 8 GPU-hours: 6 on lent GPUs, A offered 4 and B 2 of the 6 offered.
    credits = lent_credit_hours(lends=[lend(10, A, 4), lend(11, B, 2)], uses=[use(C, "8")], held=[held(14)],
                                pool_gpus={POOL: 16})
    assert credits == {10: Decimal("4.00"), 11: Decimal("2.00")}


def test_no_more_is_credited_than_was_offered_nor_than_others_used():
    assert lent_credit_hours(lends=[lend(10, A, 3)], uses=[use(C, "20")], held=[held(16)],
                             pool_gpus={POOL: 16}) == {10: Decimal("3.00")}
    assert lent_credit_hours(lends=[lend(10, A, 3)], uses=[use(C, "1.5")], held=[held(16)],
                             pool_gpus={POOL: 16}) == {10: Decimal("1.50")}


def test_a_lenders_own_preemptible_work_and_work_on_free_gpus_earn_no_credit():
    assert lent_credit_hours(lends=[lend(10, A, 4)], uses=[use(A, "4")], held=[held(16)], pool_gpus={POOL: 16}) == {}
    assert lent_credit_hours(lends=[lend(10, A, 4)], uses=[use(C, "4")], held=[held(8)], pool_gpus={POOL: 16}) == {}


def test_a_lend_of_half_an_hour_and_a_daily_record_count_the_part_they_share():
    # A lends 4 GPUs for 30 minutes; C's record of 48 GPU-hours over a day is 2 an hour: 2 × ½ on the half hour.
    credits = lent_credit_hours(lends=[lend(10, A, 4, hours=0.5)], uses=[use(C, "48", hours=24)], held=[held(16)],
                                pool_gpus={POOL: 16})
    assert credits == {10: Decimal("1.00")}
