"""Outcomes against forecasts: the clock asks a team for a grant's realized outcome; the team reports it.

`outcome_asks_due` is the clock's `outcome_asks` job (hourly at :00 UTC): for every grant whose last window ended
within `ASK_CATCH_UP` before `now` (committee.selectors.realized.grants_ended), it writes the `RealizedOutcome` row
once (one per request, a unique constraint) and tells the team's members (notification kind `outcome_due`: the inbox
and the daily digest). It reads what is true at `now`, so a tick missed while beat, the broker or the worker was down
asks at the next tick; a second run finds the row and asks nothing.

`outcome_report` is the team's report (the request's outcome page and the API): the value in the forecast's own unit
and a note. A correction replaces them and keeps what it replaced in the request's history. Nothing here touches a
score or a decision: the committee reads the track record and scores as it sees fit.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _

from committee import limits, selectors, weeks
from committee.models import GpuRequest, NotificationKind, RealizedOutcome
from committee.selectors.realized import grants_ended
from committee.services.notifications import notifications_record
from committee.services.requests import actor_name, request_event_record
from core.errors import StateConflict
from core.locks import write_transaction
from core.texts import stored_text, text_render
from governed.params import OUTCOMES_GRACE_DAYS, as_int
from governed.selectors import policy_value

# A grant whose last window ended longer ago than this when the clock first saw it (beat down for more than a week,
# or a grant that ended before outcomes were asked for) is not asked for: its due day would already be near.
ASK_CATCH_UP = timedelta(days=7)
VALUE_MAX = Decimal("999999999999.99")  # the column's 14 digits, 2 of them decimals


def outcome_asks_due(*, now: datetime) -> int:
    """The clock's job: ask the team of every grant that ended since `now - ASK_CATCH_UP` for its realized outcome,
    once per grant. Returns how many grants it asked for; a second run asks none."""
    asked = 0
    ended = grants_ended(now=now, since=now - ASK_CATCH_UP)
    requests = GpuRequest.objects.filter(pk__in=ended).select_related("team", "impact_forecast").order_by("pk")
    for gpu_request in requests:
        asked += outcome_ask(gpu_request=gpu_request, last_window_end=ended[gpu_request.pk], now=now)
    return asked


def outcome_ask(*, gpu_request: GpuRequest, last_window_end: datetime, now: datetime) -> bool:
    """Ask the team of `gpu_request`, whose last window ended at `last_window_end`, for its realized outcome: the row
    (due `outcomes.grace_days` after that end, in force that week) and a notification per member. False when it was
    asked already (nothing written)."""
    grace = as_int(policy_value(key=OUTCOMES_GRACE_DAYS, week=weeks.week_label(last_window_end)))
    due_at = last_window_end + timedelta(days=grace)
    try:
        with transaction.atomic():
            RealizedOutcome.objects.create(request=gpu_request, team=gpu_request.team, last_window_end=last_window_end,
                                           due_at=due_at, asked_at=now)
            forecast = gpu_request.impact_forecast
            notifications_record(
                recipient_ids=selectors.team_member_ids(team_ids=[gpu_request.team_id]).get(gpu_request.team_id, []),
                kind=NotificationKind.OUTCOME_DUE, key=f"outcome:{gpu_request.pk}",
                params={"team": gpu_request.team.name, "request_id": gpu_request.pk, "title": gpu_request.title,
                        "forecast": str(forecast.estimated_value), "unit": forecast.value_unit,
                        "ended_at": last_window_end.isoformat(), "due_at": due_at.isoformat(),
                        "path": reverse("committee:request-outcome", args=[gpu_request.pk])},
            )
    except IntegrityError:
        return False  # a tick beside this one asked first
    return True


def _value(raw: object) -> Decimal:
    """The realized value as typed ("1200", "1,200.50") or as the JSON number; ValidationError keyed `value`."""
    if isinstance(raw, bool) or raw is None or (isinstance(raw, str) and not raw.strip()):
        raise ValidationError({"value": _("Give the realized value, a number in the forecast's unit.")})
    text = raw.strip().replace(",", "") if isinstance(raw, str) else str(raw)
    try:
        value = Decimal(text)
    except InvalidOperation:
        raise ValidationError({"value": _("“%(value)s” is not a number.") % {"value": raw}}) from None
    if not value.is_finite():
        raise ValidationError({"value": _("“%(value)s” is not a number.") % {"value": raw}})
    if value < 0:
        raise ValidationError({"value": _("The realized value cannot be negative; report 0 when nothing came of it.")})
    if value > VALUE_MAX:
        raise ValidationError({"value": _("The realized value is too large.")})
    if value != value.quantize(Decimal("0.01")):
        raise ValidationError({"value": _("The realized value has at most two decimals.")})
    return value.quantize(Decimal("0.01"))


def _note(raw: object) -> str:
    note = str(raw or "").strip()
    if not note:
        raise ValidationError({"note": _("Say in a note how the value was measured or why it differs from the "
                                         "forecast.")})
    if len(note) > limits.OUTCOME_NOTE_MAX_LENGTH:
        raise ValidationError({"note": _("The note has at most %(n)d characters.")
                                       % {"n": limits.OUTCOME_NOTE_MAX_LENGTH}})
    return note


@write_transaction
def outcome_report(*, actor: User, gpu_request: GpuRequest, value: object, note: object,
                   now: datetime | None = None) -> RealizedOutcome:
    """The team reports (or corrects) its grant's realized outcome, in the forecast's unit, with a note.

    Only a member of the request's team (PermissionDenied); only once the clock asked for it, i.e. the grant's last
    window ended (StateConflict before); the value a number from 0 with at most two decimals and the note not empty
    (ValidationError keyed by field). Nothing is written on a refusal. A correction replaces the value and note and
    records the value it replaced in the request's history ("outcome corrected"); the first report records "outcome
    reported". No score or decision changes.
    """
    now = now or timezone.now()
    if not selectors.user_is_team_member(user=actor, team=gpu_request.team):
        raise PermissionDenied(_("Only a member of %(team)s may report this grant's outcome.")
                               % {"team": gpu_request.team.name})
    outcome = RealizedOutcome.objects.select_for_update(no_key=True).filter(request=gpu_request).first()
    if outcome is None:
        raise StateConflict(_("This request's outcome is not asked for: it is asked for when a grant's last window "
                              "has ended."))
    errors: dict[str, list[str]] = {}
    parsed_value: Decimal | None = None
    parsed_note = ""
    try:
        parsed_value = _value(value)
    except ValidationError as exc:
        errors.update(exc.message_dict)
    try:
        parsed_note = _note(note)
    except ValidationError as exc:
        errors.update(exc.message_dict)
    if errors:
        raise ValidationError(errors)
    assert parsed_value is not None
    previous = outcome.value
    if previous == parsed_value and outcome.note == parsed_note:
        return outcome  # the same report again: nothing to record
    outcome.value, outcome.note = parsed_value, parsed_note
    outcome.reported_by, outcome.reported_by_name, outcome.reported_at = actor, actor_name(actor), now
    outcome.save(update_fields=["value", "note", "reported_by", "reported_by_name", "reported_at"])
    detail = stored_text("outcome_reported", value=str(parsed_value), unit=gpu_request.impact_forecast.value_unit,
                         note=parsed_note, previous=None if previous is None else str(previous))
    request_event_record(request=gpu_request, actor=actor,
                         action="outcome reported" if previous is None else "outcome corrected",
                         detail=text_render(detail), detail_text=detail, at=now)
    return outcome
