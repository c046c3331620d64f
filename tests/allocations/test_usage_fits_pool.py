"""The rule that usage reports of one pool must fit in it together, against a brute force on random reports.

`usage_fit.chained` and `usage_fit.worst_span` check only the spans that contain the new report and
are bounded by the reports chained to it. That is enough exactly when the stored reports fit among
themselves: the brute force here checks every span bounded by any two report times, of all reports.
Reports are drawn at random (fixed seed); each is stored only if the brute force accepts it, so the
stored ones always fit, as the service keeps them.
"""

from __future__ import annotations

import random
from decimal import Decimal

import pytest

from allocations.usage_fit import chained, worst_span

GPUS = 4
HOUR = 3_600_000_000  # µs


def fits_everywhere(rows: list[tuple[int, int, Decimal]]) -> bool:
    """For every span [a, b] between report times: the reports wholly inside hold at most GPUS × (b − a)."""
    starts = sorted({row[0] for row in rows})
    ends = sorted({row[1] for row in rows})
    for a in starts:
        for b in ends:
            if b <= a:
                continue
            inside = sum((row[2] for row in rows if row[0] >= a and row[1] <= b), Decimal(0))
            if inside * HOUR > GPUS * (b - a):
                return False
    return True


def accepted(rows: list[tuple[int, int, Decimal]], new: tuple[int, int, Decimal]) -> bool:
    around = chained(rows, start=new[0], end=new[1])
    return worst_span(around, start=new[0], end=new[1], gpu_hours=new[2], gpus=GPUS) is None if around else True


@pytest.mark.parametrize("seed", range(12))
def test_the_service_accepts_exactly_what_can_be_true(seed):
    rng = random.Random(seed)
    rows: list[tuple[int, int, Decimal]] = []
    refused = 0
    for _ in range(60):
        start = rng.randrange(0, 24) * HOUR // 2  # half-hour grid over 12 hours
        end = start + rng.choice([1, 1, 2, 3, 6, 12]) * HOUR // 2
        hours = Decimal(GPUS * (end - start) // HOUR * rng.choice([10, 25, 50, 100]) // 100 or 1)
        new = (start, end, hours)
        truth = fits_everywhere([*rows, new])
        assert accepted(rows, new) == truth, (rows, new)
        if truth:
            rows.append(new)
        else:
            refused += 1
    assert refused and len(rows) > 5  # both answers were exercised


def test_the_worst_span_names_the_span_and_its_numbers():
    rows = [(0, 2 * HOUR, Decimal(8)), (1 * HOUR, 3 * HOUR, Decimal(4))]  # [0, 3 h) holds 12 of 12
    worst = worst_span(chained(rows, start=2 * HOUR, end=3 * HOUR), start=2 * HOUR, end=3 * HOUR,
                        gpu_hours=Decimal("0.5"), gpus=GPUS)
    assert worst is not None
    assert (worst.start.hour, worst.end.hour) == (0, 3)
    assert (worst.gpu_hours, worst.capacity_gpu_hours) == (Decimal("12.5"), Decimal(12))
