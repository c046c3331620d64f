"""ISO-week arithmetic in the committee's time zone (settings.TIME_ZONE)."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from django.conf import settings

from core.datetimes import format_isoweek
from core.isoweek import WEEK_RE as WEEK_RE  # re-exported: the forms match weeks with it
from core.isoweek import parse_iso_week


def committee_zone() -> ZoneInfo:
    return ZoneInfo(settings.TIME_ZONE)


def parse_week(week: str) -> date:
    """The Monday of an ISO week written as YYYY-Www; ValueError if malformed or the week does not exist."""
    return parse_iso_week(week)


def week_label(day: date) -> str:
    return format_isoweek(day)


def week_bounds(week: str) -> tuple[datetime, datetime]:
    """Monday 00:00 to the next Monday 00:00 in the committee's zone, as aware datetimes."""
    monday = parse_week(week)
    zone = committee_zone()
    start = datetime.combine(monday, time.min, tzinfo=zone)
    end = datetime.combine(monday + timedelta(days=7), time.min, tzinfo=zone)
    return start, end


def week_hours(week: str) -> int:
    """The hours a week really has: 168, or 167 and 169 in the weeks summer time starts and ends."""
    start, end = week_bounds(week)
    return int((end.astimezone(UTC) - start.astimezone(UTC)) // timedelta(hours=1))


def cycle_schedule(week: str) -> dict[str, datetime]:
    """The default calendar of the cycle that allocates `week`.

    Intake runs in the week before and closes on its Friday at 18:00; the committee meets on
    the allocation week's Monday at 09:00 (committee time).
    """
    start, end = week_bounds(week)
    zone = committee_zone()
    friday_before = (start - timedelta(days=3)).date()
    return {
        "starts_at": start,
        "ends_at": end,
        "intake_closes_at": datetime.combine(friday_before, time(18, 0), tzinfo=zone),
        "review_at": datetime.combine(start.date(), time(9, 0), tzinfo=zone),
    }


def next_week_label(now: datetime) -> str:
    local = now.astimezone(committee_zone()).date()
    return week_label(local + timedelta(days=7))


def current_week_label(now: datetime) -> str:
    return format_isoweek(now)


def reported_usage_week(week: str) -> str:
    """The week whose usage a request for `week` reports as "last week": the whole week before intake.

    Intake for `week` runs in the week before it (cycle_schedule), so the last week a team can
    report in full, and the schedulers have measured in full, is the one before that: two ISO
    weeks before `week`, in the committee's zone. The request form pre-fills it; the review
    compares the stated figures with the measured ones of that same week.
    """
    return week_label(parse_week(week) - timedelta(days=14))


def moment_into_week(moment: datetime, *, from_week: str, to_week: str, clip: bool = True) -> datetime:
    """`moment`, which falls on some weekday and wall-clock time counted from `from_week`'s Monday, moved to
    the same weekday and time counted from `to_week`'s Monday (committee zone; summer time keeps the wall
    clock). With `clip`, a moment before or after `to_week` is clipped to its start or end. Returned in UTC.
    """
    zone = committee_zone()
    from_start, _from_end = week_bounds(from_week)
    to_start, to_end = week_bounds(to_week)
    offset = moment.astimezone(zone).replace(tzinfo=None) - from_start.replace(tzinfo=None)
    moved = (to_start.replace(tzinfo=None) + offset).replace(tzinfo=zone).astimezone(UTC)
    if clip:
        moved = min(max(moved, to_start.astimezone(UTC)), to_end.astimezone(UTC))
    return moved
