"""Whether usage reports of one pool can all be true at once: pure arithmetic on plain data.

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
`allocations.services.usage_record` reads the stored reports and calls these; docs/adapters.md
("Usage reports Docket refuses") states the rule for operators.
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


def worst_span(rows: list[Row], *, start: int, end: int, gpu_hours: Decimal, gpus: int) -> Overfull | None:
    """The span [a, b] ⊇ [start, end) whose reports (rows wholly inside it, plus the new one) most exceed
    gpus × (b − a), a a start of rows before `start` or `start`, b an end of rows after `end` or `end`.

    In GPU-microseconds, the excess of [a, b] is V(a) + (R(b) + new) − gpus × b, where
    V(a) = gpus × a + the rows ending by `end` that start at a or later (a suffix sum), R(b) = the
    rows starting at `start` or later that end after `end`, by b; a row starting before `start` and
    ending after `end` adds to V(a) for a ≤ its start once b reaches its end. One sweep over b.
    """
    a_list = sorted({start, *(row[0] for row in rows if row[0] < start)})
    early = sorted((row[0], row[2]) for row in rows if row[1] <= end)
    suffix = [Decimal(0)] * (len(early) + 1)
    for i in range(len(early) - 1, -1, -1):
        suffix[i] = suffix[i + 1] + early[i][1]
    value = [gpus * a + suffix[bisect.bisect_left(early, (a, Decimal(-1)))] * _US_PER_HOUR for a in a_list]
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
                    value[i] += hours * _US_PER_HOUR
            taken_around += 1
            changed = True
        if changed:
            best = max(range(len(a_list)), key=value.__getitem__)
        excess = value[best] + (right + gpu_hours) * _US_PER_HOUR - gpus * b
        if excess > worst_excess:
            a = a_list[best]
            worst_excess = excess
            worst = Overfull(start=instant(a), end=instant(b),
                             gpu_hours=(value[best] - gpus * a) / _US_PER_HOUR + right + gpu_hours,
                             capacity_gpu_hours=Decimal(gpus * (b - a)) / _US_PER_HOUR)
    return worst
