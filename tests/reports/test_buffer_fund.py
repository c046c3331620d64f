"""The capacity buffer fund: its buffer is the departments' buffer lines of the quarter (each budget × the policy's
`budget.buffer_pct`), its spending ledger and the purchases deferred. Balance = buffer − spent; a spend over the
balance is refused and nothing is stored; the chair and the finance seat record, everyone signed in reads; quarters
are calendar quarters in the committee's zone; two spends at once cannot overdraw it (PostgreSQL row lock)."""

from __future__ import annotations

import threading
from datetime import datetime
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection
from django.db.models.signals import pre_save
from django.urls import reverse
from django.utils import timezone

from allocations.models import Department
from committee.selectors.budgets import department_budgets
from core.errors import StateConflict
from governed.models import ChangeSource
from governed.services import policy_change_record
from reports.executive import quarters, selectors, services
from reports.models import BufferFund, BufferSpend, DeferredPurchase
from tests.clock import FIXED_NOW
from tests.conftest import require
from tests.races import RaceWindow
from tests.readable import assert_readable
from tests.reports.conftest import on_postgresql
from tests.reports.executive_data import budgets_set, placed_emergency

BERLIN = ZoneInfo("Europe/Berlin")


def _fund(world: Any, quarter: str = "2026-Q4", *, budgeted: bool = True) -> BufferFund:
    if budgeted and not Department.objects.exists():
        budgets_set(world)
    return services.buffer_fund_open(actor=world.chair, quarter=quarter, now=timezone.now())


def _spend(world: Any, fund: BufferFund, amount: str, *, at: datetime = FIXED_NOW, actor: Any = None,
           **extra: Any) -> BufferSpend:
    return services.buffer_spend_record(
        actor=actor or world.finance, fund=fund, amount=Decimal(amount), item=extra.pop("item", "Cloud burst"),
        spent_at=at, reason=extra.pop("reason", "The emergency needed it."), now=timezone.now(), **extra,
    )


def test_the_buffer_is_the_departments_buffer_lines_and_the_balance_what_is_left(world):
    fund = _fund(world)  # 5% of 120,000.00 and of 80,000.00
    _spend(world, fund, "4000.00")
    _spend(world, fund, "1234.56")
    state = selectors.fund_state(fund)
    assert [(line.name, line.buffer) for line in state.lines] == [
        ("Product", Decimal("4000.00")), ("Research", Decimal("6000.00"))]
    # The same lines /budgets/ shows.
    assert [line.buffer for line in state.lines] == [b.buffer for b in department_budgets(quarter="2026-Q4")]
    assert (state.buffer_pct, state.budgets_total) == (5, Decimal("200000.00"))
    assert (state.buffer, state.spent, state.balance) == (Decimal("10000.00"), Decimal("5234.56"), Decimal("4765.44"))
    assert fund.currency == "USD"


def test_the_buffer_follows_the_budgets_and_the_policys_percentage(world):
    fund = _fund(world)
    _spend(world, fund, "9000.00")
    budgets_set(world, research="100000.00")  # finance lowers a budget: 5% of 180,000.00
    assert selectors.fund_state(fund).buffer == Decimal("9000.00")
    with pytest.raises(ValidationError) as refused:
        _spend(world, fund, "0.01")
    assert refused.value.message_dict["amount"] == ["0.01 USD is more than the fund's balance of 0.00 USD."]
    policy_change_record(actor=None, changes={"budget.buffer_pct": "8"}, effective_week="2026-W50",
                         reason="A bigger buffer for the winter.", source=ChangeSource.LAB)
    state = selectors.fund_state(fund)  # 8% of 180,000.00
    assert (state.buffer_pct, state.buffer, state.balance) == (8, Decimal("14400.00"), Decimal("5400.00"))
    _spend(world, fund, "5400.00")
    assert selectors.fund_state(fund).balance == Decimal("0.00")


