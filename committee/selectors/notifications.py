"""Notifications and digests: who receives what."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date

from django.contrib.auth.models import User
from django.db.models import QuerySet

from committee.models import (
    CommitteeSeat,
    Notification,
    NotificationDigest,
    NotificationKind,
    NotificationOptOut,
    TeamMembership,
)
from committee.selectors.people import Viewer, viewer_roles


def digest_list_for_user(*, user: Viewer, limit: int = 7) -> list[NotificationDigest]:
    """The person's latest digests, newest first."""
    if not user.is_authenticated:
        return []
    return list(NotificationDigest.objects.filter(recipient=user).order_by("-day")[:limit])


def notification_waiting_count(*, user: Viewer) -> int:
    """How many of the person's notifications wait for their next digest."""
    if not user.is_authenticated:
        return 0
    return Notification.objects.filter(recipient=user, digest__isnull=True, skipped=False).count()


# Who hears of what: the recipients notifications are recorded for, and a person's choices.

TEAM_KINDS = (
    NotificationKind.INTAKE_CLOSING,
    NotificationKind.REQUEST_SUBMITTED,
    NotificationKind.DECISION_PUBLISHED,
    NotificationKind.DECISION_CORRECTED,
    NotificationKind.APPEAL_DECIDED,
    NotificationKind.EMERGENCY,
    NotificationKind.QUESTION_ASKED,
    NotificationKind.DRAFT_AWAITS_LEAD,
    NotificationKind.DRAFT_RETURNED,
    NotificationKind.WINDOW_EVENT,
    NotificationKind.OUTCOME_DUE,
)
COMMITTEE_KINDS = (
    NotificationKind.INTAKE_CLOSED,
    NotificationKind.REVIEW_COMING,
    NotificationKind.APPEAL_FILED,
    NotificationKind.EMERGENCY,
    NotificationKind.QUESTION_ANSWERED,
    NotificationKind.SCORES_STALE,
    NotificationKind.BUDGET_ALERT,
)


def team_member_ids(*, team_ids: Iterable[int]) -> dict[int, list[int]]:
    """Active members' user ids per team id."""
    members: dict[int, list[int]] = {}
    rows = TeamMembership.objects.filter(team_id__in=list(team_ids), user__is_active=True).order_by("user_id")
    for team_id, user_id in rows.values_list("team_id", "user_id"):
        members.setdefault(team_id, []).append(user_id)
    return members


def committee_member_ids(*, on: date | None = None) -> list[int]:
    """User ids of everyone holding an active committee seat (a person with two seats counts once)."""
    seats = CommitteeSeat.objects.active(on).filter(user__is_active=True)
    return sorted(set(seats.values_list("user_id", flat=True)))


def notification_kinds_for(*, user: User) -> list[str]:
    """The kinds a person can receive: the team kinds if they are in a team, the committee's if they hold a seat."""
    roles = viewer_roles(user=user)
    kinds: list[str] = []
    if roles.team_ids:
        kinds += TEAM_KINDS
    if roles.committee:
        kinds += [kind for kind in COMMITTEE_KINDS if kind not in kinds]
    return kinds


def notification_opt_outs(*, user: User) -> set[str]:
    """The kinds the person opted out of on their profile page."""
    return set(NotificationOptOut.objects.filter(user=user).values_list("kind", flat=True))


# The in-app inbox: every notification recorded for the person (opted out of the digest or not), newest first.


def inbox_list(*, user: Viewer) -> QuerySet[Notification]:
    if not user.is_authenticated:
        return Notification.objects.none()
    return Notification.objects.filter(recipient=user).order_by("-created_at", "-id")


def inbox_unread_count(*, user: Viewer) -> int:
    """The navigation's badge: one indexed count (notification_unread_idx)."""
    if not user.is_authenticated:
        return 0
    return Notification.objects.filter(recipient=user, read_at__isnull=True).count()
