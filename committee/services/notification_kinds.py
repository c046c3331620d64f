"""The notification kinds: one registry, one entry per kind (docs/maintaining.md, "Add a notification kind").

Every kind declares its words: the heading of its group in the digest and the inbox, its line's plain-text
template (templates/committee/notifications/<kind>.txt) and what that line needs beyond the common words
(`context`). A kind told after a user action also declares its `Delivery`:

- `message`: from the objects the action holds, the outbox key (the work is written once per key) and the
  arguments the task gets (ids, loaded again when it runs);
- `load`: from those arguments, the subjects: one per notification key (the request; each decision of a week);
- `recipients`: the user ids each subject is told to, read for all subjects at once;
- `key`: a subject's deduplication key: a person gets one notification per (kind, key), however often it is
  delivered;
- `params`: what the line says of a subject, stored on the notification as names, codes and numbers, so the
  digest writes it in its reader's language;
- `announce`: what else the action posts, in the same transaction (the chat).

`notification_enqueue` (committee/services/notifications.py) writes the work to the outbox; the one task
`committee.notify` runs `notifications_deliver` for any kind. The kinds the clock's jobs and the services
record at once (reminders, emergencies, questions, stale scores, drafts) declare only their words: their
service calls `notifications_record` with its recipients.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, Generic, NamedTuple, TypeVar

from django.urls import reverse
from django.utils.functional import Promise
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from allocations.models import AllocationPlan
from committee import selectors
from committee.models import (
    Appeal,
    Decision,
    DecisionCorrection,
    DecisionOutcome,
    GpuRequest,
    NotificationKind,
    RequestStatus,
    ReviewCycle,
)
from committee.selectors.budgets import BudgetAlert, budget_alert_key, budget_alerts
from committee.selectors.outcomes import RequestOutcome
from committee.selectors.replanning import WindowChange
from committee.services.chat import chat_budget_alerts_announce, chat_published_announce
from core.datetimes import format_day
from core.numbers import format_figure, format_money, format_pct

S = TypeVar("S")


class UnknownNotificationKind(ValueError):
    """A kind that is not in the registry: nothing is enqueued or recorded for it."""

    def __init__(self, kind: str) -> None:
        self.kind = str(kind)
        super().__init__(f"unknown notification kind {self.kind!r}: the kinds are {', '.join(NOTIFICATION_KINDS)}")


@dataclass(frozen=True)
class Delivery(Generic[S]):
    """How a kind told after a user action is enqueued and recorded (see the module's docstring)."""

    message: Callable[..., tuple[str, dict[str, Any]]]
    load: Callable[..., Sequence[S]]
    recipients: Callable[[Sequence[S]], list[list[int]]]
    key: Callable[[S], str]
    params: Callable[[S], dict[str, Any]]
    announce: Callable[..., object] | None = None


@dataclass(frozen=True)
class NotificationKindSpec:
    """One kind of notification: its words, and its delivery when a user action enqueues it."""

    kind: str
    heading: str | Promise
    # The words its line needs beyond the common ones (committee.services.notifications.notification_text).
    context: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None
    delivery: Delivery[Any] | None = None
    # The line's template; by default templates/committee/notifications/<kind>.txt.
    template: str = field(default="")

    @property
    def template_name(self) -> str:
        return self.template or f"committee/notifications/{self.kind}.txt"


# The registry, in the order the digest lists its groups.
NOTIFICATION_KINDS: dict[str, NotificationKindSpec] = {}


def notification_kind_register(spec: NotificationKindSpec) -> NotificationKindSpec:
    """Add a kind to the registry; a kind registered twice is refused (ValueError)."""
    if spec.kind in NOTIFICATION_KINDS:
        raise ValueError(f"notification kind {spec.kind!r} is already registered")
    NOTIFICATION_KINDS[spec.kind] = spec
    return spec


def notification_kind_get(kind: str) -> NotificationKindSpec:
    """The registered kind; UnknownNotificationKind (a ValueError naming the kinds there are) for any other."""
    try:
        return NOTIFICATION_KINDS[kind]
    except KeyError:
        raise UnknownNotificationKind(kind) from None


def notification_delivery_get(kind: str) -> Delivery[Any]:
    """The kind's delivery; a ValueError for a kind its own service records (it is not enqueued)."""
    delivery = notification_kind_get(kind).delivery
    if delivery is None:
        raise ValueError(f"notification kind {str(kind)!r} is recorded by its service, not enqueued")
    return delivery


def person_text(user: Any) -> str:
    """A person as a notification or a digest names them: full name, else username ("" for nobody)."""
    # Not committee.services.requests.actor_name (cut to fit an audit column, "system" for nobody).
    if user is None:
        return ""
    return user.get_full_name() or user.get_username()


def _team_members(team_ids: Sequence[int]) -> list[list[int]]:
    """The active members of each team, in the order given (one query for all)."""
    members = selectors.team_member_ids(team_ids=set(team_ids))
    return [members.get(team_id, []) for team_id in team_ids]


# --- the words of a line beyond the common ones --------------------------------------------------


def _outcome_words(outcome: Any, granted: Any) -> str:
    """ "Grant", "Partial grant, 8 GPUs": an outcome in a digest line."""
    if outcome not in DecisionOutcome.values:
        return str(outcome or "")
    label = str(DecisionOutcome(outcome).label)
    if outcome == DecisionOutcome.PARTIAL and granted:
        return _("%(label)s, %(n)d GPUs") % {"label": label, "n": int(granted)}
    return label


def _correction_context(p: Mapping[str, Any]) -> dict[str, Any]:
    """A correction's or an appeal's own reason, not the engine's, and the outcome before and after."""
    return {
        "previous": _outcome_words(p.get("previous_outcome"), p.get("previous_granted_gpu_count")),
        "current": _outcome_words(p.get("outcome"), p.get("granted_gpu_count")),
        "reason": p.get("reason") or "",
        "upheld": p.get("status") == "upheld",
    }


def _note_context(p: Mapping[str, Any]) -> dict[str, Any]:
    return {"note": p.get("note") or ""}


# --- request submitted: the team's members ------------------------------------------------------


def _submitted_load(*, request_id: int) -> list[GpuRequest]:
    return [GpuRequest.objects.select_related("team", "cycle", "submitted_by").get(pk=request_id)]


def _submitted_params(gpu_request: GpuRequest) -> dict[str, Any]:
    return {
        "team": gpu_request.team.name,
        "title": gpu_request.title,
        "week": gpu_request.cycle.week,
        "by": person_text(gpu_request.submitted_by),
        "path": reverse("committee:request-detail", args=[gpu_request.pk]),
    }


REQUEST_SUBMITTED = Delivery[GpuRequest](
    message=lambda *, gpu_request: (f"notify:request-submitted:{gpu_request.pk}", {"request_id": gpu_request.pk}),
    load=_submitted_load,
    recipients=lambda requests: _team_members([r.team_id for r in requests]),
    key=lambda gpu_request: f"request:{gpu_request.pk}",
    params=_submitted_params,
)


# --- intake closed: the committee ---------------------------------------------------------------


class _ClosedIntake(NamedTuple):
    cycle: ReviewCycle
    waiting: int  # the requests that wait for the committee's scores


def _closed_load(*, cycle_id: int) -> list[_ClosedIntake]:
    cycle = ReviewCycle.objects.get(pk=cycle_id)
    # Submitted or already decided: the same requests, however late the task runs after intake closed.
    count = GpuRequest.objects.filter(cycle=cycle, status__in=[RequestStatus.SUBMITTED, RequestStatus.DECIDED]).count()
    return [_ClosedIntake(cycle, count)]


INTAKE_CLOSED = Delivery[_ClosedIntake](
    message=lambda *, cycle: (f"notify:intake-closed:{cycle.pk}", {"cycle_id": cycle.pk}),
    load=_closed_load,
    recipients=lambda subjects: [selectors.committee_member_ids() for _subject in subjects],
    key=lambda closed: f"cycle:{closed.cycle.week}:intake-closed",
    params=lambda closed: {
        "week": closed.cycle.week,
        "count": closed.waiting,
        "review_at": closed.cycle.review_at.isoformat(),
        "path": reverse("committee:review-cycle", args=[closed.cycle.week]),
    },
)


# --- decisions published: each decided request's team (a correction, plan version n+1, again) ---


class _Published(NamedTuple):
    decision: Decision
    cycle: ReviewCycle
    plan: AllocationPlan
    outcome: RequestOutcome
    moved: WindowChange | None


def _published_load(*, cycle_id: int, plan_id: int) -> list[_Published]:
    cycle = ReviewCycle.objects.get(pk=cycle_id)
    plan = AllocationPlan.objects.get(pk=plan_id)
    decisions = list(Decision.objects.filter(cycle=cycle).select_related("request").order_by("priority_rank", "id"))
    outcomes = selectors.request_outcome_map(requests=[d.request for d in decisions])
    # A later version (a correction, an amendment): each team hears what moved in its windows, and why.
    moved = {c.request_id: c for c in selectors.plan_changes(cycle=cycle, plan=plan)}
    return [_Published(d, cycle, plan, outcomes[d.request_id], moved.get(d.request_id)) for d in decisions]


def published_params(
    *, decision: Decision, cycle: ReviewCycle, plan: AllocationPlan, outcome: RequestOutcome
) -> dict[str, Any]:
    """The "decision published" line's parameters for one decision placed by `plan` (the fast lane tells its team
    with the same words, committee/services/fastlane.py)."""
    return _published_params(_Published(decision, cycle, plan, outcome, None))


def _published_params(published: _Published) -> dict[str, Any]:
    decision, plan = published.decision, published.plan
    return {
        "team": decision.team_name,
        "title": decision.request_title,
        "week": published.cycle.week,
        "outcome": decision.outcome,
        "granted_gpu_count": decision.granted_gpu_count,
        "requested_gpu_count": decision.requested_gpu_count,
        "alternative": decision.alternative_description,
        "alternative_gpu_hours": decision.alternative_gpu_hours,
        "version": plan.version,
        "path": reverse("committee:request-detail", args=[decision.request_id]),
        # Decided and placed, as codes and numbers: the digest writes them in its reader's language.
        **published.outcome.as_params(),
        **({"moved": published.moved.as_params(), "why": plan.note} if published.moved is not None else {}),
    }


DECISION_PUBLISHED = Delivery[_Published](
    message=lambda *, cycle, plan: (
        f"notify:published:{cycle.pk}:v{plan.version}",
        {"cycle_id": cycle.pk, "plan_id": plan.pk},
    ),
    load=_published_load,
    recipients=lambda subjects: _team_members([s.decision.request.team_id for s in subjects]),
    key=lambda published: f"decision:{published.decision.request_id}:plan-v{published.plan.version}",
    params=_published_params,
    announce=chat_published_announce,
)


# --- decision corrected: the corrected request's team -------------------------------------------


def _corrected_load(*, correction_id: int) -> list[DecisionCorrection]:
    return [DecisionCorrection.objects.select_related("decision__request", "cycle").get(pk=correction_id)]


def _corrected_params(correction: DecisionCorrection) -> dict[str, Any]:
    return {
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
        "path": reverse("committee:request-detail", args=[correction.decision.request_id]),
    }


DECISION_CORRECTED = Delivery[DecisionCorrection](
    message=lambda *, correction: (f"notify:decision-corrected:{correction.pk}", {"correction_id": correction.pk}),
    load=_corrected_load,
    recipients=lambda corrections: _team_members([c.decision.request.team_id for c in corrections]),
    key=lambda correction: f"correction:{correction.pk}",
    params=_corrected_params,
)


# --- appeal filed: the committee members outside the team ---------------------------------------


def _appeal_filed_recipients(appeals: Sequence[Appeal]) -> list[list[int]]:
    teams = [set(team) for team in _team_members([a.request.team_id for a in appeals])]
    committee = selectors.committee_member_ids()
    return [[user_id for user_id in committee if user_id not in team] for team in teams]


APPEAL_FILED = Delivery[Appeal](
    message=lambda *, appeal: (f"notify:appeal-filed:{appeal.pk}", {"appeal_id": appeal.pk}),
    load=lambda *, appeal_id: [Appeal.objects.select_related("request", "cycle").get(pk=appeal_id)],
    recipients=_appeal_filed_recipients,
    key=lambda appeal: f"appeal:{appeal.pk}:filed",
    params=lambda appeal: {
        "team": appeal.team_name,
        "title": appeal.request_title,
        "week": appeal.cycle.week,
        "by": appeal.filed_by_name,
        "path": reverse("committee:appeal-list", args=[appeal.cycle.week]),
    },
)


# --- appeal decided: the appealing team ---------------------------------------------------------


class _DecidedAppeal(NamedTuple):
    appeal: Appeal
    correction: DecisionCorrection | None


def _appeal_decided_load(*, appeal_id: int) -> list[_DecidedAppeal]:
    appeal = Appeal.objects.select_related("request__decision", "cycle").get(pk=appeal_id)
    return [_DecidedAppeal(appeal, DecisionCorrection.objects.filter(appeal=appeal).first())]


def _appeal_decided_params(decided: _DecidedAppeal) -> dict[str, Any]:
    appeal, correction = decided
    decision = appeal.request.decision
    return {
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
    }


APPEAL_DECIDED = Delivery[_DecidedAppeal](
    message=lambda *, appeal: (f"notify:appeal-decided:{appeal.pk}", {"appeal_id": appeal.pk}),
    load=_appeal_decided_load,
    recipients=lambda subjects: _team_members([s.appeal.request.team_id for s in subjects]),
    key=lambda decided: f"appeal:{decided.appeal.pk}:decided",
    params=_appeal_decided_params,
)


# --- a department's charges reached 80 % or 100 % of its quarter's budget: the committee (finance holds a seat) ---


def _budget_alert_params(alert: BudgetAlert) -> dict[str, Any]:
    budget = alert.budget
    return {
        "department": budget.name,
        "quarter": budget.quarter,
        "pct": alert.pct,
        "used_pct": str(budget.used_pct),
        "spent": str(budget.spent),
        "available": str(budget.available),
        "path": reverse("committee:budgets") + f"?quarter={budget.quarter}",
    }


def _budget_alert_context(p: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "department": p.get("department") or "",
        "quarter": p.get("quarter") or "",
        "over": int(p.get("pct") or 0) >= 100,
        "used": format_pct(Decimal(p["used_pct"])) if p.get("used_pct") else "",
        "spent": format_money(Decimal(p["spent"])) if p.get("spent") else "",
        "available": format_money(Decimal(p["available"])) if p.get("available") else "",
    }


BUDGET_ALERT = Delivery[BudgetAlert](
    message=lambda *, quarters, ref: (
        f"notify:budget-alert:{ref}", {"quarters": sorted(set(quarters))},
    ),
    load=budget_alerts,
    recipients=lambda alerts: [selectors.committee_member_ids() for _alert in alerts],
    key=budget_alert_key,
    params=_budget_alert_params,
    announce=chat_budget_alerts_announce,
)


def _lifecycle_context(params: Mapping[str, Any]) -> dict[str, Any]:
    from committee.services.events import lifecycle_event_text  # events records notifications: imported at use

    return {"line": lifecycle_event_text(params)}


def _outcome_due_context(params: Mapping[str, Any]) -> dict[str, Any]:
    return {"request_id": params.get("request_id", ""), "unit": params.get("unit", ""),
            "forecast": format_figure(Decimal(str(params.get("forecast", "0")))),
            "due": format_day(datetime.fromisoformat(str(params["due_at"]))) if params.get("due_at") else ""}


# --- the registry ------------------------------------------------------------------------------

for _spec in (
    NotificationKindSpec(NotificationKind.INTAKE_CLOSING.value, gettext_lazy("Intake closes soon")),
    NotificationKindSpec(
        NotificationKind.REQUEST_SUBMITTED.value, gettext_lazy("Requests submitted"), delivery=REQUEST_SUBMITTED
    ),
    NotificationKindSpec(
        NotificationKind.DECISION_PUBLISHED.value, gettext_lazy("Decisions published"), delivery=DECISION_PUBLISHED
    ),
    NotificationKindSpec(NotificationKind.INTAKE_CLOSED.value, gettext_lazy("Intake closed"), delivery=INTAKE_CLOSED),
    NotificationKindSpec(NotificationKind.REVIEW_COMING.value, gettext_lazy("The review is coming up")),
    NotificationKindSpec(
        NotificationKind.DECISION_CORRECTED.value,
        gettext_lazy("Decisions corrected"),
        context=_correction_context,
        delivery=DECISION_CORRECTED,
    ),
    NotificationKindSpec(
        NotificationKind.APPEAL_FILED.value,
        gettext_lazy("Appeals filed"),
        context=_correction_context,
        delivery=APPEAL_FILED,
    ),
    NotificationKindSpec(
        NotificationKind.APPEAL_DECIDED.value,
        gettext_lazy("Appeals decided"),
        context=_correction_context,
        delivery=APPEAL_DECIDED,
    ),
    NotificationKindSpec(NotificationKind.EMERGENCY.value, gettext_lazy("Emergency requests")),
    NotificationKindSpec(NotificationKind.QUESTION_ASKED.value, gettext_lazy("Questions from the committee")),
    NotificationKindSpec(NotificationKind.QUESTION_ANSWERED.value, gettext_lazy("Questions answered")),
    NotificationKindSpec(NotificationKind.SCORES_STALE.value, gettext_lazy("Requests changed after you scored them")),
    NotificationKindSpec(NotificationKind.DRAFT_AWAITS_LEAD.value, gettext_lazy("Drafts waiting for you to submit")),
    NotificationKindSpec(
        NotificationKind.DRAFT_RETURNED.value, gettext_lazy("Drafts sent back to you"), context=_note_context
    ),
    NotificationKindSpec(
        NotificationKind.WINDOW_EVENT.value, gettext_lazy("Windows starting, ending, given back or extended"),
        context=_lifecycle_context,
    ),
    NotificationKindSpec(
        NotificationKind.BUDGET_ALERT.value, gettext_lazy("Budgets reaching their limit"),
        context=_budget_alert_context, delivery=BUDGET_ALERT,
    ),
    NotificationKindSpec(
        NotificationKind.OUTCOME_DUE.value, gettext_lazy("Outcomes to report against forecasts"),
        context=_outcome_due_context,
    ),
):
    notification_kind_register(_spec)