def test_without_departments_budgets_the_fund_has_no_buffer_and_a_spend_is_refused(world):
    fund = _fund(world, budgeted=False)
    state = selectors.fund_state(fund)
    assert (state.lines, state.buffer_pct, state.buffer) == ((), 5, Decimal(0))
    with pytest.raises(ValidationError) as refused:
        _spend(world, fund, "1.00")
    assert refused.value.message_dict["amount"] == [
        "The fund of 2026-Q4 has no buffer: no department has a budget for the quarter, or the policy keeps 0% of it."
    ]
    assert not BufferSpend.objects.exists()


def test_a_spend_over_the_balance_is_refused_and_nothing_is_stored(world):
    fund = _fund(world)
    _spend(world, fund, "9999.99")
    with pytest.raises(ValidationError) as refused:
        _spend(world, fund, "0.02")
    assert refused.value.message_dict["amount"] == [
        "0.02 USD is more than the fund's balance of 0.01 USD."
    ]
    assert BufferSpend.objects.count() == 1
    _spend(world, fund, "0.01")  # exactly the balance is allowed: it reaches zero
    assert selectors.fund_state(fund).balance == Decimal("0.00")


@pytest.mark.parametrize(("amount", "message"), [
    ("0", "The amount must be more than zero."),
    ("-5", "The amount must be more than zero."),
    ("1.005", "Give an amount in whole cents, such as 1200.50."),
    ("NaN", "Give an amount in whole cents, such as 1200.50."),
    ("ten", "Give an amount such as 1200.50."),
])
def test_a_bad_amount_is_refused_by_field(world, amount, message):
    fund = _fund(world)
    with pytest.raises(ValidationError) as refused:
        services.buffer_spend_record(actor=world.chair, fund=fund, amount=amount, item="GPU", spent_at=FIXED_NOW,
                                     reason="why", now=FIXED_NOW)
    assert refused.value.message_dict == {"amount": [message]}
    assert not BufferSpend.objects.exists()


def test_only_the_chair_and_finance_record(world):
    fund = _fund(world)
    _spend(world, fund, "10.00", actor=world.chair)
    _spend(world, fund, "10.00", actor=world.finance)
    for person in (world.reviewer, world.tech, world.lead_a, world.outsider):
        with pytest.raises(PermissionDenied):
            _spend(world, fund, "10.00", actor=person)
        with pytest.raises(PermissionDenied):
            services.buffer_fund_open(actor=person, quarter="2027-Q1", now=FIXED_NOW)
    assert BufferSpend.objects.count() == 2 and BufferFund.objects.count() == 1


def test_a_quarter_has_one_fund(world):
    _fund(world)
    with pytest.raises(StateConflict):
        _fund(world)
    with pytest.raises(ValidationError):
        _fund(world, quarter="2027-Q5")
    assert list(BufferFund.objects.values_list("quarter", flat=True)) == ["2026-Q4"]


def test_the_quarter_turns_at_midnight_in_the_committees_zone(settings):
    settings.TIME_ZONE = "Europe/Berlin"
    assert quarters.quarter_of(datetime(2026, 12, 31, 23, 59, tzinfo=BERLIN)) == "2026-Q4"
    assert quarters.quarter_of(datetime(2027, 1, 1, 0, 0, tzinfo=BERLIN)) == "2027-Q1"
    # 23:30 UTC on 31 December is already 00:30 on 1 January in Berlin.
    assert quarters.quarter_of(datetime(2026, 12, 31, 23, 30, tzinfo=ZoneInfo("UTC"))) == "2027-Q1"
    start, end = quarters.quarter_bounds("2026-Q4")
    assert (start, end) == (datetime(2026, 10, 1, tzinfo=BERLIN), datetime(2027, 1, 1, tzinfo=BERLIN))
    assert quarters.quarter_months("2026-Q4") == ["2026-10", "2026-11", "2026-12"]
    assert quarters.shift_quarter("2026-Q4", 1) == "2027-Q1" and quarters.shift_quarter("2027-Q1", -1) == "2026-Q4"


