"""Notifications: what people are told, recorded as rows and emailed as one digest per person per day.

Recording. A user action that should tell people something (a submission, closing intake,
publishing) writes an outbox message in its own transaction (`notify_*`); the message's task
records one `Notification` per recipient (`notifications_for_*`; who the recipients are, and
what a person may receive, are reads in committee/selectors.py). The clock's reminders record
theirs directly (committee/services/clock.py). Recording the same thing twice writes nothing new:
a notification is unique per (recipient, kind, key).

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
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from allocations.models import AllocationPlan
from committee import selectors, weeks
from committee.models import (
    Appeal,
    Decision,
    DecisionCorrection,
    DecisionOutcome,
    GpuRequest,
    Notification,
    NotificationDigest,
    NotificationKind,
    NotificationOptOut,
    RequestStatus,
    ReviewCycle,
)
from committee.outbox import outbox_enqueue
from committee.services.chat import chat_published_announce
from core import datetimes as display_time
from core.locks import write_transaction

logger = logging.getLogger(__name__)


def _person(user: User | None) -> str:
    # committee.services.requests.actor_name, which cannot be imported here: requests imports this module.
    if user is None:
        return ""
    return user.get_full_name() or user.get_username()


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


def notify_request_submitted(*, gpu_request: GpuRequest) -> None:
    """Inside the submission's transaction: after commit, the team hears that the request was submitted.

    Enqueues (outbox) `committee.notify_request_submitted`.
    """
    outbox_enqueue(
        task_name="committee.notify_request_submitted",
        key=f"notify:request-submitted:{gpu_request.pk}",
        kwargs={"request_id": gpu_request.pk},
    )


def notify_intake_closed(*, cycle: ReviewCycle) -> None:
    """Inside the transaction that closed intake: after commit, the committee hears what waits for its scores.

    Enqueues (outbox) `committee.notify_intake_closed`.
    """
    outbox_enqueue(
        task_name="committee.notify_intake_closed",
        key=f"notify:intake-closed:{cycle.pk}",
        kwargs={"cycle_id": cycle.pk},
    )


def notify_decision_corrected(*, correction: DecisionCorrection) -> None:
    """Inside the correction's transaction: after commit, the request's team hears of the corrected decision.

    Enqueues (outbox) `committee.notify_decision_corrected`.
    """
    outbox_enqueue(
        task_name="committee.notify_decision_corrected",
        key=f"notify:decision-corrected:{correction.pk}",
        kwargs={"correction_id": correction.pk},
    )


def notify_appeal_filed(*, appeal: Appeal) -> None:
    """Inside the appeal's transaction: after commit, the committee members outside the team hear of it.

    Enqueues (outbox) `committee.notify_appeal_filed`.
    """
    outbox_enqueue(
        task_name="committee.notify_appeal_filed",
        key=f"notify:appeal-filed:{appeal.pk}",
        kwargs={"appeal_id": appeal.pk},
    )


def notify_appeal_decided(*, appeal: Appeal) -> None:
    """Inside the transaction that decided the appeal: after commit, the team hears the answer.

    Enqueues (outbox) `committee.notify_appeal_decided`.
    """
    outbox_enqueue(
        task_name="committee.notify_appeal_decided",
        key=f"notify:appeal-decided:{appeal.pk}",
        kwargs={"appeal_id": appeal.pk},
    )


def notify_decisions_published(*, cycle: ReviewCycle, plan: AllocationPlan) -> None:
    """Inside the publishing transaction: after commit, each team hears the decisions on its requests.

    Enqueues (outbox) `committee.notify_decisions_published`; a correction (plan version n+1) is
    a new message, so teams hear about it too.
    """
    outbox_enqueue(
        task_name="committee.notify_decisions_published",
        key=f"notify:published:{cycle.pk}:v{plan.version}",
        kwargs={"cycle_id": cycle.pk, "plan_id": plan.pk},
    )
    chat_published_announce(cycle=cycle, plan=plan)


def notifications_for_request_submitted(*, request_id: int) -> int:
    """Record a "request submitted" notification for each member of the request's team. Idempotent."""
    gpu_request = GpuRequest.objects.select_related("team", "cycle", "submitted_by").get(pk=request_id)
    members = selectors.team_member_ids(team_ids=[gpu_request.team_id]).get(gpu_request.team_id, [])
    return notifications_record(
        recipient_ids=members,
        kind=NotificationKind.REQUEST_SUBMITTED,
        key=f"request:{gpu_request.pk}",
        params={
            "team": gpu_request.team.name,
            "title": gpu_request.title,
            "week": gpu_request.cycle.week,
            "by": _person(gpu_request.submitted_by),
            "path": reverse("committee:request-detail", args=[gpu_request.pk]),
        },
    )


