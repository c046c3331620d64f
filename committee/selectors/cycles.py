"""Review cycles and the rubric's versions."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Prefetch, QuerySet
from django.http import Http404

from committee import scoring
from committee.models import (
    Criterion,
    CycleStatus,
    ReviewCycle,
    RubricVersion,
    rubric_version_current_pk,
)
from core.isoweek import is_iso_week


def cycle_list() -> QuerySet[ReviewCycle]:
    return ReviewCycle.objects.select_related("rubric").order_by("-starts_at")


def cycle_get(*, week: str) -> ReviewCycle:
    """The cycle of an ISO week, with its pinned rubric; Http404 if there is none (or `week` is no week)."""
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


def rubric_current() -> RubricVersion:
    """The version a cycle opened now would pin."""
    return RubricVersion.objects.get(pk=rubric_version_current_pk())


@dataclass(frozen=True)
class RubricChange:
    """One version of the rubric next to the one before it: who changed what, when and why."""

    version: RubricVersion
    previous: RubricVersion | None
    cycle_weeks: tuple[str, ...]

    @property
    def weight_changes(self) -> list[tuple[str, int | None, int, bool]]:
        """(criterion label, old weight, new weight, changed) for each criterion."""
        new = self.version.weights()
        old = self.previous.weights() if self.previous else {}
        return [
            (str(Criterion(c).label), old.get(c), new[c], old.get(c) != new[c]) for c in scoring.CRITERIA
        ]

    @property
    def guidance_changed(self) -> list[str]:
        if self.previous is None:
            return []
        old, new = self.previous.guidance(), self.version.guidance()
        return [str(Criterion(c).label) for c in scoring.CRITERIA if old[c] != new[c]]


def rubric_history() -> list[RubricChange]:
    """Every rubric version, newest first, each with its predecessor and the cycles that pinned it. Two queries."""
    versions = list(
        RubricVersion.objects.order_by("number").prefetch_related(
            Prefetch("cycles", queryset=ReviewCycle.objects.order_by("starts_at").only("id", "week", "rubric_id"))
        )
    )
    changes = [
        RubricChange(
            version=version,
            previous=versions[index - 1] if index else None,
            cycle_weeks=tuple(c.week for c in version.cycles.all()),
        )
        for index, version in enumerate(versions)
    ]
    return changes[::-1]