def test_a_spend_at_the_quarter_boundary_goes_to_its_own_quarter(world, settings, clock):
    settings.TIME_ZONE = "Europe/Berlin"
    clock.move_to(datetime(2027, 1, 2, 9, 0, tzinfo=BERLIN), tick=False)
    q4, q1 = _fund(world, "2026-Q4"), _fund(world, "2027-Q1")
    _spend(world, q4, "100.00", at=datetime(2026, 12, 31, 23, 59, tzinfo=BERLIN))
    with pytest.raises(ValidationError) as refused:
        _spend(world, q4, "100.00", at=datetime(2027, 1, 1, 0, 0, tzinfo=BERLIN))
    assert refused.value.message_dict["spent_at"] == [
        "That date is in 2027-Q1, not 2026-Q4: record it on the fund of 2027-Q1."
    ]
    _spend(world, q1, "100.00", at=datetime(2027, 1, 1, 0, 0, tzinfo=BERLIN))
    assert (q4.spends.count(), q1.spends.count()) == (1, 1)


def test_an_entry_dated_in_another_quarter_or_the_future_is_refused(world):
    fund = _fund(world)
    with pytest.raises(ValidationError) as earlier:
        _spend(world, fund, "10.00", at=datetime(2026, 9, 30, 12, 0, tzinfo=ZoneInfo("UTC")))
    assert "2026-Q3, not 2026-Q4" in earlier.value.message_dict["spent_at"][0]
    with pytest.raises(ValidationError) as later:
        services.purchase_deferred_record(actor=world.chair, fund=fund, amount="10.00", item="Node",
                                          deferred_at=datetime(2026, 12, 20, tzinfo=ZoneInfo("UTC")),
                                          reason="Later.", now=FIXED_NOW)
    assert later.value.message_dict["deferred_at"] == ["That is in the future; record what has happened."]
    assert not BufferSpend.objects.exists() and not DeferredPurchase.objects.exists()


def test_a_deferred_purchase_spends_nothing(world):
    fund = _fund(world)
    services.purchase_deferred_record(actor=world.chair, fund=fund, amount="96000.00", item="H100 node",
                                      deferred_at=FIXED_NOW, reason="Not yet.", now=FIXED_NOW)
    state = selectors.fund_state(fund)
    assert (state.deferred, state.spent, state.balance) == (Decimal("96000.00"), Decimal(0), Decimal("10000.00"))


def test_the_ledger_page_is_read_by_everyone_signed_in_and_links_the_emergency(world, client, clock):
    fund = _fund(world)
    emergency = placed_emergency(world, clock)  # team A's
    _spend(world, fund, "6400.00", item="8× A100 for 48 hours", emergency=emergency)
    client.force_login(world.member_b)
    response = client.get(reverse("reports:buffer-fund", args=["2026-Q4"]))
    html = response.content.decode()
    assert response.status_code == 200
    assert "8× A100 for 48 hours" in html and "3,600.00 USD" in html  # the balance: 10,000 − 6,400
    # Another team's emergency is named, not linked (its page would answer 404); its own team gets the link.
    assert "Fraud hotfix" in html and reverse("committee:emergency-detail", args=[emergency.pk]) not in html
    assert 'id="spend-form"' not in html  # a reader gets no forms
    client.force_login(world.member_a)
    html = client.get(reverse("reports:buffer-fund", args=["2026-Q4"])).content.decode()
    assert reverse("committee:emergency-detail", args=[emergency.pk]) in html
    assert client.get(reverse("reports:buffer-funds")).url == reverse("reports:buffer-fund", args=["2026-Q4"])
    client.logout()
    assert client.get(reverse("reports:buffer-fund", args=["2026-Q4"])).status_code == 302  # to the sign-in


def test_a_malformed_quarter_is_not_found(world, client):
    client.force_login(world.chair)
    for quarter in ("2026-Q5", "2026Q4", "now", "0000-Q1", "0001-Q1", "0002-Q4", "9998-Q1", "9999-Q4",
                    "2026-Q4%0A", "%EF%BC%92%EF%BC%90%EF%BC%92%EF%BC%96-Q4", "2026-Q4%00"):  # newline, full-width, NUL
        assert client.get(f"/archive/buffer/{quarter}/").status_code == 404, quarter
        response = client.post(f"/archive/buffer/{quarter}/open/", {})
        assert response.status_code == 404, quarter
    assert not BufferFund.objects.exists()
    # The first and last years a quarter may be written in answer pages (with nothing open).
    for quarter in ("0003-Q1", "9997-Q4"):
        assert client.get(f"/archive/buffer/{quarter}/").status_code == 200


