"""The rule that usage reports of one pool must fit in it together, against a brute force on random reports.

`usage_fit.chained` and `usage_fit.worst_span` check only the spans that contain the new report and
are bounded by the reports chained to it. That is enough exactly when the stored reports fit among
themselves: the brute force here checks every span bounded by any two report times, of all reports.
Reports are drawn at random (fixed seed); each is stored only if the brute force accepts it, so the
stored ones always fit, as the service keeps them.
"""

from __future__ import annotations

import bisect
import random
from datetime import timedelta
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from allocations.usage_fit import Overfull, chained, instant, worst_span

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


# --- the O(n log n) sweep against the quadratic one it replaced -------------------------------------


def quadratic_worst_span(rows: list[tuple[int, int, Decimal]], *, start: int, end: int, gpu_hours: Decimal,
                         gpus: int) -> Overfull | None:
    """`worst_span` as it was before the segment tree: each nested row adds to every earlier start, O(n²)."""
    a_list = sorted({start, *(row[0] for row in rows if row[0] < start)})
    early = sorted((row[0], row[2]) for row in rows if row[1] <= end)
    suffix = [Decimal(0)] * (len(early) + 1)
    for i in range(len(early) - 1, -1, -1):
        suffix[i] = suffix[i + 1] + early[i][1]
    value = [gpus * a + suffix[bisect.bisect_left(early, (a, Decimal(-1)))] * HOUR for a in a_list]
    later = sorted((row[1], row[2]) for row in rows if row[1] > end and row[0] >= start)
    around = sorted((row[1], row[0], row[2]) for row in rows if row[1] > end and row[0] < start)
    best = max(range(len(a_list)), key=value.__getitem__)
    right, taken_later, taken_around = Decimal(0), 0, 0
    worst: Overfull | None = None
    worst_excess: Decimal | int = 0
    for b in sorted({end, *(row[1] for row in rows if row[1] > end)}):
        while taken_later < len(later) and later[taken_later][0] <= b:
            right += later[taken_later][1]
            taken_later += 1
        changed = False
        while taken_around < len(around) and around[taken_around][0] <= b:
            _end, row_start, hours = around[taken_around]
            for i, a in enumerate(a_list):
                if a <= row_start:
                    value[i] += hours * HOUR
            taken_around += 1
            changed = True
        if changed:
            best = max(range(len(a_list)), key=value.__getitem__)
        excess = value[best] + (right + gpu_hours) * HOUR - gpus * b
        if excess > worst_excess:
            a = a_list[best]
            worst_excess = excess
            worst = Overfull(start=instant(a), end=instant(b),
                             gpu_hours=(value[best] - gpus * a) / HOUR + right + gpu_hours,
                             capacity_gpu_hours=Decimal(gpus * (b - a)) / HOUR)
    return worst


QUARTER = HOUR // 4
periods = st.tuples(st.integers(0, 96), st.integers(1, 48)).map(lambda p: (p[0] * QUARTER, (p[0] + p[1]) * QUARTER))
hundredths = st.integers(0, 2_000).map(lambda n: Decimal(n) / 100)
reports = st.tuples(periods, hundredths).map(lambda p: (p[0][0], p[0][1], p[1]))


@settings(max_examples=150, deadline=None, derandomize=True)
@given(stored=st.lists(reports, max_size=40), new=reports, gpus=st.integers(1, 8))
def test_the_sweep_finds_what_the_quadratic_check_found(stored, new, gpus):
    """Any reports (fitting or not, nested, touching, equal): the same worst span, the same numbers."""
    start, end, hours = new
    around = chained(stored, start=start, end=end)
    assert worst_span(around, start=start, end=end, gpu_hours=hours, gpus=gpus) == quadratic_worst_span(
        around, start=start, end=end, gpu_hours=hours, gpus=gpus)


def test_many_nested_reports_are_checked_like_few():
    """The issue's case in small: reports nested around the new one, each adding to every earlier start."""
    rows = [(i * HOUR, (400 - i) * HOUR, Decimal("0.01")) for i in range(1, 150)]
    for hours, overfull in ((Decimal(80), None), (Decimal("80.01"), (190, 210))):  # 20 h of 4 GPUs hold 80
        new = (190 * HOUR, 210 * HOUR, hours)
        around = chained(rows, start=new[0], end=new[1])
        assert len(around) == 149
        expected = quadratic_worst_span(around, start=new[0], end=new[1], gpu_hours=new[2], gpus=GPUS)
        found = worst_span(around, start=new[0], end=new[1], gpu_hours=new[2], gpus=GPUS)
        assert found == expected
        assert (found and ((found.start - instant(0)) // timedelta(hours=1),
                           (found.end - instant(0)) // timedelta(hours=1))) == overfull
