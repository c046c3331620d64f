"""A believable demo: two clusters, six teams, a committee of four and a week of requests.

Every step looks rows up by their natural key before creating them, so running the seed twice
changes nothing. One module per part of the demo, run in this order by `seed_demo`: `people` (clusters, pools,
teams, people), `history` (the scheduler side and four past weeks, last week with a
lend used by preemptible work), `requests` (the open week's requests and
questions), `review` (the current week scored, decided, finalized), `running_week` (its plan published, an idle
grant, an emergency, a fast-lane grant and a refusal, a release that fed the waitlist, an extension approved),
`dashboards` (costs and the usage before Docket), `budgets` (three departments over the teams, with a budget each
for the quarter, one near its limit) and `outcomes` (a team's reported outcomes against its forecasts, another's
overdue).
"""

from __future__ import annotations

from datetime import datetime

from django.db import transaction
from django.utils import timezone

from committee import signals, weeks
from committee.demo.budgets import seed_departments_and_budgets
from committee.demo.dashboards import seed_dashboard_history
from committee.demo.history import DEMO_SCHEDULER_TOKENS, seed_scheduler_side
from committee.demo.outcomes import seed_outcomes
from committee.demo.people import DEMO_PASSWORD, seed_people, seed_resources
from committee.demo.requests import seed_intake_cycle, seed_questions
from committee.demo.review import seed_reviewed_week
from committee.demo.running_week import (
    seed_emergency,
    seed_extension,
    seed_fast_lane,
    seed_idle_grant,
    seed_published_week,
    seed_release,
)
from committee.models import Notification

__all__ = ["DEMO_PASSWORD", "DEMO_SCHEDULER_TOKENS", "seed_demo", "seed_history_read"]


@transaction.atomic
def seed_demo(*, now: datetime | None = None) -> list[tuple[str, str]]:
    now = now or timezone.now()
    pools = seed_resources()
    logins = seed_people()
    seed_scheduler_side(pools=pools, now=now)
    intake = seed_intake_cycle(pools=pools, now=now)
    seed_questions(cycle=intake)
    seed_reviewed_week(pools=pools, now=now)
    seed_published_week(now=now)
    seed_emergency(pools=pools, now=now)
    seed_dashboard_history(pools=pools, now=now)
    seed_idle_grant(now=now)
    seed_release(now=now)
    seed_extension(now=now)
    seed_fast_lane(pools=pools, now=now)  # after the release: its re-plan was placed without the fast-lane reserve
    seed_departments_and_budgets(now=now)
    seed_outcomes(now=now)
    seed_history_read(weeks_in_play={weeks.current_week_label(now), intake.week}, now=now)
    signals.demo_seeded.send(sender=None, now=now, logins=logins)
    return logins


def seed_history_read(*, weeks_in_play: set[str], now: datetime) -> None:
    """The demo's people have read what its past weeks told them: a fresh demo's inbox holds the notices about
    the week in force and the week open for intake, not one "intake closed" per seeded week. The notifications
    are recorded once the seeding commits, so this runs then too, after them."""

    def mark_read() -> None:
        unread = Notification.objects.filter(read_at__isnull=True, params__has_key="week")
        unread.exclude(params__week__in=sorted(weeks_in_play)).update(read_at=now)

    transaction.on_commit(mark_read)