def test_funds_are_opened_only_for_quarters_near_the_running_one(world, client):
    """The clock says 2026-Q4: a year back (2025-Q4) to two years ahead (2028-Q4)."""
    client.force_login(world.finance)
    for quarter in ("0003-Q1", "2025-Q3", "2029-Q1", "9997-Q4"):
        response = client.post(f"/archive/buffer/{quarter}/open/", {})
        assert response.status_code == 400
        assert b"Funds are opened for 2025-Q4 to 2028-Q4: a year back and two years ahead of 2026-Q4." in (
            response.content)
    assert not BufferFund.objects.exists()
    for quarter in ("2025-Q4", "2028-Q4"):
        assert client.post(f"/archive/buffer/{quarter}/open/", {}).status_code == 302
    assert sorted(BufferFund.objects.values_list("quarter", flat=True)) == ["2025-Q4", "2028-Q4"]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_one_quarter_opened_from_two_sessions_at_once_is_one_fund_and_one_conflict(world):
    """Both pass the "already open?" check; the unique quarter keeps one, the other is told it is open."""
    require(on_postgresql(), "PostgreSQL (run with DATABASE_URL=postgres://…)")
    results: list[str] = []
    window = RaceWindow(parties=2)

    def after_the_check(sender: Any, **kwargs: Any) -> None:
        window.hold()  # both have seen no fund; now both insert

    def open_fund(actor: Any) -> None:
        try:
            services.buffer_fund_open(actor=actor, quarter="2026-Q4", now=timezone.now())
            results.append("opened")
        except StateConflict as exc:
            results.append(" ".join(exc.messages))
        finally:
            connection.close()

    pre_save.connect(after_the_check, sender=BufferFund, dispatch_uid="test.after_the_check")
    try:
        threads = [threading.Thread(target=open_fund, args=(who,)) for who in (world.chair, world.finance)]
        for thread in threads:
            thread.start()
        window.open_when_all_arrived(threads)
        for thread in threads:
            thread.join(timeout=30)
    finally:
        pre_save.disconnect(dispatch_uid="test.after_the_check", sender=BufferFund)
    assert sorted(results) == ["The fund of 2026-Q4 is already open.", "opened"]
    assert BufferFund.objects.count() == 1


def test_finance_records_a_spend_through_the_form(world, client, clock):
    fund = _fund(world)
    emergency = placed_emergency(world, clock)
    client.force_login(world.finance)
    page = client.get(reverse("reports:buffer-fund", args=["2026-Q4"])).content.decode()
    assert 'id="spend-form"' in page and "Fraud hotfix" in page
    url = reverse("reports:buffer-spend-create", args=["2026-Q4"])
    response = client.post(url, {"amount": "2500.00", "item": "Cloud A100s", "spent_at": "2026-12-01T15:00",
                                 "reason": "The attack.", "emergency": str(emergency.pk)})
    assert response.status_code == 302
    spend = BufferSpend.objects.get()
    assert (spend.fund, spend.amount, spend.emergency, spend.emergency_title, spend.recorded_by_name) == (
        fund, Decimal("2500.00"), emergency, "Fraud hotfix", "Finance")


def test_a_spend_over_the_balance_through_the_form_shows_the_error_and_stores_nothing(world, client):
    _fund(world)
    client.force_login(world.chair)
    url = reverse("reports:buffer-spend-create", args=["2026-Q4"])
    response = client.post(url, {"amount": "10000.01", "item": "Too much", "spent_at": "2026-12-01T15:00",
                                 "reason": "Greedy."})
    assert response.status_code == 400
    assert "10000.01 USD is more than the fund&#x27;s balance of 10000.00 USD." in response.content.decode()
    bad = client.post(url, {"amount": "1e3", "item": "x", "spent_at": "yesterday", "reason": "x"})
    assert bad.status_code == 400 and "Enter a valid date/time." in bad.content.decode()
    assert not BufferSpend.objects.exists()


