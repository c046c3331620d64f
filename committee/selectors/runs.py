"""Runs over several weeks (docs/multi-week-runs.md): the policy's limits on them and their rules at filing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TypeGuard

from django.utils import formats, timezone
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from allocations import selectors as allocation_selectors
from allocations.commitments import RunWeek
from allocations.models import GpuPool
from allocations.selectors import Continuation
from committee import weeks
from committee.models import LifecycleEvent, LifecycleEventType, ReviewCycle
from governed.params import GRANTS_CONTINUATION_PCT, GRANTS_MAX_WEEKS, as_int
from governed.selectors import policy_value


def run_max_weeks(*, week: str) -> int:
    """The most consecutive weeks a request filed for `week` may span (grants.max_weeks in force then)."""
    return as_int(policy_value(key=GRANTS_MAX_WEEKS, week=week))


def continuation_threshold_pct(*, week: str) -> int:
    """The measured utilization (%) of a run in the week before `week` that confirms its commitment for `week`."""
    return as_int(policy_value(key=GRANTS_CONTINUATION_PCT, week=week))


def _whole(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def weekly_gpu_counts_problems(
    *, run_weeks: object, gpu_count: object, weekly_gpu_counts: object, pool: GpuPool | None
) -> dict[str, list[str]]:
    """The rules of a run's GPUs per week, keyed by field: empty (one shape), or one whole count a week of the run,
    the first equal to the GPUs asked, each from 1 to the pool's GPUs. No query."""
    if not isinstance(weekly_gpu_counts, list | tuple) or not weekly_gpu_counts:
        return {}
    counts = list(weekly_gpu_counts)
    problems: list[str] = []
    if not all(_whole(count) and count >= 1 for count in counts):
        return {"weekly_gpu_counts": [_("Each week's GPUs is a whole number from 1.")]}
    if _whole(run_weeks) and len(counts) != run_weeks:
        problems.append(ngettext(
            "Give one count for each week of the run: it spans %(weeks)d week, this gives %(given)d.",
            "Give one count for each week of the run: it spans %(weeks)d weeks, this gives %(given)d.",
            run_weeks,
        ) % {"weeks": run_weeks, "given": len(counts)})
    if _whole(gpu_count) and counts[0] != gpu_count:
        problems.append(_("The first week's count is this week's GPUs: %(gpus)d, not %(first)d.")
                        % {"gpus": gpu_count, "first": counts[0]})
    if pool is not None:
        for number, count in enumerate(counts, start=1):
            if count > pool.gpu_count:
                problems.append(_("The pool %(pool)s has only %(count)d GPUs: week %(n)d of the run asks %(asked)d.")
                                % {"pool": pool.slug, "count": pool.gpu_count, "n": number, "asked": count})
    return {"weekly_gpu_counts": problems} if problems else {}


def run_weeks_problems(
    *, cycle: ReviewCycle, run_weeks: object, latest_end: datetime | None
) -> dict[str, list[str]]:
    """The rules of a run's length, keyed by field: 1 to grants.max_weeks weeks; over several weeks, the window
    reaches the end of the cycle's week (the run continues from there without a gap). One query."""
    if not _whole(run_weeks):
        return {}
    most = run_max_weeks(week=cycle.week)
    if not 1 <= run_weeks <= most:
        return {"run_weeks": [ngettext(
            "A request spans from 1 to %(most)d week.", "A request spans from 1 to %(most)d weeks.", most,
        ) % {"most": most}]}
    if run_weeks > 1 and latest_end is not None and latest_end != cycle.ends_at:
        local = timezone.localtime(cycle.ends_at, weeks.committee_zone())
        return {"latest_end": [
            _("A run over several weeks continues into the next week without a gap: its latest end is the end of "
              "week %(week)s, %(end)s.")
            % {"week": cycle.week, "end": formats.date_format(local, _("D j M Y, H:i T"))}
        ]}
    return {}


def previous_week(week: str) -> str:
    """The ISO week before `week`."""
    return weeks.week_label(weeks.parse_week(week) - timedelta(days=7))


def next_week(week: str) -> str:
    """The ISO week after `week`."""
    return weeks.week_label(weeks.parse_week(week) + timedelta(days=7))


def run_later_weeks(*, week: str, weeks_granted: int) -> list[RunWeek]:
    """The weeks after `week` a run granted for `weeks_granted` weeks continues in, each whole (Monday 00:00 to the
    next Monday 00:00 in the committee's zone: 167, 168 or 169 hours), so each starts where the one before ends."""
    monday = weeks.parse_week(week)
    later = []
    for number in range(2, weeks_granted + 1):
        label = weeks.week_label(monday + timedelta(days=7 * (number - 1)))
        start, end = weeks.week_bounds(label)
        later.append(RunWeek(week=label, week_number=number, start=start.astimezone(UTC), end=end.astimezone(UTC)))
    return later


def week_continuations(*, week: str) -> list[Continuation]:
    """The commitments of `week` (every state), each with the evidence of its run's week before and the state
    settling it now gives: what the review shows, what the week's placement places first. Two queries, plus one a
    commitment not yet settled."""
    threshold = continuation_threshold_pct(week=week)
    before = previous_week(week)
    return [
        allocation_selectors.commitment_continuation(commitment=c, previous_week=before, threshold_pct=threshold)
        for c in allocation_selectors.commitment_list_for_week(week=week)
    ]


# The changes to a week's grants after its publish that its decision record lists beside the runs carried in.
GRANT_CHANGE_TYPES = (LifecycleEventType.WINDOW_RELEASED, LifecycleEventType.GRANT_EXTENDED)


def grant_changes_for_week(*, week: str) -> list[LifecycleEvent]:
    """The week's grants given back (in part or whole) and extended, in the order they happened: their lifecycle
    events, which `window_release` and the extension's placement record once each with the facts (`data`: the
    request, team, pool, GPUs, the plan version, and for a release the GPUs given back and from when). One query."""
    return list(
        LifecycleEvent.objects.filter(type__in=GRANT_CHANGE_TYPES, data__week=week).order_by("occurred_at", "id")
    )
