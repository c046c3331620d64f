"""Notifications: what people are told, recorded as rows and emailed as one digest per person per day.

Recording. The kinds are one registry (committee/services/notification_kinds.py): each declares
its words and, when a user action tells it (a submission, closing intake, publishing, a correction,
an appeal), its recipients, its deduplication key and its details. The action calls
`notification_enqueue(kind=..., ...)`, which writes an outbox message in the action's transaction;
the one task `committee.notify` runs `notifications_deliver`, which records one `Notification` per
recipient. The clock's reminders and the services that tell at once record theirs directly
(`notifications_record`). Recording the same thing twice writes nothing new: a notification is
unique per (recipient, kind, key).

Sending. `digests_send` (beat, daily) writes each person at most one email per day (committee
time) listing everything recorded for them since their previous digest, grouped by kind, leaving
out the kinds they opted out of on their profile page. Never one email per event.
Each line of a digest is its kind's plain-text template, templates/committee/notifications/<kind>.txt.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from datetime import date, datetime
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.mail import EmailMessage
from django.db import IntegrityError, transaction
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.translation import ngettext

from committee import selectors, weeks
from committee.models import (
    DecisionOutcome,
    Notification,
    NotificationDigest,
    NotificationKind,
    NotificationOptOut,
    OutboxMessage,
)
from committee.outbox import outbox_enqueue
from committee.services.notification_kinds import (
    NOTIFICATION_KINDS,
    notification_delivery_get,
    person_text,
)
from core import datetimes as display_time
from core.locks import write_transaction

logger = logging.getLogger(__name__)

# The one task that records the notifications of any kind enqueued (committee/tasks.py).
NOTIFY_TASK = "committee.notify"


# --- recording ---------------------------------------------------------------------------------


def notifications_record(
    *, recipient_ids: Iterable[int], kind: str, key: str, params: Mapping[str, Any]
) -> int:
    """Record one notification of `kind` about `key` for each recipient; returns how many were new.

    Idempotent: a recipient who already has this (kind, key) gets nothing new, so a job or a
    task that runs twice records once. Opt-outs are applied when the digest is written.
    """
    wanted = set(recipient_ids)
    if not wanted:
        return 0
    existing = set(
        Notification.objects.filter(kind=kind, key=key, recipient_id__in=wanted).values_list("recipient_id", flat=True)
    )
    new = sorted(wanted - existing)
    Notification.objects.bulk_create(
        [Notification(recipient_id=user_id, kind=kind, key=key, params=dict(params)) for user_id in new],
        ignore_conflicts=True,  # a concurrent run recorded it first
    )
    return len(new)


def notifications_record_many(*, kind: str, items: Iterable[tuple[str, Iterable[int], Mapping[str, Any]]]) -> int:
    """`notifications_record` for many keys at once: (key, recipient ids, params) each. Two queries in all.

    Same idempotency: a recipient who already has (kind, key) gets nothing new for that key.
    """
    wanted = {key: (set(recipient_ids), params) for key, recipient_ids, params in items}
    recipients = set().union(*(ids for ids, _params in wanted.values()))
    if not recipients:
        return 0
    existing = set(
        Notification.objects.filter(kind=kind, key__in=list(wanted), recipient_id__in=recipients).values_list(
            "key", "recipient_id"
        )
    )
    new = [
        Notification(recipient_id=user_id, kind=kind, key=key, params=dict(params))
        for key, (ids, params) in wanted.items()
        for user_id in sorted(ids)
        if (key, user_id) not in existing
    ]
    Notification.objects.bulk_create(new, ignore_conflicts=True)  # a concurrent run recorded some first
    return len(new)


def notification_enqueue(*, kind: str, **about: Any) -> OutboxMessage:
    """Inside the caller's transaction: after commit, the people `kind` tells hear of `about`.

    `about` is what the kind's `Delivery.message` takes (`gpu_request=`, `cycle=` and `plan=`, ...). Enqueues
    (outbox) `committee.notify` with the kind and the ids it names, once per the kind's outbox key, and posts
    what the kind announces (the chat). Nothing is sent for a transaction that rolls back. Raises
    UnknownNotificationKind (a ValueError) for a kind not in the registry, ValueError for a kind its own
    service records; nothing is written then.
    """
    delivery = notification_delivery_get(kind)
    key, arguments = delivery.message(**about)
    message = outbox_enqueue(task_name=NOTIFY_TASK, key=key, kwargs={"kind": str(kind), "arguments": arguments})
    if delivery.announce is not None:
        delivery.announce(**about)
    return message


def notifications_deliver(*, kind: str, arguments: Mapping[str, Any]) -> int:
    """The task's work: record the kind's notifications of the subjects `arguments` name; returns how many were new.

    Each subject's recipients get one notification under the subject's key: idempotent, so a
    delivery that runs twice records once. Raises UnknownNotificationKind for a kind not in the
    registry (the outbox message stays not done, with that error).
    """
    delivery = notification_delivery_get(kind)
    subjects = delivery.load(**arguments)
    recipients = delivery.recipients(subjects)
    return notifications_record_many(
        kind=str(kind),
        items=[
            (delivery.key(subject), ids, delivery.params(subject))
            for subject, ids in zip(subjects, recipients, strict=True)
        ],
    )


# --- the words ---------------------------------------------------------------------------------


def _when(value: str | None) -> str:
    if not value:
        return ""
    # The committee's zone, 24-hour, the zone named, in the reader's language (core.datetimes).
    return display_time.format_when(datetime.fromisoformat(value))


def kind_heading(kind: str) -> str:
    """The heading of a kind's group in the digest and the inbox (the kind's name for one Docket does not know)."""
    spec = NOTIFICATION_KINDS.get(kind)
    return str(spec.heading) if spec is not None else kind


def notification_text(notification: Notification) -> str:
    """One line of a digest, in the active language: the kind's template with the notification's details.

    Each kind has its plain-text template (committee/services/notification_kinds.py, by default
    templates/committee/notifications/<kind>.txt); a kind Docket does not know (any more) is shown
    as the notification's key.
    """
    spec = NOTIFICATION_KINDS.get(notification.kind)
    if spec is None:
        return str(notification.key)
    p = notification.params
    outcome = p.get("outcome")
    context = {
        "week": p.get("week"),
        "team": p.get("team"),
        "title": p.get("title"),
        "by": p.get("by"),
        "closes": _when(p.get("closes_at")),
        "review": _when(p.get("review_at")),
        "drafts": int(p.get("drafts") or 0),
        "count": int(p.get("count") or 0),
        "unscored": int(p.get("unscored") or 0),
        "outcome": DecisionOutcome(outcome).label if outcome in DecisionOutcome.values else str(outcome),
        "partial": outcome == DecisionOutcome.PARTIAL,
        "granted": p.get("granted_gpu_count"),
        "requested": p.get("requested_gpu_count"),
        "version": p.get("version"),
        # Decided and placed (recorded since placements are told; older notifications have none of these).
        **selectors.placement_params_text(p),
        "event": p.get("event") or "",
        "question": p.get("question") or "",
        "changes": p.get("changes") or "",
        "alternative": p.get("alternative") or "",
        "alternative_gpu_hours": f"{p['alternative_gpu_hours']:,}" if p.get("alternative_gpu_hours") else "",
        "moved": selectors.window_change_text(p["moved"], week=p["week"]) if p.get("moved") and p.get("week") else "",
        "why": p.get("why") or "",
    }
    if spec.context is not None:
        context.update(spec.context(p))
    # The template's own line end is not part of the text.
    return render_to_string(spec.template_name, context).rstrip("\n")


def _link(path: str | None) -> str:
    return f"{settings.SITE_URL.rstrip('/')}{path}" if path else ""


def digest_email(*, user: User, notifications: list[Notification], day: date) -> EmailMessage:
    """The digest email of one person for one day: the notifications grouped by kind, oldest first."""
    groups = []
    for kind in NOTIFICATION_KINDS:
        rows = [n for n in notifications if n.kind == kind]
        if rows:
            groups.append(
                {
                    "heading": kind_heading(kind),
                    "lines": [(notification_text(n), _link(n.params.get("path"))) for n in rows],
                }
            )
    context = {
        "user": user,
        "name": person_text(user),
        "groups": groups,
        "day": day,
        "profile_url": _link(reverse("committee:profile")),
    }
    subject = ngettext(
        "Docket: %(n)d update for %(day)s", "Docket: %(n)d updates for %(day)s", len(notifications)
    ) % {"n": len(notifications), "day": display_time.format_day(day)}
    body = render_to_string("committee/email/digest.txt", context)
    return EmailMessage(subject=subject, body=body, to=[user.email])


# --- sending -----------------------------------------------------------------------------------


def digests_send(*, now: datetime) -> int:
    """Email each person who has waiting notifications their digest of the day; returns how many were sent.

    At most one digest per person per committee-time day (a database constraint): running this
    twice on a day sends nothing the second time, and what was recorded after a person's digest
    waits for the next day's. Notifications of kinds the person opted out of are marked skipped
    and never sent; so are those of a person without an email address or an active account.
    Each person's digest is written and sent in its own transaction: if sending fails, nothing of
    it is recorded, the failure is logged, the others are sent, and the next run tries again.
    """
    day = now.astimezone(weeks.committee_zone()).date()
    waiting = set(
        Notification.objects.filter(digest__isnull=True, skipped=False).values_list("recipient_id", flat=True)
    )
    done_today = set(
        NotificationDigest.objects.filter(day=day, recipient_id__in=waiting).values_list("recipient_id", flat=True)
    )
    sent = 0
    for user_id in sorted(waiting - done_today):
        try:
            if _digest_send_one(user_id=user_id, day=day, now=now):
                sent += 1
        except Exception:  # one person's mail server trouble must not hold back everyone else's digest
            logger.exception("The digest of user %s could not be sent; the next run tries again", user_id)
    return sent


def _digest_send_one(*, user_id: int, day: date, now: datetime) -> bool:
    user = get_user_model().objects.get(pk=user_id)
    try:
        with transaction.atomic():
            notifications = list(
                Notification.objects.select_for_update(no_key=True)
                .filter(recipient=user, digest__isnull=True, skipped=False)
                .order_by("created_at", "id")
            )
            opted_out = selectors.notification_opt_outs(user=user)
            deliverable = bool(user.is_active and user.email)
            included = [n for n in notifications if deliverable and n.kind not in opted_out]
            skipped = [n.pk for n in notifications if n not in included]
            if skipped:
                Notification.objects.filter(pk__in=skipped).update(skipped=True)
            if not included:
                return False
            digest = NotificationDigest.objects.create(
                recipient=user, day=day, email=user.email, sent_at=now, notification_count=len(included)
            )
            Notification.objects.filter(pk__in=[n.pk for n in included]).update(digest=digest)
            with translation.override(settings.LANGUAGE_CODE):
                digest_email(user=user, notifications=included, day=day).send()
    except IntegrityError:
        return False  # another run sent this person's digest of the day first
    return True


# --- preferences ---------------------------------------------------------------------------------


@write_transaction
def notification_preferences_set(*, user: User, receive: Iterable[str], kinds: Iterable[str]) -> set[str]:
    """Among `kinds` (the kinds the form showed), opt the user out of those not in `receive`, back in to the others.

    Returns the user's opt-outs afterwards. Kinds outside `kinds` keep their setting. Raises
    ValueError for an unknown kind.
    """
    shown = set(kinds)
    wanted = set(receive)
    unknown = (shown | wanted) - set(NotificationKind.values)
    if unknown:
        raise ValueError(f"unknown notification kinds: {sorted(unknown)}")
    off = shown - wanted
    NotificationOptOut.objects.filter(user=user, kind__in=shown - off).delete()
    NotificationOptOut.objects.bulk_create(
        [NotificationOptOut(user=user, kind=kind, created_at=timezone.now()) for kind in sorted(off)],
        ignore_conflicts=True,
    )
    return selectors.notification_opt_outs(user=user)


def notifications_mark_read(*, user: User, up_to_id: int | None = None, ids: Iterable[int] = ()) -> int:
    """Mark the person's unread notifications read: those up to `up_to_id` (what the inbox page showed, so one
    recorded while they were reading stays unread), or just `ids`. Returns how many changed; another person's
    notifications are never touched."""
    unread = Notification.objects.filter(recipient=user, read_at__isnull=True)
    unread = unread.filter(pk__lte=up_to_id) if up_to_id is not None else unread.filter(pk__in=list(ids))
    return unread.update(read_at=timezone.now())
