"""The weekly clock: the jobs Celery beat runs on the committee's calendar, in the committee's time zone.

| service                     | beat (config/settings.py)  | management command   |
|-----------------------------|----------------------------|----------------------|
| cycle_open_next             | Monday 00:00               | open_cycle           |
| cycle_open_following        | (the chair, by hand)       |                      |
| teams_remind_unfiled        | Thursday 10:00             | remind_teams         |
| cycle_close_due_intake      | Friday 18:00               | close_due_intake     |
| committee_remind_review     | Monday 06:00               | remind_committee     |

Each takes `now` (the beat task passes the current time; tests and the commands can pass
another), acts on what is due at `now`, and is idempotent: running it twice has the effect of
running it once (a cycle exists once per week, a notification once per person and subject, a
closed cycle is not closed again). The reminders record notifications; people get them in their
next daily digest (`send_digests`, 07:00), so the committee's Monday reminder arrives before
the 09:00 review.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count, Q
from django.urls import reverse
from django.utils.translation import gettext as _

from allocations.models import Team
from committee import scoring, selectors, weeks
from committee.models import (
    CycleStatus,
    GpuRequest,
    NotificationKind,
    RequestStatus,
    ReviewCycle,
    Score,
    TeamMembership,
)
from committee.services.notifications import notifications_record
from committee.services.requests import cycle_create
from committee.services.review import cycle_close_intake
from core.errors import StateConflict
from core.locks import write_transaction

logger = logging.getLogger(__name__)

# Teams are reminded when intake closes within this long; the committee when the review is this close.
TEAM_REMINDER_AHEAD = timedelta(hours=48)
COMMITTEE_REMINDER_AHEAD = timedelta(hours=24)


@write_transaction
def cycle_open_next(*, now: datetime) -> tuple[ReviewCycle, bool]:
    """Open the cycle teams file into this week: the next week's, or the week after when its intake has passed.

    Returns (cycle, created). Idempotent: the cycle of a week exists once, so a second run
    returns the same cycle with created=False and changes nothing.
    """
    week = weeks.next_week_label(now)
    if weeks.cycle_schedule(week)["intake_closes_at"] <= now:
        # Run late (after Friday's close): next week's intake is over, so open the week after.
        week = weeks.week_label(weeks.parse_week(week) + timedelta(days=7))
    existing = ReviewCycle.objects.filter(week=week).first()
    if existing is not None:
        return existing, False
    return cycle_create(week=week), True


@write_transaction
def cycle_open_following(*, actor: User, now: datetime) -> ReviewCycle:
    """The chair opens the next week for intake by hand, when none is open (a demo walked again, beat stopped).

    The week after the latest cycle, or the week cycle_open_next would open if that is later; refused while a
    week's intake is open.
    """
    if not selectors.user_is_chair(user=actor):
        raise PermissionDenied(_("Only the chair can open a week for intake."))
    ReviewCycle.objects.select_for_update(no_key=True).filter(status=CycleStatus.OPEN).exists()  # one opener at a time
    open_now = ReviewCycle.objects.filter(status=CycleStatus.OPEN, intake_closes_at__gt=now).order_by("starts_at")
    if (current := open_now.first()) is not None:
        raise StateConflict(_("Week %(week)s is already open for intake.") % {"week": current.week})
    week = weeks.next_week_label(now)
    while weeks.cycle_schedule(week)["intake_closes_at"] <= now or ReviewCycle.objects.filter(week=week).exists():
        week = weeks.week_label(weeks.parse_week(week) + timedelta(days=7))
    cycle = cycle_create(week=week)
    logger.info("cycle: %s opened week %s for intake by hand", actor, cycle.week)
    return cycle


@write_transaction
def teams_remind_unfiled(*, now: datetime) -> int:
    """Notify the members of every team that has not submitted a request to a cycle whose intake closes soon.

    Soon: after `now` and within TEAM_REMINDER_AHEAD. A team with only drafts counts as not
    filed (the notification says how many drafts it has). Returns how many notifications were
    recorded; a second run records none (one per person, cycle and team).
    """
    cycles = ReviewCycle.objects.filter(
        status=CycleStatus.OPEN, intake_closes_at__gt=now, intake_closes_at__lte=now + TEAM_REMINDER_AHEAD
    ).order_by("starts_at")
    recorded = 0
    for cycle in cycles:
        teams = list(
            Team.objects.filter(pk__in=TeamMembership.objects.values("team_id"))
            .annotate(
                submitted=Count(
                    "gpu_requests",
                    filter=Q(gpu_requests__cycle=cycle, gpu_requests__status=RequestStatus.SUBMITTED),
                ),
                drafts=Count(
                    "gpu_requests", filter=Q(gpu_requests__cycle=cycle, gpu_requests__status=RequestStatus.DRAFT)
                ),
            )
            .filter(submitted=0)
            .order_by("name")
        )
        members = selectors.team_member_ids(team_ids=[team.pk for team in teams])
        for team in teams:
            recorded += notifications_record(
                recipient_ids=members.get(team.pk, []),
                kind=NotificationKind.INTAKE_CLOSING,
                key=f"cycle:{cycle.week}:team:{team.pk}",
                params={
                    "week": cycle.week,
                    "team": team.name,
                    "closes_at": cycle.intake_closes_at.isoformat(),
                    "drafts": team.drafts,
                    "path": reverse("committee:portal"),
                },
            )
    return recorded


def cycle_close_due_intake(*, now: datetime) -> list[ReviewCycle]:
    """Close intake of every open cycle whose closing time has come (at or before `now`), as the clock.

    Each through `cycle_close_intake` (actor None): the cycle goes to review, fair shares are
    frozen, and the committee is notified (outbox, after commit). Returns the cycles closed; a
    second run finds none open and closes nothing. A cycle closed meanwhile by the chair is skipped.
    """
    closed = []
    due = ReviewCycle.objects.filter(status=CycleStatus.OPEN, intake_closes_at__lte=now).order_by("starts_at")
    for cycle in due:
        try:
            closed.append(cycle_close_intake(cycle=cycle, actor=None, now=now))
        except ValidationError:
            continue  # no longer open: closed by the chair or by a concurrent run
    return closed


@write_transaction
def committee_remind_review(*, now: datetime) -> int:
    """Notify every committee member of each cycle in review whose meeting is within COMMITTEE_REMINDER_AHEAD.

    The notification says how many of the cycle's submitted requests still lack the member's
    scores (their own teams' requests, which they may not score, left out). Returns how many
    notifications were recorded; a second run records none.
    """
    cycles = ReviewCycle.objects.filter(
        status=CycleStatus.IN_REVIEW, review_at__gt=now, review_at__lte=now + COMMITTEE_REMINDER_AHEAD
    ).order_by("starts_at")
    members = selectors.committee_member_ids(on=now.astimezone(weeks.committee_zone()).date())
    teams_of: dict[int, set[int]] = {}
    for user_id, team_id in TeamMembership.objects.filter(user_id__in=members).values_list("user_id", "team_id"):
        teams_of.setdefault(user_id, set()).add(team_id)
    recorded = 0
    for cycle in cycles:
        requests = list(
            GpuRequest.objects.filter(cycle=cycle, status=RequestStatus.SUBMITTED).values_list("pk", "team_id")
        )
        complete: dict[int, set[int]] = {}
        scored = (
            Score.objects.filter(request__cycle=cycle)
            .values("member_id", "request_id")
            .annotate(n=Count("criterion"))
            .filter(n__gte=len(scoring.MEMBER_SCORED))
        )
        for row in scored:
            complete.setdefault(row["member_id"], set()).add(row["request_id"])
        for user_id in members:
            mine = [pk for pk, team_id in requests if team_id not in teams_of.get(user_id, set())]
            unscored = len([pk for pk in mine if pk not in complete.get(user_id, set())])
            recorded += notifications_record(
                recipient_ids=[user_id],
                kind=NotificationKind.REVIEW_COMING,
                key=f"cycle:{cycle.week}:review",
                params={
                    "week": cycle.week,
                    "review_at": cycle.review_at.isoformat(),
                    "count": len(mine),
                    "unscored": unscored,
                    "path": reverse("committee:review-cycle", args=[cycle.week]),
                },
            )
    return recorded
