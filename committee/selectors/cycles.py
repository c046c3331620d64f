"""Review cycles and the rubric in force in a week (from the one store of governed parameters)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from django.db.models import QuerySet
from django.http import Http404
from django.utils import timezone

from committee import scoring, weeks
from committee.models import CycleStatus, ReviewCycle, criterion_label
from core.isoweek import is_iso_week
from governed import params
from governed.models import PolicyChange
from governed.params import Value, as_int
from governed.selectors import policy_changes, policy_settings_for_weeks, policy_value_typed, policy_values_versioned


def cycle_list() -> QuerySet[ReviewCycle]:
    return ReviewCycle.objects.order_by("-starts_at")


def cycle_get(*, week: str) -> ReviewCycle:
    """The cycle of an ISO week; Http404 if there is none (or `week` is no week)."""
    if not is_iso_week(week):
        raise Http404("No such cycle")
    try:
        return cycle_list().get(week=week)
    except ReviewCycle.DoesNotExist:
        raise Http404("No such cycle") from None


def cycle_for_review() -> ReviewCycle | None:
    """The week that needs the committee's work, which the review page opens on.

    The week in review (scoring, deciding); else a finalized week not yet published (the chair publishes);
    else the week open for intake (what comes in); else the latest published week. The earliest of each.
    """
    cycles = cycle_list()
    return (
        cycles.filter(status=CycleStatus.IN_REVIEW).order_by("starts_at").first()
        or cycles.filter(status=CycleStatus.FINALIZED).order_by("starts_at").first()
        or cycles.filter(status=CycleStatus.OPEN).order_by("starts_at").first()
        or cycles.filter(status=CycleStatus.PUBLISHED).first()
    )


RUBRIC_KEYS = "rubric"  # the prefix of both families: params.RUBRIC_PREFIX (weights), RUBRIC_GUIDANCE_PREFIX


@dataclass(frozen=True)
class Rubric:
    """The rubric in force in a week, read from the one store of governed parameters (governed): each criterion's
    weight and guidance, and the version of the rules (the store's change) that last set one of them by then."""

    number: int
    weights: dict[str, int]
    guidance: dict[str, str]
    effective_week: str = ""  # "" for version 1, in force since always
    reason: str = ""
    author_name: str = ""
    created_at: datetime | None = None

    @property
    def weights_label(self) -> str:
        return "/".join(str(w) for w in self.weights.values())


def _rubric_from(values: Mapping[str, Value], number: int, change: PolicyChange | None = None) -> Rubric:
    return Rubric(
        number=number,
        weights={c: as_int(values.get(params.RUBRIC_PREFIX + c, 0)) for c in scoring.CRITERIA},
        guidance={c: str(values.get(params.RUBRIC_GUIDANCE_PREFIX + c, "")) for c in scoring.CRITERIA},
        effective_week=change.effective_week if change is not None else "",
        reason=change.reason if change is not None else "",
        author_name=change.author_name if change is not None else "",
        created_at=change.created_at if change is not None else None,
    )


def rubric_for_week(*, week: str) -> Rubric:
    """The rubric a week is scored, ranked and recorded with: the weights and guidance in force that week. One
    query. Every reader of the rubric (scoring, ranking, the what-if, the record, the PDF, the API) goes here."""
    values, number = policy_values_versioned(week=week, prefix=RUBRIC_KEYS)
    return _rubric_from(values, number)


def rubric_versions_for_weeks(*, weeks: list[str]) -> dict[str, int]:
    """The rubric's version (as `rubric_for_week(...).number`) in each of `weeks`. One query, whatever the number of
    weeks: a list of cycles reads them at once."""
    keys = tuple(prefix + c for prefix in (params.RUBRIC_PREFIX, params.RUBRIC_GUIDANCE_PREFIX)
                 for c in scoring.CRITERIA)
    settings = policy_settings_for_weeks(weeks=weeks, keys=keys) if weeks else {}
    return {week: max(found.values(), key=lambda s: s.order).number if found else 1
            for week, found in settings.items()}


def rubric_week_next(*, now: datetime) -> str:
    """The week a rubric change made now applies from: the first week after this one whose cycle is not open yet."""
    week = weeks.week_label(weeks.parse_week(weeks.current_week_label(now)) + timedelta(weeks=1))
    opened = set(ReviewCycle.objects.filter(starts_at__gte=weeks.week_bounds(week)[0]).values_list("week", flat=True))
    while week in opened:
        week = weeks.week_label(weeks.parse_week(week) + timedelta(weeks=1))
    return week


def rubric_current(*, now: datetime | None = None) -> Rubric:
    """The rubric a cycle opened now would be scored with (that of `rubric_week_next`), with who set it, when and
    why. Three queries."""
    values, number = policy_values_versioned(week=rubric_week_next(now=now or timezone.now()), prefix=RUBRIC_KEYS)
    return _rubric_from(values, number, PolicyChange.objects.filter(number=number).first())


@dataclass(frozen=True)
class RubricChange:
    """One version of the rubric next to the one before it: who changed what, when and why."""

    version: Rubric
    previous: Rubric | None
    cycle_weeks: tuple[str, ...]

    @property
    def weight_changes(self) -> list[tuple[str, int | None, int, bool]]:
        """(criterion label, old weight, new weight, changed) for each criterion."""
        new = self.version.weights
        old = self.previous.weights if self.previous else {}
        return [
            (criterion_label(c), old.get(c), new[c], old.get(c) != new[c]) for c in scoring.CRITERIA
        ]

    @property
    def guidance_changed(self) -> list[str]:
        if self.previous is None:
            return []
        old, new = self.previous.guidance, self.version.guidance
        return [criterion_label(c) for c in scoring.CRITERIA if old[c] != new[c]]


def rubric_history() -> list[RubricChange]:
    """Every change of the rubric in the store (its weights or its guidance), newest first, each with the rubric
    before it and the weeks whose cycles it applied to. Version 1 as declared where its rows are missing (a flushed
    database). Three queries."""
    stored = sorted(policy_changes(prefix=RUBRIC_KEYS),
                    key=lambda c: (c.effective_monday is not None, c.effective_monday or date.min, c.number))
    changes: list[PolicyChange | None] = [None, *stored] if not stored or stored[0].number != 1 else [*stored]
    cycle_weeks = list(ReviewCycle.objects.order_by("starts_at").values_list("week", flat=True))
    state: dict[str, Value] = {k: v for k, v in params.defaults().items() if k.startswith(RUBRIC_KEYS)}
    out: list[RubricChange] = []
    previous: Rubric | None = None
    for index, change in enumerate(changes):
        for value in change.values.all() if change is not None else ():
            if value.key.startswith(RUBRIC_KEYS):
                state[value.key] = policy_value_typed(key=value.key, raw=value.value)
        version = _rubric_from(state, change.number if change is not None else 1, change)
        start = change.effective_week if change is not None and change.effective_week else "0000-W00"
        following = changes[index + 1] if index + 1 < len(changes) else None
        end = following.effective_week if following is not None else "9999-W99"
        out.append(RubricChange(version=version, previous=previous,
                                cycle_weeks=tuple(w for w in cycle_weeks if start <= w < end)))
        previous = version
    return out[::-1]
