"""Lifecycle events of granted windows: recorded once, told to the team, posted to subscribers as signed webhooks.

`lifecycle_event_record` is the one way an event goes out. Inside the caller's transaction it records the event
once per key (`LifecycleEvent`), the team's inbox notification (kind `window_event`: the inbox, the daily
digest), the chat's post, and one `WebhookDelivery` for each active subscription of the event's team or cluster,
each handed to the outbox (committee/services/webhooks.py posts it, signed, and retries it with backoff).

Who records what:

- `window.started`: the clock's `lifecycle_events` job (hourly at :00 UTC), for every current window started
  within `CATCH_UP`;
- `window.ending`: the same job, for every current window ending within its week's notice (the policy's
  `lifecycle.ending_notice_hours`);
- `window.idle`: the clock's `elastic_evaluate` job right after the evaluation that found a window granted but idle
  (under the elastic policy's `elastic.idle_threshold_pct` for its whole `elastic.idle_span_minutes`), and the
  `lifecycle_events` job for any such episode not told yet (an evaluation run by its task, a tick that failed after
  it): once per idle episode, the first `ElasticAction` of kind idle of a window (`idle_events_due`);
- `window.released`: `committee.services.window_release`;
- `grant.extended`: `committee.services.emergency` when it places an extension, and `committee.services.runs` when a
  week's publish places a run's continuing request (more weeks);
- `grant.continuation_confirmed`, `grant.continuation_withheld`: `committee.services.runs` when a run's next week
  is settled at that week's publish (on the evidence, or the team's reason), and `grant.continuation_confirmed` when
  the committee continues a withheld week at its review; once per run and week (`continuation_event_record`).

The clock's job acts on what is true at `now` (windows started, windows ending), not on the slot it runs for, so a
tick missed while beat, the broker or the worker was down still records every event at the next tick.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from allocations.elastic.selectors import policy_in_force
from allocations.models import AllocationWindow, Commitment, CommitmentState, ElasticAction, ElasticActionKind
from committee import selectors
from committee.models import (
    LifecycleEvent,
    LifecycleEventType,
    NotificationKind,
    WebhookDelivery,
    WebhookSubscription,
)
from committee.outbox import outbox_enqueue
from committee.services.chat import chat_enqueue
from committee.services.notifications import notifications_record
from core.datetimes import format_when
from core.numbers import format_pct
from governed.params import WINDOW_ENDING_NOTICE, as_int
from governed.selectors import policy_value

WEBHOOK_TASK = "committee.webhook_deliver"
# A window whose start the clock missed for longer than this (beat down for days) gets no "started" event.
CATCH_UP = timedelta(hours=24)


def webhook_delivery_enqueue(*, delivery: WebhookDelivery) -> None:
    """Inside the caller's transaction: hand the delivery's next attempt to the outbox (once per attempt)."""
    outbox_enqueue(task_name=WEBHOOK_TASK, key=f"webhook:{delivery.pk}:{delivery.attempts}",
                   kwargs={"delivery_id": delivery.pk})


def lifecycle_event_record(
    *,
    type: str,
    key: str,
    team_id: int,
    cluster_id: int,
    request_ref: int | None,
    occurred_at: datetime,
    data: Mapping[str, Any],
) -> LifecycleEvent | None:
    """Record the event once per `key`, tell the team and post it to every active subscriber of its team or cluster.

    `data` is plain JSON (codes, numbers, ISO 8601 instants): the CloudEvent's `data` and the inbox line's
    parameters. Returns the new event, None when one with `key` exists (nothing more is written). Side effects in
    the caller's transaction: a `window_event` notification per team member, a chat post when the chat is set up,
    and a `WebhookDelivery` per subscriber, each an outbox message of `committee.webhook_deliver`.
    """
    if type not in LifecycleEventType.values:
        raise ValueError(f"unknown lifecycle event {type!r}")
    with transaction.atomic():
        event, created = LifecycleEvent.objects.get_or_create(
            key=key,
            defaults={"type": type, "team_id": team_id, "cluster_id": cluster_id, "request_ref": request_ref,
                      "occurred_at": occurred_at, "data": dict(data)},
        )
        if not created:
            return None
        members = selectors.team_member_ids(team_ids=[team_id]).get(team_id, [])
        notifications_record(recipient_ids=members, kind=NotificationKind.WINDOW_EVENT, key=f"lifecycle:{event.pk}",
                             params={"type": type, **data})
        chat_enqueue(key=f"lifecycle:{event.pk}", event="lifecycle", params={"event_id": event.pk})
        subscriptions = WebhookSubscription.objects.filter(active=True).filter(team_id=team_id) | (
            WebhookSubscription.objects.filter(active=True, cluster_id=cluster_id)
        )
        for subscription in subscriptions.order_by("id"):
            delivery = WebhookDelivery.objects.create(subscription=subscription, event=event,
                                                      next_attempt_at=event.recorded_at)
            webhook_delivery_enqueue(delivery=delivery)
    return event


def window_event_data(window: AllocationWindow, **more: Any) -> dict[str, Any]:
    """What every window event says of its window: plain JSON for the CloudEvent's `data` and the inbox line."""
    return {
        "window_id": window.pk, "request_id": window.request_ref, "team": window.team.slug,
        "team_name": window.team.name,
        "cluster": window.cluster.slug, "pool": window.pool.key, "gpu_model": window.pool.gpu_model,
        "gpu_count": window.gpu_count, "start": window.start.isoformat(), "end": window.end.isoformat(),
        "tier": window.tier, "week": window.week, **more,
    }


