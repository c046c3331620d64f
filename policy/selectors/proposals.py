"""Reads of the policy lab: the board, one proposal, the weeks a change can take effect, observed-result status."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Count, Prefetch, Q, QuerySet
from django.utils.translation import gettext as _

from committee import weeks
from committee.models import ReviewCycle
from governed.models import PolicyChange
from policy.models import Proposal, ProposalStatus, ProposalVote, VoteChoice

# The board asks for the observed result within this long after the end of the first week the change applied.
OBSERVED_RESULT_GRACE = timedelta(hours=24)
# How far ahead the next free week is looked for.
WEEKS_AHEAD_MAX = 260


class ObservedStatus:
    SCHEDULED = "scheduled"  # the effective week has not begun
    WAITING = "waiting"  # in the first week
    DUE = "due"
    OVERDUE = "overdue"
    RECORDED = "recorded"


def _week_after(week: str) -> str:
    return weeks.week_label(weeks.parse_week(week) + timedelta(days=7))


def week_earliest(*, now: datetime) -> str:
    """The first week a change adopted now can take effect from: after the current week, and with no cycle open yet.

    A cycle pins its rubric when it opens, and the weeks before it keep their rules, so a week whose cycle already
    exists is too late. Two queries at most per week skipped.
    """
    week = _week_after(weeks.current_week_label(now))
    opened = set(ReviewCycle.objects.filter(starts_at__gte=weeks.week_bounds(week)[0]).values_list("week", flat=True))
    while week in opened:
        week = _week_after(week)
    return week


def week_next_free(*, now: datetime, from_week: str | None = None) -> str:
    """The first week from `from_week` (default: the earliest possible) with no adopted change and no substantive
    change made elsewhere (governed). Three queries."""
    earliest = week_earliest(now=now)
    week = from_week if from_week and weeks.parse_week(from_week) > weeks.parse_week(earliest) else earliest
    taken = set(
        Proposal.objects.filter(status=ProposalStatus.ADOPTED, effective_monday__gte=weeks.parse_week(week))
        .values_list("effective_week", flat=True)
    ) | set(
        PolicyChange.objects.filter(effective_monday__gte=weeks.parse_week(week), exempt_reason="")
        .values_list("effective_week", flat=True)
    )
    for _step in range(WEEKS_AHEAD_MAX):
        if week not in taken:
            return week
        week = _week_after(week)
    return week


def observed_due_at(proposal: Proposal) -> datetime | None:
    """The end of the first week the change applied plus OBSERVED_RESULT_GRACE; None unless adopted."""
    if proposal.status != ProposalStatus.ADOPTED or not proposal.effective_week:
        return None
    return weeks.week_bounds(proposal.effective_week)[1] + OBSERVED_RESULT_GRACE


def observed_status(proposal: Proposal, *, now: datetime) -> str | None:
    """scheduled / waiting / due / overdue / recorded for an adopted proposal; None for any other.

    Due from the end of the effective week (Monday 00:00 after it, committee time) until 24 hours later inclusive;
    overdue after that.
    """
    due_at = observed_due_at(proposal)
    if due_at is None:
        return None
    if proposal.observed_at is not None:
        return ObservedStatus.RECORDED
    if now < weeks.week_bounds(proposal.effective_week)[0]:
        return ObservedStatus.SCHEDULED
    if now < due_at - OBSERVED_RESULT_GRACE:
        return ObservedStatus.WAITING
    return ObservedStatus.DUE if now <= due_at else ObservedStatus.OVERDUE


def observed_status_label(status: str | None) -> str:
    return {
        ObservedStatus.SCHEDULED: _("not in effect yet"),
        ObservedStatus.WAITING: _("in its first week"),
        ObservedStatus.DUE: _("observed result due"),
        ObservedStatus.OVERDUE: _("observed result overdue"),
        ObservedStatus.RECORDED: _("observed result recorded"),
    }.get(status or "", "")


def _with_counts(qs: QuerySet[Proposal]) -> QuerySet[Proposal]:
    return qs.annotate(
        support_count=Count("votes", filter=Q(votes__choice=VoteChoice.SUPPORT), distinct=True),
        against_count=Count("votes", filter=Q(votes__choice=VoteChoice.AGAINST), distinct=True),
        comment_count=Count("comments", distinct=True),
    ).prefetch_related("changes")


@dataclass(frozen=True)
class BoardRow:
    proposal: Proposal
    observed: str | None
    observed_label: str
    observed_due_at: datetime | None


@dataclass(frozen=True)
class Board:
    open: list[Proposal]
    adopted: list[BoardRow]
    declined: list[Proposal]


def proposal_board(*, now: datetime) -> Board:
    """The board: open proposals with vote counts, adopted ones with effective week and observed-result status,
    declined ones. Four queries, whatever the number of proposals."""
    rows = list(_with_counts(Proposal.objects.all()).order_by("-created_at", "-pk"))
    adopted = sorted((p for p in rows if p.status == ProposalStatus.ADOPTED),
                     key=lambda p: p.effective_monday or now.date(), reverse=True)
    return Board(
        open=[p for p in reversed(rows) if p.status == ProposalStatus.OPEN],  # first filed first
        adopted=[
            BoardRow(proposal=p, observed=(s := observed_status(p, now=now)), observed_label=observed_status_label(s),
                     observed_due_at=observed_due_at(p))
            for p in adopted
        ],
        declined=[p for p in rows if p.status == ProposalStatus.DECLINED],
    )


def proposal_get(*, pk: int) -> Proposal:
    """One proposal with its changes, figures, comments and votes (Proposal.DoesNotExist if none). Five queries."""
    return _with_counts(Proposal.objects.filter(pk=pk)).prefetch_related(
        "figures", "comments", Prefetch("votes", queryset=ProposalVote.objects.order_by("created_at", "pk"))
    ).get()


def proposal_vote_of(*, proposal: Proposal, user_id: int) -> ProposalVote | None:
    return next((v for v in proposal.votes.all() if v.voter_id == user_id), None)


def replay_query_pairs(proposal: Proposal, *, weeks_back: int = 8) -> list[tuple[str, str]]:
    """The replay's query for a proposal: each change as key=value, then weeks=<n>."""
    return [*((c.key, c.new_value) for c in proposal.changes.all()), ("weeks", str(weeks_back))]
