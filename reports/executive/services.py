"""Writes to the capacity buffer fund: open a quarter's fund, record a spend, record a deferred purchase.

Only the chair or the finance seat records (`buffer_fund_can_record`); every refusal is a
ValidationError keyed by field, and a refused entry stores nothing. Money is Decimal to the cent.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal, InvalidOperation

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Sum
from django.utils.translation import gettext as _

from committee.models import EmergencyRequest
from core.audit import person_name
from core.errors import StateConflict
from reports.executive import quarters
from reports.executive.selectors import buffer_fund_can_record, fund_buffer, fund_buffer_lines
from reports.models import BufferFund, BufferSpend, DeferredPurchase

CENT = Decimal("0.01")
MAX_AMOUNT = Decimal("999999999999.99")
# Quarters a fund may be opened for, around the running one: a year back (late bookkeeping), two years ahead.
OPEN_QUARTERS_BACK, OPEN_QUARTERS_AHEAD = 4, 8


def _require_recorder(actor: AbstractBaseUser, now: datetime) -> None:
    if not buffer_fund_can_record(user=actor, now=now):
        raise PermissionDenied(_("Only the chair or the finance seat records the buffer fund."))


def _money(value: Decimal | str | int, *, field: str, allow_zero: bool = False) -> Decimal:
    try:
        amount = Decimal(value)
    except (InvalidOperation, TypeError, ValueError):
        raise ValidationError({field: [_("Give an amount such as 1200.50.")]}) from None
    if not amount.is_finite() or amount != amount.quantize(CENT):
        raise ValidationError({field: [_("Give an amount in whole cents, such as 1200.50.")]})
    if amount < 0 or (amount == 0 and not allow_zero):
        raise ValidationError({field: [_("The amount must be more than zero.")]})
    if amount > MAX_AMOUNT:
        raise ValidationError({field: [_("The amount is too large.")]})
    return amount


def _text(value: str, *, field: str, max_length: int) -> str:
    text = (value or "").strip()
    if not text:
        raise ValidationError({field: [_("This is required.")]})
    if len(text) > max_length:
        raise ValidationError({field: [_("At most %(n)d characters.") % {"n": max_length}]})
    return text


def buffer_fund_open(*, actor: AbstractBaseUser, quarter: str, now: datetime) -> BufferFund:
    """Open a quarter's fund, in settings.DOCKET_COST_CURRENCY. Its buffer is not typed: it follows the departments'
    budgets of the quarter and `budget.buffer_pct` (`reports.executive.selectors.fund_state`).

    Only quarters near `now` have funds: from OPEN_QUARTERS_BACK before the running quarter to
    OPEN_QUARTERS_AHEAD after it (a ValidationError on `quarter` otherwise). A quarter has one fund:
    opening it again is a StateConflict, also when several sessions open it at the same moment (the
    unique quarter decides; the others are answered as if they came second). Nothing else is written.
    """
    _require_recorder(actor, now)
    try:
        quarters.parse_quarter(quarter)
    except ValueError:
        raise ValidationError({"quarter": [_("A quarter looks like 2026-Q4.")]}) from None
    running = quarters.quarter_of(now)
    first, last = quarters.shift_quarter(running, -OPEN_QUARTERS_BACK), quarters.shift_quarter(running,
                                                                                               OPEN_QUARTERS_AHEAD)
    if not first <= quarter <= last:
        raise ValidationError({"quarter": [
            _("Funds are opened for %(first)s to %(last)s: a year back and two years ahead of %(running)s.")
            % {"first": first, "last": last, "running": running}
        ]})
    already_open = StateConflict(_("The fund of %(quarter)s is already open.") % {"quarter": quarter})
    try:
        with transaction.atomic():
            if BufferFund.objects.filter(quarter=quarter).exists():
                raise already_open
            return BufferFund.objects.create(
                quarter=quarter, currency=settings.DOCKET_COST_CURRENCY,
                opened_by_name=person_name(actor), opened_at=now,
            )
    except IntegrityError:
        # Another session opened it between the check and the insert: the unique quarter kept one fund.
        if BufferFund.objects.filter(quarter=quarter).exists():
            raise already_open from None
        raise


def _dated_in(fund: BufferFund, at: datetime, *, field: str, now: datetime) -> None:
    if at > now:
        raise ValidationError({field: [_("That is in the future; record what has happened.")]})
    other = quarters.quarter_of(at)
    if other != fund.quarter:
        raise ValidationError({field: [
            _("That date is in %(other)s, not %(quarter)s: record it on the fund of %(other)s.")
            % {"other": other, "quarter": fund.quarter}
        ]})


def buffer_spend_record(
    *,
    actor: AbstractBaseUser,
    fund: BufferFund,
    amount: Decimal | str,
    item: str,
    spent_at: datetime,
    reason: str,
    now: datetime,
    emergency: EmergencyRequest | None = None,
) -> BufferSpend:
    """Record a purchase paid from the fund; refused (nothing stored) when it is more than the balance (the buffer,
    the sum of the departments' buffer lines of the quarter as they stand, less what was spent).

    The fund's row is locked (select_for_update) while the balance is read and the spend written, so two
    spends at once are checked one after the other and cannot together overdraw it. The spend must be
    dated in the fund's quarter (committee time) and not in the future.
    """
    _require_recorder(actor, now)
    value = _money(amount, field="amount")
    what = _text(item, field="item", max_length=200)
    why = _text(reason, field="reason", max_length=2000)
    with transaction.atomic():
        locked = BufferFund.objects.select_for_update(no_key=True).get(pk=fund.pk)
        _dated_in(locked, spent_at, field="spent_at", now=now)
        spent = (locked.spends.aggregate(total=Sum("amount"))["total"] or Decimal(0)).quantize(CENT)
        buffer = fund_buffer(fund_buffer_lines(quarter=locked.quarter)[0])
        balance = buffer - spent
        if value > balance and buffer <= 0:
            raise ValidationError({"amount": [
                _("The fund of %(quarter)s has no buffer: no department has a budget for the quarter, or the "
                  "policy keeps 0%% of it.") % {"quarter": locked.quarter}
            ]})
        if value > balance:
            raise ValidationError({"amount": [
                _("%(amount)s %(currency)s is more than the fund's balance of %(balance)s %(currency)s.")
                % {"amount": value, "balance": balance, "currency": locked.currency}
            ]})
        return BufferSpend.objects.create(
            fund=locked, amount=value, item=what, spent_at=spent_at, reason=why, emergency=emergency,
            emergency_title=emergency.request.title[:200] if emergency is not None else "",
            recorded_by_name=person_name(actor), recorded_at=now,
        )


def purchase_deferred_record(
    *,
    actor: AbstractBaseUser,
    fund: BufferFund,
    amount: Decimal | str,
    item: str,
    deferred_at: datetime,
    reason: str,
    now: datetime,
) -> DeferredPurchase:
    """Record a purchase the committee postponed (it spends nothing), dated in the fund's quarter."""
    _require_recorder(actor, now)
    value = _money(amount, field="amount")
    what = _text(item, field="item", max_length=200)
    why = _text(reason, field="reason", max_length=2000)
    _dated_in(fund, deferred_at, field="deferred_at", now=now)
    return DeferredPurchase.objects.create(
        fund=fund, amount=value, item=what, deferred_at=deferred_at, reason=why,
        recorded_by_name=person_name(actor), recorded_at=now,
    )
