"""The weekly clock: the jobs done on the committee's calendar, in the committee's time zone.

One Celery beat entry, `clock-tick` (every `DOCKET_CLOCK_TICK_SECONDS`, a minute by default), runs
`clock_tick`: it asks `committee.selectors.clock_due` what is owed at `now` (committee/calendar.py) and
does each owed run once. A run missed while the broker, the worker or beat was down is still owed at the
next tick, so it happens then; nothing hangs on one beat message arriving at one instant.

| job (committee/calendar.py) | due from (committee time)         | service                      | command          |
|-----------------------------|-----------------------------------|------------------------------|------------------|
| close_intake                | an open cycle's close (Fri 18:00) | cycle_close_due_intake       | close_due_intake |
| open_cycle                  | Monday 00:00, while no cycle      | cycle_open_next              | open_cycle       |
| remind_teams                | Thursday 10:00                    | teams_remind_unfiled         | remind_teams     |
| remind_committee            | Monday 06:00                      | committee_remind_review      | remind_committee |
| send_digests                | daily 07:00                       | digests_send                 | send_digests     |
| chat_intake_closing         | hourly at :05 (UTC hours)         | chat_intake_closing_announce | chat_intake_closing |
| elastic_evaluate            | hourly at :15 (UTC hours)         | allocations elastic_evaluate | elastic_evaluate |
| lifecycle_events            | hourly at :00 (UTC hours)         | lifecycle_events_due         |                  |
| outcome_asks                | hourly at :00 (UTC hours)         | outcome_asks_due             |                  |
| record_agent_actions        | hourly at :30 (UTC hours)         | record_agent_actions_due     |                  |
| (the chair, by hand)        |                                   | cycle_open_following         |                  |

Each service takes `now`, acts on what is due at `now`, and is idempotent: running it twice has the
effect of running it once (a cycle exists once per week, a notification once per person and subject, a
closed cycle is not closed again). The reminders record notifications; people get them in their next
daily digest (07:00), so the committee's Monday reminder arrives before the 09:00 review. The elastic job then
tells of windows it found idle (`idle_events_due`), which the lifecycle job makes up if that was missed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Count, Q
from django.urls import reverse
from django.utils.translation import gettext as _

from allocations.elastic.services import elastic_evaluate
from allocations.models import Team
from committee import calendar, scoring, selectors, signals, weeks
from committee.models import (
    ClockRun,
    CycleStatus,
    GpuRequest,
    NotificationKind,
    RequestStatus,
    ReviewCycle,
    Score,
    TeamMembership,
)
from committee.services.chat import chat_intake_closing_announce
from committee.services.events import idle_events_due, lifecycle_events_due
from committee.services.notifications import digests_send, notifications_record
from committee.services.realized import outcome_asks_due
from committee.services.records import record_agent_actions_due
from committee.services.requests import cycle_create
from committee.services.review import cycle_close_intake
from core.errors import StateConflict
from core.locks import advisory_lock, write_transaction

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


def _close_intake(due: calendar.Due, now: datetime) -> str:
    # As of the closing time, also when the tick comes late: the fair shares frozen are those of the close.
    cycle = cycle_close_intake(cycle=ReviewCycle.objects.get(week=due.period), actor=None, now=min(now, due.due_at))
    return f"{cycle.week} in review"


def _elastic(due: calendar.Due, now: datetime) -> str:
    result = elastic_evaluate(now=now)
    told = idle_events_due(now=now)  # an idle window is told at once, not at the next :00
    return (f"policy v{result.policy_version}: {result.started} started, {result.ended} ended, {result.kept} kept; "
            f"{told} idle events")


def _records(due: calendar.Due, now: datetime) -> str:
    asked = [cycle.week for cycle in record_agent_actions_due(now=now)]
    return f"records asked for: {', '.join(asked)}" if asked else "no record lacks its agents' actions"


# What each of the clock's jobs does (committee/calendar.py JOBS), as a short result for its ClockRun row.
CLOCK_RUNNERS: dict[str, Callable[[calendar.Due, datetime], str]] = {
    calendar.CLOSE_INTAKE: _close_intake,
    calendar.OPEN_CYCLE: lambda due, now: f"{cycle_open_next(now=now)[0].week} opened",
    "remind_teams": lambda due, now: f"{teams_remind_unfiled(now=now)} notifications",
    "remind_committee": lambda due, now: f"{committee_remind_review(now=now)} notifications",
    "send_digests": lambda due, now: f"{digests_send(now=now)} digests",
    "chat_intake_closing": lambda due, now: " ".join(chat_intake_closing_announce(now=now)) or "nothing to announce",
    "elastic_evaluate": _elastic,
    "lifecycle_events": lambda due, now: f"{lifecycle_events_due(now=now)} events",
    "outcome_asks": lambda due, now: f"{outcome_asks_due(now=now)} outcomes asked for",
    "record_agent_actions": _records,
}


# Jobs that run in transactions of their own, not inside the run's: the elastic evaluation locks one pool row at a
# time (held for the whole evaluation, those locks would make every usage post of those pools wait), and the
# digests send mail person by person. Each is safe to run twice at once by itself (a pool's row lock; one digest
# per person and day, the person's notifications locked), so two ticks at once still act once.
OWN_TRANSACTIONS = frozenset({"elastic_evaluate", "send_digests"})


def _record(due: calendar.Due, now: datetime, result: str) -> ClockRun:
    run, _created = ClockRun.objects.update_or_create(
        job=due.job, period=due.period, defaults={"due_at": due.due_at, "ran_at": now, "result": result[:500]},
    )
    return run


def _run(due: calendar.Due, now: datetime) -> ClockRun | None:
    if due.job in OWN_TRANSACTIONS:
        if due not in selectors.clock_due(now=now, jobs={due.job}):
            return None
        result = CLOCK_RUNNERS[due.job](due, now)
        try:
            with transaction.atomic():
                return _record(due, now, result)
        except IntegrityError:
            return None  # a tick beside this one ran it too, and recorded it first
    with transaction.atomic():
        advisory_lock(f"docket:clock:{due.job}")
        if due not in selectors.clock_due(now=now, jobs={due.job}):
            return None  # another tick did it (or the chair) while this one waited
        return _record(due, now, CLOCK_RUNNERS[due.job](due, now))


def clock_tick(*, now: datetime) -> list[ClockRun]:
    """Do every run the clock owes at `now`, each once however many ticks run at the same moment.

    Each run is one transaction: an advisory lock per job (core/locks.py) keeps concurrent ticks apart,
    the run is checked again under the lock, the job's service acts, and a `ClockRun` row (unique per job
    and period) records it with the effect, so a run that fails records nothing and is owed again at the
    next tick (OWN_TRANSACTIONS: the service's own transactions, then the row). One job's failure is logged
    and does not hold back the others. Also records the tick itself. Returns the runs done by this call.
    """
    done: list[ClockRun] = []
    for due in selectors.clock_due(now=now):
        try:
            run = _run(due, now)
        except Exception:  # the next tick tries again; the other jobs go on
            logger.exception("clock: %s for %s failed; the next tick tries again", due.job, due.period)
            continue
        if run is not None:
            logger.info("clock: %s for %s (due %s): %s", due.job, due.period, due.due_at.isoformat(), run.result)
            done.append(run)
    for receiver, outcome in signals.clock_ticked.send_robust(sender=None, now=now):
        if isinstance(outcome, Exception):
            logger.error("clock: %s failed at the tick; the next tick tries again", getattr(receiver, "__qualname__",
                         receiver), exc_info=outcome)
    ClockRun.objects.update_or_create(job=ClockRun.TICK, period="", defaults={"due_at": now, "ran_at": now})
    return done