def continuation_event_record(*, commitment: Commitment, now: datetime) -> LifecycleEvent | None:
    """`grant.continuation_confirmed` or `grant.continuation_withheld` for a settled commitment (a run's later week),
    once per run, week and state; None for any other state or when it was told already."""
    types = {CommitmentState.CONFIRMED: LifecycleEventType.CONTINUATION_CONFIRMED,
             CommitmentState.WITHHELD: LifecycleEventType.CONTINUATION_WITHHELD}
    type = types.get(CommitmentState(commitment.state))
    if type is None:
        return None
    team, pool = commitment.team, commitment.pool
    return lifecycle_event_record(
        type=type, key=f"{type}:{commitment.request_ref}:{commitment.week}", team_id=commitment.team_id,
        cluster_id=pool.cluster_id, request_ref=commitment.request_ref, occurred_at=now,
        data={"commitment_id": commitment.pk, "request_id": commitment.request_ref, "team": team.slug,
              "team_name": team.name, "cluster": pool.cluster.slug, "pool": pool.key, "gpu_model": pool.gpu_model,
              "gpu_count": commitment.gpu_count, "start": commitment.start.isoformat(),
              "end": commitment.end.isoformat(), "week": commitment.week, "week_number": commitment.week_number,
              "run_weeks": commitment.run_weeks,
              "utilization_pct": None if commitment.utilization_pct is None else float(commitment.utilization_pct),
              "threshold_pct": commitment.threshold_pct, "team_reason": commitment.team_reason,
              "settled_by": commitment.settled_by_name},
    )


def _current_windows() -> Any:
    return AllocationWindow.objects.filter(withdrawal__isnull=True, request_ref__isnull=False).select_related(
        "team", "cluster", "pool__cluster"
    )


