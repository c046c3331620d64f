"""Finance sets a department's quarterly budget and its carry-over rule: one change in the one store of governed
parameters (governed), effective from the quarter's first week, or from this week for the quarter under way."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.utils import timezone
from django.utils.translation import gettext as _

from allocations.models import Department
from committee import limits, selectors
from committee.models import NotificationKind
from committee.quarters import parse_quarter, quarter_of
from committee.selectors.budgets import quarter_first_week
from committee.services.notifications import notification_enqueue
from core.datetimes import format_isoweek
from core.locks import write_transaction
from governed.models import ChangeSource, PolicyChange
from governed.params import BUDGET_PREFIX
from governed.services import policy_change_record

# A budget changes no rule of the ranking: finance may set one in a week the committee changed its rules.
BUDGET_EXEMPT_REASON = "A department's budget, set by finance: no rule of the ranking changes."


@write_transaction
def department_budget_set(
    *, actor: User, department: Department, quarter: str, quarterly: Decimal, carry_over_pct: int, reason: str,
    now: datetime | None = None,
) -> PolicyChange:
    """Set `department`'s budget for `quarter` (YYYY-Qn) and the share of it that may carry over into the next.

    Only the finance seat sets budgets (PermissionDenied otherwise). A past quarter is refused, and so is an amount
    below 0 or of more than two decimals, a carry-over outside 0–100 %, an empty reason or the values already in force
    (ValidationError keyed by field, nothing written). The change is effective from the quarter's first week, or from
    the current week for the quarter under way (the weeks before keep what they had); a quarter reads the values in
    force in its last week (committee.selectors.budgets). Exempt from one change a week. After commit the store sends
    `policy_changed`: the archive writes the change's page; the committee is told of a threshold (80 %, 100 %) the
    department's charges now reach (the `budget_alert` notification and chat, once per threshold and quarter).
    """
    if not selectors.user_is_finance(user=actor):
        raise PermissionDenied(_("Only the finance member sets the departments' budgets."))
    now = now or timezone.now()
    errors: dict[str, list[str]] = {}
    try:
        parse_quarter(quarter)
    except ValueError:
        raise ValidationError({"quarter": [_("Give the quarter as YYYY-Qn, for example 2027-Q1.")]}) from None
    if quarter < quarter_of(now):
        errors["quarter"] = [_("%(quarter)s is over: set this quarter's budget or a later one.") % {
            "quarter": quarter}]
    reason = (reason or "").strip()
    if not reason:
        errors["reason"] = [_("Say why the budget changes: the reason is published with it.")]
    elif len(reason) > limits.REASON_MAX_LENGTH:
        errors["reason"] = [_("At most %(n)d characters.") % {"n": limits.REASON_MAX_LENGTH}]
    if errors:
        raise ValidationError(errors)
    week = max(quarter_first_week(quarter), format_isoweek(now))
    try:
        change = policy_change_record(
            actor=actor,
            changes={f"{BUDGET_PREFIX}{department.slug}.quarterly": quarterly,
                     f"{BUDGET_PREFIX}{department.slug}.carry_over_pct": carry_over_pct},
            effective_week=week, reason=reason, source=ChangeSource.BUDGETS, exempt_reason=BUDGET_EXEMPT_REASON,
        )
    except ValidationError as exc:
        if hasattr(exc, "error_dict") and "changes" in exc.error_dict:
            raise ValidationError({"quarterly": exc.error_dict.pop("changes"), **exc.error_dict}) from None
        raise
    # A lower budget may reach a threshold with nothing more charged: tell the committee (once per threshold).
    notification_enqueue(kind=NotificationKind.BUDGET_ALERT, quarters=[quarter], ref=f"policy-change:{change.number}")
    return change
