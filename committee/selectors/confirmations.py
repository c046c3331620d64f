"""What the chair is shown before a step that cannot be undone: closing intake (finalize and publish
show the placement, committee.selectors.placement)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from committee.models import GpuRequest, RequestStatus, ReviewCycle


@dataclass(frozen=True)
class IntakeCloseCheck:
    """Closing intake now: how early it is and how many requests it leaves behind.

    Drafts are not reviewed: once intake closes, their teams cannot submit them this week.
    """

    cycle: ReviewCycle
    now: datetime
    submitted_count: int
    draft_count: int
    draft_team_names: tuple[str, ...]

    @property
    def before_deadline(self) -> bool:
        return self.now < self.cycle.intake_closes_at


def intake_close_check(*, cycle: ReviewCycle, now: datetime) -> IntakeCloseCheck:
    """The facts of the close-intake confirmation. Two queries."""
    submitted = GpuRequest.objects.filter(cycle=cycle, status=RequestStatus.SUBMITTED).count()
    drafts = list(
        GpuRequest.objects.filter(cycle=cycle, status=RequestStatus.DRAFT).values_list("team__name", flat=True)
    )
    return IntakeCloseCheck(
        cycle=cycle,
        now=now,
        submitted_count=submitted,
        draft_count=len(drafts),
        draft_team_names=tuple(sorted(set(drafts))),
    )
