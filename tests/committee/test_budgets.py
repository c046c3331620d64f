"""Departments' budgets: finance sets one (versioned, in the one store), the review shows what a grant would charge
and flags one that would exceed what is left; charges by tier and the carry-over, to the cent."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from django.conf import settings
from django.core.exceptions import PermissionDenied, ValidationError
from django.urls import reverse

from allocations.models import Department
from committee import selectors, services
from committee.models import Decision, Notification
from committee.selectors.budgets import quarter_first_week, window_charge
from committee.services.notifications import notification_text
from governed.models import ChangeSource, PolicyChange, PolicyValue
from governed.selectors import policy_value
from governed.services import policy_change_record
from tests.allocations.plans import W, publish
from tests.clock import FIXED_NOW
from tests.committee.reviewing import close, decide, score
from tests.committee.test_chat_webhook import webhook  # noqa: F401 (the chat's webhook, a real HTTP server)
from tests.factories import file_request
from tests.governed.version_one import pool_prices_set
from tests.readable import assert_readable

pytestmark = pytest.mark.django_db

URL = reverse("committee:budgets")


@pytest.fixture
def research(world: Any) -> Department:
    department = Department.objects.create(name="Research", slug="research", fair_share_weight=2)
    world.team_a.department = department
    world.team_a.save()
    pool_prices_set({world.a100: "2.50", world.h100: "4.1234"})
    return department


def _set(world: Any, research: Department, quarterly: str, *, quarter: str = "2026-Q4", carry: int = 0) -> Any:
    return services.department_budget_set(actor=world.finance, department=research, quarter=quarter,
                                          quarterly=Decimal(quarterly), carry_over_pct=carry, reason="FY plan.",
                                          now=FIXED_NOW)


def test_window_charges_by_tier_to_the_cent():
    hours = Decimal(8 * 24)
    assert window_charge(gpu_hours=hours, price_per_gpu_hour=Decimal("4.1234"), tier="priority",
                         discount_pct=50) == Decimal("791.69")  # 792.6848... rounds half up to the cent
    assert window_charge(gpu_hours=hours, price_per_gpu_hour=Decimal("4.1234"), tier="standard",
                         discount_pct=50) == Decimal("791.69")
    assert window_charge(gpu_hours=hours, price_per_gpu_hour=Decimal("4.1234"), tier="preemptible",
                         discount_pct=50) == Decimal("395.85")


def test_finance_sets_a_budget_on_the_page_and_the_committee_reads_it(client, world, research):
    client.force_login(world.finance)
    response = client.post(URL, {"department": research.pk, "quarter": "2026-q4", "quarterly": "10000.00",
                                 "carry_over_pct": "10", "reason": "The FY27 plan."})
    assert response.status_code == 302
    assert policy_value(key="budget.research.quarterly", week="2026-W53") == 10000
    change = PolicyChange.objects.latest("number")
    assert change.source == "budgets" and change.author == world.finance and change.exempt_reason
    # Finance set it in 2026-W49, the quarter under way: the weeks before keep having none.
    assert change.effective_week == "2026-W49"
    client.force_login(world.reviewer)
    page = client.get(URL).content.decode()
    assert_readable(page)
    assert "Research" in page and "USD 10,000.00" in page and "carries over up to 10%" in page
    assert "Set a department" not in page  # only finance sets budgets
    # Kept in the policy history with the reason.
    (entry,) = [c for c in selectors.policy_history() if c.kind_code == "budget"]
    assert entry.reason == "The FY27 plan." and {f.field for f in entry.changes} == {
        "budget.research.quarterly", "budget.research.carry_over_pct"}


@pytest.mark.parametrize(("who", "status"), [("chair", 403), ("member_a", 403)])
def test_only_finance_sets_a_budget_and_only_the_committee_reads_them(client, world, research, who, status):
    client.force_login(getattr(world, who))
    response = client.post(URL, {"department": research.pk, "quarter": "2026-Q4", "quarterly": "5",
                                 "carry_over_pct": "0", "reason": "Mine."})
    assert response.status_code == status
    assert not PolicyValue.objects.filter(key__startswith="budget.").exists()
    with pytest.raises(PermissionDenied):
        services.department_budget_set(actor=world.chair, department=research, quarter="2026-Q4",
                                       quarterly=Decimal(5), carry_over_pct=0, reason="Mine.")
    if who == "member_a":
        assert client.get(URL).status_code == 403


@pytest.mark.parametrize(("field", "value", "message"), [
    ("quarterly", "-1", "Write the number in digits"),
    ("quarterly", "12.345", "Write the number in digits"),
    ("quarterly", "lots", "Write the number in digits"),
    ("carry_over_pct", "101", "less than or equal to 100"),
    ("quarter", "2026-Q5", "YYYY-Qn"),
    ("quarter", "2026-Q3", "2026-Q3 is over"),
    ("reason", "  ", "required"),
])
def test_a_bad_budget_is_refused_with_a_clear_error_and_changes_nothing(client, world, research, field, value,
                                                                         message):
    client.force_login(world.finance)
    data = {"department": research.pk, "quarter": "2026-Q4", "quarterly": "100", "carry_over_pct": "0",
            "reason": "Plan.", field: value}
    response = client.post(URL, data)
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not PolicyValue.objects.filter(key__startswith="budget.").exists()


def test_the_same_budget_again_is_refused_as_nothing_changed(world, research):
    _set(world, research, "100")
    with pytest.raises(ValidationError, match="Nothing changed"):
        _set(world, research, "100")


def test_a_budget_for_next_quarter_starts_on_its_first_monday_and_leaves_this_quarter_alone(world, research):
    # 1 January 2027 is in 2026-W53, the last week of 2026-Q4: 2027-Q1's budget starts in 2027-W01.
    assert quarter_first_week("2027-Q1") == "2027-W01"
    _set(world, research, "100")
    _set(world, research, "900", quarter="2027-Q1")
    assert [b.quarterly for b in selectors.department_budgets(quarter="2026-Q4")] == [Decimal(100)]
    assert [b.quarterly for b in selectors.department_budgets(quarter="2027-Q1")] == [Decimal(900)]


def test_spend_carry_over_and_alerts_reconcile_with_the_windows(world, research):
    # 2026-Q4: budget 1,000.00, 20 % may carry over. Team A's windows this week (2026-W49): a standard window
    # 8 GPUs × 24 h on a100 at 2.50 = 480.00, a preemptible one 4 × 10 h on h100 at 4.1234, half off = 82.47;
    # team B (no department) is charged to nobody.
    _set(world, research, "1000", carry=20)
    publish([W(world.a100, world.team_a, 8, 0, 24, ref=1), W(world.h100, world.team_a, 4, 0, 10, ref=2,
                                                               tier="preemptible"),
             W(world.a100, world.team_b, 8, 24, 48, ref=3)])
    (q4,) = selectors.department_budgets(quarter="2026-Q4")
    assert (q4.spent, q4.left, q4.used_pct, q4.alert_pct) == (
        Decimal("562.47"), Decimal("437.53"), Decimal("56.2"), None)
    # 2027-Q1 gets what was left, up to 20 % of 1,000.00: 200.00 on top of its own 900.00.
    services.department_budget_set(actor=world.finance, department=research, quarter="2027-Q1",
                                   quarterly=Decimal(900), carry_over_pct=0, reason="Plan.", now=FIXED_NOW)
    (q1,) = selectors.department_budgets(quarter="2027-Q1")
    assert (q1.quarterly, q1.carried_over, q1.available, q1.spent) == (
        Decimal(900), Decimal("200.00"), Decimal("1100.00"), Decimal(0))
    # A second standard week of 8 × 24 on a100 brings Q4 to 1,042.47: over budget, and less left to carry.
    publish([W(world.a100, world.team_a, 8, 0, 24, ref=4)], week="2026-W50")
    (q4,) = selectors.department_budgets(quarter="2026-Q4")
    assert (q4.spent, q4.alert_pct) == (Decimal("1042.47"), 100)
    (q1,) = selectors.department_budgets(quarter="2027-Q1")
    assert q1.carried_over == Decimal(0)


def test_the_review_shows_what_a_grant_would_charge_and_flags_one_over_budget(client, world, research):
    _set(world, research, "2500")
    publish([W(world.a100, world.team_a, 8, 0, 24, ref=1)])  # 480.00 spent: 2,020.00 left
    within = file_request(world, title="Small tune", pool=world.h100, gpu_count=4, min_gpu_count=2,
                          duration_hours=24)  # 96 GPU-hours × 4.1234 = 395.8464: 395.85
    bigger = file_request(world, title="Bigger retrain", gpu_count=16, duration_hours=60)  # 960 × 2.50 = 2,400.00
    untracked = file_request(world, team=world.team_b, title="Team B has no department")
    close(world)
    client.force_login(world.reviewer)
    page = client.get(reverse("committee:review-cycle", args=[world.cycle.week])).content.decode()
    assert_readable(page)

    def card(gpu_request: Any) -> str:
        start = page.index(f'id="request-{gpu_request.pk}"')
        return page[start:page.index("</article>", start)]

    assert "Granting it charges USD 395.85 to Research, which has USD 2,020.00 left of USD 2,500.00 in 2026-Q4." \
        in card(within)
    assert "over budget" not in card(within)
    assert "over budget" in card(bigger) and "Granting it charges USD 2,400.00 to Research" in card(bigger)
    assert "It would exceed the budget by USD 380.00: the committee may still grant it." in card(bigger)
    assert "Granting it charges" not in card(untracked)


def _refuse_over_budget(week: str = "2026-W49") -> None:
    policy_change_record(actor=None, changes={"charges.refuse_over_budget": True}, effective_week=week,
                         reason="Finance asks the committee to stay within budgets.", source=ChangeSource.LAB)


def test_a_grant_over_budget_is_only_flagged_until_the_policy_refuses_it(client, world, research):
    # 2,500.00 for 2026-Q4, 480.00 spent: 2,020.00 left. A grant of 4 GPUs × 60 h on h100 charges 989.62
    # (240 × 4.1234 = 989.616), one of 8 × 60 on a100 1,200.00: together over by 169.62.
    _set(world, research, "2500")
    publish([W(world.a100, world.team_a, 8, 0, 24, ref=1)])
    first = file_request(world, title="First retrain", pool=world.h100, gpu_count=4, min_gpu_count=2,
                         duration_hours=60)
    second = file_request(world, title="Second retrain", gpu_count=8, min_gpu_count=2, duration_hours=60)
    close(world)
    decide(world, first, exception="The launch is Thursday.")
    # By default the policy flags: the committee may grant over the budget.
    decide(world, second, exception="The launch is Thursday.")
    assert list(Decision.objects.order_by("granted_gpu_count").values_list("granted_gpu_count", flat=True)) == [4, 8]
    Decision.objects.filter(request=second).delete()

    _refuse_over_budget()
    before = list(Decision.objects.values_list("request_id", "outcome", "granted_gpu_count"))
    with pytest.raises(ValidationError) as refused:
        decide(world, second, exception="The launch is Thursday.")
    assert refused.value.message_dict["outcome"] == [
        "The policy refuses a grant over budget: granting 8 GPUs charges USD 1,200.00 to Research, which has "
        "USD 1,030.38 left in 2026-Q4 once this week's other grants are counted (over by USD 169.62). Grant fewer "
        "GPUs, defer or reject; nothing was recorded."]
    assert list(Decision.objects.values_list("request_id", "outcome", "granted_gpu_count")) == before
    # 7 GPUs × 60 h = 1,050.00: still over. 6 × 60 = 900.00 fits, and so does deferring.
    with pytest.raises(ValidationError):
        decide(world, second, "partial", granted_gpu_count=7, exception="The launch is Thursday.")
    assert not Decision.objects.filter(request=second).exists()
    decide(world, second, "partial", granted_gpu_count=6, exception="The launch is Thursday.")
    decide(world, second, "defer")
    assert Decision.objects.get(request=second).granted_gpu_count is None
    # With 1,500.00 for the quarter (1,020.00 left), the review's card says the policy refuses the 1,200.00 grant.
    _set(world, research, "1500")
    client.force_login(world.reviewer)
    page = client.get(reverse("committee:review-cycle", args=[world.cycle.week])).content.decode()
    card = page[page.index(f'id="request-{second.pk}"'):]
    card = card[:card.index("</article>")]
    assert "It would exceed the budget by USD 180.00: the policy refuses such a grant." in card


def test_the_committee_hears_once_when_a_department_reaches_80_and_100_percent(
    world, research, webhook, django_capture_on_commit_callbacks,  # noqa: F811 (the fixture imported above)
):
    # 1,000.00 for 2026-Q4; the week's plan grants Research's team 8 GPUs × 60 h on a100 (2.50): 1,200.00 would be
    # over; 6 × 60 = 900.00 is 90 %. Published through the committee's own action, the tasks run through the outbox.
    _set(world, research, "1000")
    request = file_request(world, title="Ranker retrain", gpu_count=8, min_gpu_count=2, duration_hours=60)
    close(world)
    for member in (world.chair, world.reviewer, world.finance):
        score(member, request, 9, 8, 9)
    decide(world, request, "partial", granted_gpu_count=6)
    cycle = services.cycle_finalize(cycle=world.cycle, actor=world.chair)
    with django_capture_on_commit_callbacks(execute=True):
        services.cycle_publish(actor=world.chair, cycle=cycle)

    said = "Research has used 90.0% of its 2026-Q4 budget (USD 900.00 of USD 1,000.00)."
    assert [t for t in webhook.texts if "budget" in t] == [f"{said} {settings.SITE_URL}/budgets/?quarter=2026-Q4"]
    committee = set(selectors.committee_member_ids())
    alerts = Notification.objects.filter(kind="budget_alert").all
    assert {(n.recipient_id, n.key) for n in alerts()} == {(pk, "budget:research:2026-Q4:80") for pk in committee}
    assert {notification_text(n) for n in alerts()} == {said}
    assert not Notification.objects.filter(kind="budget_alert", recipient=world.member_a).exists()

    # Finance lowers the budget to 950.00 (94.7 %): the 80 % alert was given this quarter; nothing new.
    with django_capture_on_commit_callbacks(execute=True):
        _set(world, research, "950")
    assert alerts().count() == len(committee) and len([t for t in webhook.texts if "budget" in t]) == 1
    # To 850.00: over budget (105.9 %), told once; lowering it again tells nobody again.
    for amount in ("850", "800"):
        with django_capture_on_commit_callbacks(execute=True):
            _set(world, research, amount)
    over = "Research has used 105.9% of its 2026-Q4 budget (USD 900.00 of USD 850.00): over budget."
    assert [t for t in webhook.texts if "budget" in t][1:] == [f"{over} {settings.SITE_URL}/budgets/?quarter=2026-Q4"]
    assert {notification_text(n) for n in alerts().filter(key="budget:research:2026-Q4:100")} == {over}
    assert alerts().count() == 2 * len(committee)


def test_the_capacity_buffer_is_its_own_line_which_emergencies_draw_on(client, world, research):
    # 2026-Q4: budget 10,000.00; budget.buffer_pct keeps 5 % of it, 500.00, as the buffer line. A weekly window of
    # 8 A100 × 24 h at 2.50 = 480.00 is the plans' line; an emergency's window of 4 A100 × 30 h = 300.00 the buffer's.
    from committee.models import EmergencyRequest, EmergencyStatus

    _set(world, research, "10000")
    emergency = file_request(world, title="The outage")
    plan = publish([W(world.a100, world.team_a, 8, 0, 24, ref=emergency.pk + 100),
                    W(world.a100, world.team_a, 4, 24, 54, ref=emergency.pk)])
    EmergencyRequest.objects.create(request=emergency, justification="The outage.", filed_by_name="Alex Lead",
                                    status=EmergencyStatus.PLACED, plan=plan, placed_at=FIXED_NOW)
    (q4,) = selectors.department_budgets(quarter="2026-Q4")
    assert (q4.buffer_pct, q4.buffer, q4.buffer_drawn, q4.buffer_left) == (
        5, Decimal("500.00"), Decimal("300.00"), Decimal("200.00"))
    assert (q4.planned, q4.planned_spent, q4.planned_left) == (Decimal("9500.00"), Decimal("480.00"),
                                                               Decimal("9020.00"))
    assert (q4.spent, q4.left) == (Decimal("780.00"), Decimal("9220.00"))  # the budget's total is unchanged
    client.force_login(world.reviewer)
    page = client.get(URL).content.decode()
    assert_readable(page)
    line = page.split('id="buffer-research"')[1].split("</tr>")[0]
    assert "of which the capacity buffer (5%)" in line and "USD 500.00" in line and "USD 300.00" in line
    assert "USD 200.00" in line and "60.0" in line  # drawn 300 of 500

    # The share is governed: 8 % from the quarter's weeks on (the quarter's last week's value holds for the quarter).
    policy_change_record(actor=None, changes={"budget.buffer_pct": "8"}, effective_week="2026-W50",
                         reason="A bigger buffer for the winter.", source=ChangeSource.LAB)
    (q4,) = selectors.department_budgets(quarter="2026-Q4")
    assert (q4.buffer, q4.buffer_left) == (Decimal("800.00"), Decimal("500.00"))
    with pytest.raises(ValidationError):
        policy_change_record(actor=None, changes={"budget.buffer_pct": "101"}, effective_week="2026-W51",
                             reason="Too much.", source=ChangeSource.LAB)
    assert selectors.budget_buffer_pct(quarter="2026-Q4") == 8
