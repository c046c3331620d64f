"""Whether the measured usage records of one pool can all be true at once: pure arithmetic on plain data.

A report says how many GPU-hours a team used somewhere inside its period, not when. Reports can
all be true at once exactly when, for every span [a, b], the GPU-hours of the reports lying
wholly inside it fit in GPUs × (b − a): the feasibility condition of preemptive scheduling with
release times and deadlines, the pool being one machine that does `gpus` GPU-hours an hour.

The stored reports passed this check when they came, so only spans containing a new report's
period can break; and a span may be cut at any instant that no report straddles without losing
what it proves (each side fits on its own). So for a new report it is enough to check the spans
bounded by the starts and ends of the reports chained to it by overlapping periods (`chained`),
each counting every report wholly inside it (`worst_span`). Partial overlaps are not prorated:
a day's report beside an hour's is refused only if the day cannot hold both.
`allocations.services.measured_usage_record` reads the stored reports and calls these; docs/adapters.md
("Measured usage Docket refuses") states the rule for operators.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal


@dataclass(frozen=True)
class Overfull:
    """A span whose reports, the new one included, hold more GPU-hours than the pool over the span."""

    start: datetime
    end: datetime
    gpu_hours: Decimal
    capacity_gpu_hours: Decimal


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_US_PER_HOUR = 3_600_000_000
Row = tuple[int, int, Decimal]  # a report's period in microseconds since the epoch, and its GPU-hours


def us(moment: datetime) -> int:
    """An instant as microseconds since the epoch (exact, unlike a float timestamp)."""
    return (moment - _EPOCH) // timedelta(microseconds=1)


def instant(micros: int) -> datetime:
    return _EPOCH + timedelta(microseconds=micros)


def chained(rows: list[Row], *, start: int, end: int) -> list[Row]:
    """The rows chained to [start, end) by overlapping periods (periods that only touch do not chain)."""
    group: list[Row] = []
    group_end, has_new = None, False
    for row in sorted([*rows, (start, end, Decimal(-1))], key=lambda row: row[0]):
        if group_end is None or row[0] >= group_end:
            if has_new:
                break
            group, group_end = [], row[1]
        group.append(row)
        group_end = max(group_end, row[1])
        has_new = has_new or row[2] < 0
    return [row for row in group if row[2] >= 0]


class _PrefixAddMax:
    """Numbers v[0..n) with "add h to v[0..k)" and "the largest v[i], leftmost first", each in O(log n).

    A bottom-up segment tree: node p holds the max of its leaves plus `added[p]`, what was added to
    the whole of its range; the leaves past n are never the max.
    """

    def __init__(self, values: list[int]) -> None:
        size = 1
        while size < len(values):
            size *= 2
        self.size, self.n = size, len(values)
        floor = min(values) - 1  # below every value, and values only grow
        self.top = [floor] * (2 * size)
        self.top[size : size + len(values)] = values
        for p in range(size - 1, 0, -1):
            self.top[p] = max(self.top[2 * p], self.top[2 * p + 1])
        self.added = [0] * (2 * size)

    def add_prefix(self, k: int, amount: int) -> None:
        if k <= 0:
            return
        low, high = self.size, self.size + k
        first, last = low, high - 1
        top, added = self.top, self.added
        while low < high:
            if low & 1:
                top[low] += amount
                added[low] += amount
                low += 1
            if high & 1:
                high -= 1
                top[high] += amount
                added[high] += amount
            low //= 2
            high //= 2
        for p in (first, last):
            p //= 2
            while p:
                top[p] = max(top[2 * p], top[2 * p + 1]) + added[p]
                p //= 2

    def best(self) -> tuple[int, int]:
        """The largest value and its index (the smallest index among equals)."""
        p = 1
        while p < self.size:
            p = 2 * p if self.top[2 * p] >= self.top[2 * p + 1] else 2 * p + 1
        return self.top[1], p - self.size


def _scaled(hours: Decimal) -> int:
    """GPU-hours as GPU-microseconds, exactly (reports carry at most two decimals; 1 h is 3.6e9 µs)."""
    value = hours * _US_PER_HOUR
    if value != value.to_integral_value():
        raise ValueError(f"{hours} GPU-hours are not a whole number of GPU-microseconds")
    return int(value)


def worst_span(rows: list[Row], *, start: int, end: int, gpu_hours: Decimal, gpus: int) -> Overfull | None:
    """The span [a, b] ⊇ [start, end) whose reports (rows wholly inside it, plus the new one) most exceed
    gpus × (b − a), a a start of rows before `start` or `start`, b an end of rows after `end` or `end`.

    In GPU-microseconds, the excess of [a, b] is V(a) + (R(b) + new) − gpus × b, where
    V(a) = gpus × a + the rows ending by `end` that start at a or later (a suffix sum), R(b) = the
    rows starting at `start` or later that end after `end`, by b; a row starting before `start` and
    ending after `end` (one nested around the new report) adds to V(a) for every a ≤ its start once
    b reaches its end. One sweep over b; V is kept in a segment tree, so each nested row costs
    O(log n) and the whole check O(n log n) (it runs under the pool's row lock: docs/benchmarks.md).
    """
    a_list = sorted({start, *(row[0] for row in rows if row[0] < start)})
    early = sorted((row[0], _scaled(row[2])) for row in rows if row[1] <= end)
    suffix = [0] * (len(early) + 1)
    for i in range(len(early) - 1, -1, -1):
        suffix[i] = suffix[i + 1] + early[i][1]
    early_starts = [row[0] for row in early]
    value = _PrefixAddMax([gpus * a + suffix[bisect.bisect_left(early_starts, a)] for a in a_list])
    later = sorted((row[1], _scaled(row[2])) for row in rows if row[1] > end and row[0] >= start)
    around = sorted((row[1], row[0], _scaled(row[2])) for row in rows if row[1] > end and row[0] < start)
    new = _scaled(gpu_hours)
    right, taken_later, taken_around = 0, 0, 0
    worst: Overfull | None = None
    worst_excess = 0
    for b in sorted({end, *(row[1] for row in rows if row[1] > end)}):
        while taken_later < len(later) and later[taken_later][0] <= b:
            right += later[taken_later][1]
            taken_later += 1
        while taken_around < len(around) and around[taken_around][0] <= b:
            _end, row_start, amount = around[taken_around]
            value.add_prefix(bisect.bisect_right(a_list, row_start), amount)
            taken_around += 1
        excess = value.top[1] + right + new - gpus * b
        if excess > worst_excess:
            best, index = value.best()
            a = a_list[index]
            worst_excess = excess
            worst = Overfull(start=instant(a), end=instant(b),
                             gpu_hours=Decimal(best - gpus * a + right + new) / _US_PER_HOUR,
                             capacity_gpu_hours=Decimal(gpus * (b - a)) / _US_PER_HOUR)
    return worst