def test_a_reviewer_cannot_post_to_the_ledger(world, client):
    _fund(world)
    client.force_login(world.reviewer)
    for name, data in (("reports:buffer-spend-create", {"amount": "1.00", "item": "x", "spent_at": "2026-12-01T15:00",
                                                        "reason": "x"}),
                       ("reports:deferred-purchase-create", {"amount": "1.00", "item": "x",
                                                             "deferred_at": "2026-12-01T15:00", "reason": "x"}),
                       ("reports:buffer-fund-open", {})):
        assert client.post(reverse(name, args=["2026-Q4"]), data).status_code == 403
    assert not BufferSpend.objects.exists() and not DeferredPurchase.objects.exists()


def test_the_chair_opens_a_quarter_and_records_a_deferred_purchase(world, client):
    budgets_set(world, research="300000.00", product="180000.00")
    client.force_login(world.chair)
    page = client.get(reverse("reports:buffer-fund", args=["2026-Q4"])).content.decode()
    assert "No buffer fund is open for 2026-Q4." in page and 'id="open-form"' in page
    assert 'name="budget"' not in page and 'name="buffer_pct"' not in page  # the buffer is not typed
    # A budget or percentage posted anyway is not the fund's: ignored.
    assert client.post(reverse("reports:buffer-fund-open", args=["2026-Q4"]),
                       {"budget": "1.00", "buffer_pct": "50"}).status_code == 302
    assert client.post(reverse("reports:deferred-purchase-create", args=["2026-Q4"]),
                       {"amount": "96000.00", "item": "Second H100 node", "deferred_at": "2026-11-20T10:00",
                        "reason": "Utilization does not justify it yet."}).status_code == 302
    html = client.get(reverse("reports:buffer-fund", args=["2026-Q4"])).content.decode()
    assert "Second H100 node" in html and "96,000.00 USD" in html
    assert_readable(html)
    # The buffer: 5% of 480,000.00, line by department, with where it comes from.
    assert "24,000.00 USD" in html and "5% of the departments' budgets, 480,000.00 USD" in html
    lines = html.split('id="buffer-lines"')[1].split("</table>")[0]
    assert "Research" in lines and "15,000.00 USD" in lines and "Product" in lines and "9,000.00 USD" in lines
    assert reverse("committee:budgets") + "?quarter=2026-Q4" in html and reverse("policy:board") in html
    client.force_login(world.member_b)  # the budgets are the committee's page: not linked for a team member
    html = client.get(reverse("reports:buffer-fund", args=["2026-Q4"])).content.decode()
    assert "15,000.00 USD" in html and reverse("committee:budgets") not in html


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_spends_at_once_cannot_overdraw_the_fund(world):
    require(on_postgresql(), "PostgreSQL (run with DATABASE_URL=postgres://…)")
    fund = _fund(world)  # a buffer of 10,000.00
    start = threading.Barrier(2)
    results: list[str] = []
    window = RaceWindow(parties=2)

    def slow_insert(sender: Any, **kwargs: Any) -> None:
        window.hold()  # after the balance check, before the insert: without the lock both would pass the check

    def spend(actor: Any) -> None:
        try:
            start.wait()
            _spend(world, fund, "6000.00", actor=actor)
            results.append("recorded")
        except ValidationError as exc:
            results.append(" ".join(exc.messages))
        finally:
            connection.close()

    pre_save.connect(slow_insert, sender=BufferSpend, dispatch_uid="test.slow_insert")
    try:
        threads = [threading.Thread(target=spend, args=(who,)) for who in (world.chair, world.finance)]
        for thread in threads:
            thread.start()
        waited = window.open_when_all_arrived(threads)
        for thread in threads:
            thread.join(timeout=30)
    finally:
        pre_save.disconnect(dispatch_uid="test.slow_insert", sender=BufferSpend)
    assert sorted(results) == ["6000.00 USD is more than the fund's balance of 4000.00 USD.", "recorded"]
    assert selectors.fund_state(fund).spent == Decimal("6000.00")
    assert waited == 1  # the second spend waited on the fund's lock
