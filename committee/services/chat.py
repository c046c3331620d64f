"""The chat channel: short messages to a Slack-compatible incoming webhook, beside the e-mail digest.

These events are announced when DOCKET_CHAT_WEBHOOK_URL is set: intake closes within 24 hours, a
week's plan was published (or corrected), a window failed to sync on its cluster, a window's lifecycle event, and a
department's charges reached 80 % or 100 % of its quarter's budget (once per department, quarter and threshold). Each is
written to the outbox in the transaction of the change (or of the clock's job), once per key, and
posted by the task `committee.chat_send`; a post the webhook refuses raises, so the message stays
in the outbox and the relay tries again. The text is composed when it is posted, from what the
database says then, in the site's language.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.urls import reverse
from django.utils import translation
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from allocations import selectors as allocation_selectors
from allocations.models import AllocationPlan, AllocationWindow
from committee import weeks
from committee.models import CycleStatus, GpuRequest, RequestStatus, ReviewCycle
from committee.outbox import outbox_enqueue
from committee.selectors.budgets import budget_alert_key, budget_alerts, department_budgets
from core.numbers import format_money, format_pct

CHAT_TASK = "committee.chat_send"
INTAKE_NOTICE = timedelta(hours=24)
EVENTS = ("intake_closing", "published", "sync_failed", "lifecycle", "budget_alert")


class ChatDeliveryError(Exception):
    """The webhook did not take the message (an HTTP error, a refused or timed-out connection)."""


def chat_enabled() -> bool:
    return bool(settings.DOCKET_CHAT_WEBHOOK_URL)


def chat_enqueue(*, key: str, event: str, params: dict[str, Any]) -> bool:
    """Inside the caller's transaction: post `event` to the chat after commit, once per `key`.

    Returns False (and writes nothing) when no webhook is configured.
    """
    if event not in EVENTS:
        raise ValueError(f"unknown chat event {event!r}")
    if not chat_enabled():
        return False
    outbox_enqueue(task_name=CHAT_TASK, key=f"chat:{key}", kwargs={"event": event, "params": params})
    return True


def chat_intake_closing_announce(*, now: datetime) -> list[str]:
    """The clock's job (hourly): announce each open week whose intake closes within 24 hours. Idempotent."""
    due = ReviewCycle.objects.filter(
        status=CycleStatus.OPEN, intake_closes_at__gt=now, intake_closes_at__lte=now + INTAKE_NOTICE
    ).order_by("starts_at")
    announced = []
    with transaction.atomic():
        for cycle in due:
            if chat_enqueue(key=f"intake-closing:{cycle.week}", event="intake_closing", params={"cycle_id": cycle.pk}):
                announced.append(cycle.week)
    return announced


def chat_published_announce(*, cycle: ReviewCycle, plan: AllocationPlan) -> bool:
    """Inside the publishing transaction: announce plan version n of the week."""
    return chat_enqueue(
        key=f"published:{cycle.week}:v{plan.version}",
        event="published",
        params={"cycle_id": cycle.pk, "plan_id": plan.pk},
    )


def chat_budget_alerts_announce(*, quarters: Iterable[str], ref: str) -> list[str]:
    """Inside the transaction of a change that charges departments (a plan published, a budget set): announce each
    threshold (80 %, 100 %) a department's charges reached in `quarters`, once per department, quarter and threshold
    (the outbox key). Returns the keys; none without a webhook (nothing is read then)."""
    if not chat_enabled():
        return []
    keys = []
    for alert in budget_alerts(quarters=list(quarters)):
        key = budget_alert_key(alert)
        chat_enqueue(key=key, event="budget_alert", params={
            "department_id": alert.budget.department_id, "quarter": alert.budget.quarter, "pct": alert.pct})
        keys.append(key)
    return keys


def on_windows_sync_failed(sender: Any, window_ids: Iterable[int], **kwargs: Any) -> None:
    """Receiver of allocations' `windows_sync_failed`: one chat message per window that became failed."""
    if not chat_enabled():
        return
    reported = dict(
        AllocationWindow.objects.filter(pk__in=list(window_ids)).values_list("pk", "sync_status__reported_at")
    )
    for window_id, at in sorted(reported.items()):
        stamp = at.strftime("%Y%m%dT%H%M%S") if at else "unknown"
        chat_enqueue(key=f"sync-failed:{window_id}:{stamp}", event="sync_failed", params={"window_id": window_id})


# --- posting ------------------------------------------------------------------------------------


def chat_send(*, event: str, params: dict[str, Any]) -> str:
    """Compose the event's text now and post it to the webhook; returns the text. Raises ChatDeliveryError."""
    with translation.override(settings.LANGUAGE_CODE):
        text = chat_text(event=event, params=params)
    chat_post(text=text)
    return text