def notifications_for_intake_closed(*, cycle_id: int) -> int:
    """Record an "intake closed" notification for each committee member. Idempotent."""
    cycle = ReviewCycle.objects.get(pk=cycle_id)
    # Submitted or already decided: the same requests, however late the task runs after intake closed.
    count = GpuRequest.objects.filter(cycle=cycle, status__in=[RequestStatus.SUBMITTED, RequestStatus.DECIDED]).count()
    return notifications_record(
        recipient_ids=selectors.committee_member_ids(),
        kind=NotificationKind.INTAKE_CLOSED,
        key=f"cycle:{cycle.week}:intake-closed",
        params={
            "week": cycle.week,
            "count": count,
            "review_at": cycle.review_at.isoformat(),
            "path": reverse("committee:review-cycle", args=[cycle.week]),
        },
    )


def notifications_for_decisions_published(*, cycle_id: int, plan_id: int) -> int:
    """Record, for each decided request of the cycle, a notification for each member of its team. Idempotent."""
    cycle = ReviewCycle.objects.get(pk=cycle_id)
    plan = AllocationPlan.objects.get(pk=plan_id)
    decisions = list(Decision.objects.filter(cycle=cycle).select_related("request").order_by("priority_rank", "id"))
    members = selectors.team_member_ids(team_ids={d.request.team_id for d in decisions})
    outcomes = selectors.request_outcome_map(requests=[d.request for d in decisions])
    # A later version (a correction, an amendment): each team hears what moved in its windows, and why.
    moved = {c.request_id: c for c in selectors.plan_changes(cycle=cycle, plan=plan)}
    return notifications_record_many(
        kind=NotificationKind.DECISION_PUBLISHED,
        items=[
            (
                f"decision:{decision.request_id}:plan-v{plan.version}",
                members.get(decision.request.team_id, []),
                {
                    "team": decision.team_name,
                    "title": decision.request_title,
                    "week": cycle.week,
                    "outcome": decision.outcome,
                    "granted_gpu_count": decision.granted_gpu_count,
                    "requested_gpu_count": decision.requested_gpu_count,
                    "alternative": decision.alternative_description,
                    "alternative_gpu_hours": decision.alternative_gpu_hours,
                    "version": plan.version,
                    "path": reverse("committee:request-detail", args=[decision.request_id]),
                    # Decided and placed, as codes and numbers: the digest writes them in its reader's language.
                    **outcomes[decision.request_id].as_params(),
                    **({"moved": moved[decision.request_id].as_params(), "why": plan.note}
                       if decision.request_id in moved else {}),
                },
            )
            for decision in decisions
        ],
    )


def notifications_for_decision_corrected(*, correction_id: int) -> int:
    """Record a "decision corrected" notification for each member of the corrected request's team. Idempotent."""
    correction = DecisionCorrection.objects.select_related("decision__request", "cycle").get(pk=correction_id)
    request = correction.decision.request
    members = selectors.team_member_ids(team_ids=[request.team_id]).get(request.team_id, [])
    return notifications_record(
        recipient_ids=members,
        kind=NotificationKind.DECISION_CORRECTED,
        key=f"correction:{correction.pk}",
        params={
            "team": correction.team_name,
            "title": correction.request_title,
            "week": correction.cycle.week,
            "previous_outcome": correction.previous_outcome,
            "previous_granted_gpu_count": correction.previous_granted_gpu_count,
            "outcome": correction.outcome,
            "granted_gpu_count": correction.granted_gpu_count,
            "requested_gpu_count": correction.decision.requested_gpu_count,
            "version": correction.plan_version,
            "reason": correction.reason,
            "path": reverse("committee:request-detail", args=[request.pk]),
        },
    )


def notifications_for_appeal_filed(*, appeal_id: int) -> int:
    """Record an "appeal filed" notification for each committee member outside the team. Idempotent."""
    appeal = Appeal.objects.select_related("request", "cycle").get(pk=appeal_id)
    team_members = set(selectors.team_member_ids(team_ids=[appeal.request.team_id]).get(appeal.request.team_id, []))
    return notifications_record(
        recipient_ids=[user_id for user_id in selectors.committee_member_ids() if user_id not in team_members],
        kind=NotificationKind.APPEAL_FILED,
        key=f"appeal:{appeal.pk}:filed",
        params={
            "team": appeal.team_name,
            "title": appeal.request_title,
            "week": appeal.cycle.week,
            "by": appeal.filed_by_name,
            "path": reverse("committee:appeal-list", args=[appeal.cycle.week]),
        },
    )