def lifecycle_events_due(*, now: datetime) -> int:
    """The clock's job: record `window.started` for every current window started by `now` (within CATCH_UP) and
    `window.ending` for every one ending within its week's notice, and `window.idle` for every idle episode not told
    yet (`idle_events_due`). Idempotent (one event per key); returns how many it recorded.

    Keys: a request's start in a week is told once ("window.started:<request>:<week>"), so the later part of a
    window split by a release is not a new start; an end is told once per instant it ends at, so a window a
    release shortened is told of its new end.
    """
    recorded = 0
    started = _current_windows().filter(start__lte=now, start__gt=now - CATCH_UP).order_by("start", "id")
    seen: set[tuple[int | None, str]] = set()
    for window in started:
        if (window.request_ref, window.week) in seen:
            continue
        seen.add((window.request_ref, window.week))
        first = _current_windows().filter(request_ref=window.request_ref, week=window.week).order_by("start").first()
        if first is not None and first.pk != window.pk:
            continue  # the later part of a split window: its request started earlier
        recorded += lifecycle_event_record(
            type=LifecycleEventType.WINDOW_STARTED, key=f"window.started:{window.request_ref}:{window.week}",
            team_id=window.team_id, cluster_id=window.cluster_id, request_ref=window.request_ref,
            occurred_at=window.start, data=window_event_data(window),
        ) is not None
    notices: dict[str, timedelta] = {}
    ending = _current_windows().filter(end__gt=now, end__lte=now + timedelta(hours=48)).order_by("end", "id")
    for window in ending:
        if window.week not in notices:
            notices[window.week] = timedelta(hours=as_int(policy_value(key=WINDOW_ENDING_NOTICE, week=window.week)))
        if window.end - notices[window.week] > now:
            continue
        if _current_windows().filter(request_ref=window.request_ref, start=window.end).exists():
            continue  # it goes on: the next part of a split window starts where this one ends
        recorded += lifecycle_event_record(
            type=LifecycleEventType.WINDOW_ENDING,
            key=f"window.ending:{window.request_ref}:{window.end.isoformat()}",
            team_id=window.team_id, cluster_id=window.cluster_id, request_ref=window.request_ref,
            occurred_at=window.end - notices[window.week],
            data=window_event_data(window, notice_hours=notices[window.week] // timedelta(hours=1)),
        ) is not None
    return recorded + idle_events_due(now=now)


def idle_events_due(*, now: datetime) -> int:
    """Record `window.idle` for every idle episode of a current window that began by `now` (within CATCH_UP) and was
    not told yet; returns how many it recorded.

    An episode is the elastic evaluation's idle action (`ElasticAction`, kind idle) from its start until the window's
    use rises; an action that follows one ended at the same instant on the same window (the evaluation ends and
    starts it again when its offered GPUs change) continues the episode and is not told again. Key:
    "window.idle:<the episode's first action>"."""
    actions = list(
        ElasticAction.objects.filter(
            kind=ElasticActionKind.IDLE, window__isnull=False, window__withdrawal__isnull=True,
            window__request_ref__isnull=False, started_at__lte=now, started_at__gt=now - CATCH_UP,
        ).select_related("window__team", "window__cluster", "window__pool__cluster").order_by("started_at", "id")
    )
    if not actions:
        return 0
    continuing = set(ElasticAction.objects.filter(
        kind=ElasticActionKind.IDLE, window_id__in={a.window_id for a in actions},
        ended_at__in={a.started_at for a in actions},
    ).values_list("window_id", "ended_at"))
    recorded = 0
    policies: dict[str, Any] = {}
    for action in actions:
        if (action.window_id, action.started_at) in continuing:
            continue
        window = action.window
        assert window is not None
        if window.week not in policies:
            policies[window.week] = policy_in_force(now=action.started_at)
        policy = policies[window.week]
        recorded += lifecycle_event_record(
            type=LifecycleEventType.WINDOW_IDLE, key=f"window.idle:{action.pk}", team_id=window.team_id,
            cluster_id=window.cluster_id, request_ref=window.request_ref, occurred_at=action.started_at,
            data=window_event_data(
                window, idle_since=action.span_start.isoformat(), utilization_pct=float(action.utilization_pct),
                threshold_pct=policy.idle_threshold_pct, idle_span_minutes=policy.idle_span_minutes,
                offered_gpu_count=action.gpus, policy_version=action.policy_version,
            ),
        ) is not None
    return recorded


def _number(value: Any) -> Decimal | None:
    return Decimal(str(value)) if isinstance(value, int | float) and not isinstance(value, bool) else None


def lifecycle_event_text(params: Mapping[str, Any]) -> str:
    """One event as a line in the reader's language (the inbox, the digest, the chat)."""
    kind = params.get("type")

    def when(name: str) -> str:
        return format_when(datetime.fromisoformat(str(params[name]))) if params.get(name) else ""

    words = {"team": params.get("team_name", ""), "gpus": params.get("gpu_count", 0),
             "model": params.get("gpu_model", ""), "pool": params.get("pool", ""),
             "start": when("start"), "end": when("end"), "request": params.get("request_id", "")}
    if kind == LifecycleEventType.WINDOW_STARTED:
        return ngettext("%(team)s: the window of R-%(request)s started %(start)s on %(gpus)d %(model)s (%(pool)s), "
                        "until %(end)s.",
                        "%(team)s: the window of R-%(request)s started %(start)s on %(gpus)d %(model)s (%(pool)s), "
                        "until %(end)s.", words["gpus"]) % words
    if kind == LifecycleEventType.WINDOW_ENDING:
        return ngettext("%(team)s: the window of R-%(request)s ends %(end)s, within %(hours)d hour.",
                        "%(team)s: the window of R-%(request)s ends %(end)s, within %(hours)d hours.",
                        int(params.get("notice_hours", 1))) % {**words, "hours": int(params.get("notice_hours", 1))}
    if kind == LifecycleEventType.WINDOW_IDLE:
        return _("%(team)s: the window of R-%(request)s has been idle since %(since)s: %(util)s of GPU time busy, "
                 "under the elastic policy's %(threshold)s.") % {
            **words, "since": when("idle_since"), "util": format_pct(_number(params.get("utilization_pct")), 1),
            "threshold": format_pct(_number(params.get("threshold_pct")), 0)}
    if kind == LifecycleEventType.WINDOW_RELEASED and params.get("later_weeks_released"):
        return ngettext("%(team)s gave back %(released)d GPU of R-%(request)s from %(from)s: the run ends there, "
                        "its later weeks (%(weeks)s) are released.",
                        "%(team)s gave back %(released)d GPUs of R-%(request)s from %(from)s: the run ends there, "
                        "its later weeks (%(weeks)s) are released.",
                        int(params.get("released_gpu_count", 0))) % {
            **words, "released": int(params.get("released_gpu_count", 0)), "from": when("effective_from"),
            "weeks": ", ".join(str(week) for week in params["later_weeks_released"])}
    if kind == LifecycleEventType.WINDOW_RELEASED:
        return ngettext("%(team)s gave back %(released)d GPU of R-%(request)s from %(from)s.",
                        "%(team)s gave back %(released)d GPUs of R-%(request)s from %(from)s.",
                        int(params.get("released_gpu_count", 0))) % {
            **words, "released": int(params.get("released_gpu_count", 0)), "from": when("effective_from")}
    if kind == LifecycleEventType.GRANT_EXTENDED:
        return _("%(team)s: the grant of R-%(request)s was extended.") % words
    if kind == LifecycleEventType.CONTINUATION_CONFIRMED:
        return _("%(team)s: the next week of R-%(request)s is confirmed.") % words
    if kind == LifecycleEventType.CONTINUATION_WITHHELD:
        return _("%(team)s: the next week of R-%(request)s is withheld until the committee decides.") % words
    return str(kind)