def chat_post(*, text: str) -> None:
    """POST {"text": ...} as JSON to DOCKET_CHAT_WEBHOOK_URL within DOCKET_CHAT_TIMEOUT seconds."""
    url = settings.DOCKET_CHAT_WEBHOOK_URL
    if not url:
        raise ChatDeliveryError("DOCKET_CHAT_WEBHOOK_URL is not set")
    body = json.dumps({"text": text}).encode()
    request = urllib.request.Request(  # noqa: S310 (an http(s) URL, checked by env_url at start-up)
        url, data=body, method="POST", headers={"Content-Type": "application/json", "User-Agent": "Docket"}
    )
    try:
        with urllib.request.urlopen(request, timeout=settings.DOCKET_CHAT_TIMEOUT) as response:  # noqa: S310
            response.read()
    except urllib.error.HTTPError as exc:
        raise ChatDeliveryError(f"the chat webhook answered {exc.code}") from exc
    except (urllib.error.URLError, OSError) as exc:
        raise ChatDeliveryError(f"the chat webhook could not be reached: {exc}") from exc


def _link(path: str) -> str:
    return f"{settings.SITE_URL}{path}"


def chat_text(*, event: str, params: dict[str, Any]) -> str:
    if event == "intake_closing":
        cycle = ReviewCycle.objects.get(pk=params["cycle_id"])
        filed = GpuRequest.objects.filter(cycle=cycle, status=RequestStatus.SUBMITTED).count()
        closes = cycle.intake_closes_at.astimezone(weeks.committee_zone())
        return _(
            "Intake for week %(week)s closes %(when)s: %(filed)s so far. File or finish yours: %(link)s"
        ) % {
            "week": cycle.week,
            "when": f"{closes:%a %d %b %H:%M %Z}",
            "filed": ngettext("%(count)d request submitted", "%(count)d requests submitted", filed) % {"count": filed},
            "link": _link(reverse("committee:portal")),
        }
    if event == "published":
        cycle = ReviewCycle.objects.get(pk=params["cycle_id"])
        plan = AllocationPlan.objects.get(pk=params["plan_id"])
        windows = allocation_selectors.plan_window_list(plan=plan).count()
        text = (
            _("Week %(week)s: the allocation is published (plan version %(version)d, %(windows)s).")
            if plan.version == 1
            else _("Week %(week)s: the allocation is corrected (plan version %(version)d, %(windows)s).")
        )
        return " ".join(
            [
                text
                % {
                    "week": cycle.week,
                    "version": plan.version,
                    "windows": ngettext("%(count)d window", "%(count)d windows", windows) % {"count": windows},
                },
                _link(reverse("allocations:windows") + f"?week={cycle.week}"),
            ]
        )
    if event == "sync_failed":
        window = AllocationWindow.objects.select_related("cluster", "pool", "team", "sync_status").get(
            pk=params["window_id"]
        )
        status = getattr(window, "sync_status", None)
        return _(
            "Window %(id)d of %(team)s (%(gpus)d GPUs on %(cluster)s/%(pool)s from %(start)s) failed to sync: "
            "%(message)s %(link)s"
        ) % {
            "id": window.pk,
            "team": window.team.name,
            "gpus": window.gpu_count,
            "cluster": window.cluster.slug,
            "pool": window.pool.slug,
            "start": f"{window.start.astimezone(weeks.committee_zone()):%a %d %b %H:%M %Z}",
            "message": (status.message if status and status.message else _("no message")),
            "link": _link(reverse("allocations:windows") + f"?week={window.week}"),
        }
    if event == "lifecycle":
        from committee.models import LifecycleEvent
        from committee.services.events import lifecycle_event_text

        lifecycle = LifecycleEvent.objects.get(pk=params["event_id"])
        return lifecycle_event_text({"type": lifecycle.type, **lifecycle.data})
    if event == "budget_alert":
        (budget,) = department_budgets(quarter=params["quarter"], department_ids=[params["department_id"]])
        text = (
            _("%(department)s has used %(used)s of its %(quarter)s budget (%(spent)s of %(available)s): over budget.")
            if int(params["pct"]) >= 100
            else _("%(department)s has used %(used)s of its %(quarter)s budget (%(spent)s of %(available)s).")
        )
        return " ".join([text % {
            "department": budget.name, "quarter": budget.quarter, "used": format_pct(budget.used_pct),
            "spent": format_money(budget.spent), "available": format_money(budget.available),
        }, _link(reverse("committee:budgets") + f"?quarter={budget.quarter}")])
    raise ValueError(f"unknown chat event {event!r}")