def notifications_for_appeal_decided(*, appeal_id: int) -> int:
    """Record an "appeal decided" notification for each member of the appealing team. Idempotent."""
    appeal = Appeal.objects.select_related("request__decision", "cycle").get(pk=appeal_id)
    correction = DecisionCorrection.objects.filter(appeal=appeal).first()
    decision = appeal.request.decision
    members = selectors.team_member_ids(team_ids=[appeal.request.team_id]).get(appeal.request.team_id, [])
    return notifications_record(
        recipient_ids=members,
        kind=NotificationKind.APPEAL_DECIDED,
        key=f"appeal:{appeal.pk}:decided",
        params={
            "team": appeal.team_name,
            "title": appeal.request_title,
            "week": appeal.cycle.week,
            "status": appeal.status,
            "by": appeal.decided_by_name,
            "reason": appeal.decision_reason,
            "outcome": decision.outcome,
            "granted_gpu_count": decision.granted_gpu_count,
            "requested_gpu_count": decision.requested_gpu_count,
            "version": correction.plan_version if correction is not None else None,
            "path": reverse("committee:request-detail", args=[appeal.request_id]),
        },
    )


# --- the words ---------------------------------------------------------------------------------


def _when(value: str | None) -> str:
    if not value:
        return ""
    # The committee's zone, 24-hour, the zone named, in the reader's language (core.datetimes).
    return display_time.format_when(datetime.fromisoformat(value))


def kind_heading(kind: str) -> str:
    headings: dict[str, str] = {
        NotificationKind.INTAKE_CLOSING: _("Intake closes soon"),
        NotificationKind.REQUEST_SUBMITTED: _("Requests submitted"),
        NotificationKind.DECISION_PUBLISHED: _("Decisions published"),
        NotificationKind.INTAKE_CLOSED: _("Intake closed"),
        NotificationKind.REVIEW_COMING: _("The review is coming up"),
        NotificationKind.DECISION_CORRECTED: _("Decisions corrected"),
        NotificationKind.APPEAL_FILED: _("Appeals filed"),
        NotificationKind.APPEAL_DECIDED: _("Appeals decided"),
        NotificationKind.EMERGENCY: _("Emergency requests"),
        NotificationKind.QUESTION_ASKED: _("Questions from the committee"),
        NotificationKind.QUESTION_ANSWERED: _("Questions answered"),
        NotificationKind.SCORES_STALE: _("Requests changed after you scored them"),
        NotificationKind.DRAFT_AWAITS_LEAD: _("Drafts waiting for you to submit"),
        NotificationKind.DRAFT_RETURNED: _("Drafts sent back to you"),
    }
    return headings.get(kind, kind)


def _outcome_words(outcome: Any, granted: Any) -> str:
    """"Grant", "Partial grant, 8 GPUs": an outcome in a digest line."""
    if outcome not in DecisionOutcome.values:
        return str(outcome or "")
    label = str(DecisionOutcome(outcome).label)
    if outcome == DecisionOutcome.PARTIAL and granted:
        return _("%(label)s, %(n)d GPUs") % {"label": label, "n": int(granted)}
    return label


def notification_text(notification: Notification) -> str:
    """One line of a digest, in the active language: the kind's template with the notification's details.

    Each kind has its plain-text template, templates/committee/notifications/<kind>.txt; a kind
    Docket does not know (any more) is shown as the notification's key.
    """
    kind = notification.kind
    if kind not in NotificationKind.values:
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
    if kind in (NotificationKind.DECISION_CORRECTED, NotificationKind.APPEAL_FILED, NotificationKind.APPEAL_DECIDED):
        # A correction's or an appeal's own reason, not the engine's.
        context.update(
            previous=_outcome_words(p.get("previous_outcome"), p.get("previous_granted_gpu_count")),
            current=_outcome_words(outcome, p.get("granted_gpu_count")),
            reason=p.get("reason") or "",
            upheld=p.get("status") == "upheld",
        )
    if kind == NotificationKind.DRAFT_RETURNED:
        context["note"] = p.get("note") or ""
    # The template's own line end is not part of the text.
    return render_to_string(f"committee/notifications/{kind}.txt", context).rstrip("\n")


def _link(path: str | None) -> str:
    return f"{settings.SITE_URL.rstrip('/')}{path}" if path else ""


def digest_email(*, user: User, notifications: list[Notification], day: date) -> EmailMessage:
    """The digest email of one person for one day: the notifications grouped by kind, oldest first."""
    groups = []
    for kind in NotificationKind:
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
        "name": _person(user),
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
