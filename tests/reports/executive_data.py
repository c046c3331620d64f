"""Data for the buffer fund and executive summary tests: departments' budgets (the fund's buffer lines), a running
week, published through the real review, and an emergency placed beside it (as tests/committee/test_emergency.py
builds them)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal
from typing import Any

from allocations.models import Department
from committee import services
from committee.models import EmergencyRequest, ReviewCycle
from committee.services.emergency import emergency_request_decide, emergency_request_file
from tests.clock import FIXED_NOW
from tests.committee.reviewing import close, decide, score
from tests.conftest import committed
from tests.factories import file_request

WEEK = "2026-W49"  # the week FIXED_NOW falls in


def budgets_set(world: Any, **amounts: str) -> None:
    """Departments' budgets for 2026-Q4 (and after), set by finance (the department is made if new); by default
    120,000.00 for Research and 80,000.00 for Product, whose buffer lines at the policy's 5 % make a buffer fund of
    10,000.00."""
    for slug, amount in (amounts or {"research": "120000.00", "product": "80000.00"}).items():
        department, _new = Department.objects.get_or_create(slug=slug, defaults={"name": slug.title(),
                                                                                 "fair_share_weight": 1})
        services.department_budget_set(actor=world.finance, department=department, quarter="2026-Q4",
                                       quarterly=Decimal(amount), carry_over_pct=0, reason="FY plan.", now=FIXED_NOW)


def running_week(world: Any, clock: Any) -> ReviewCycle:
    """Week 2026-W49 published a week before FIXED_NOW with one 40-GPU a100 grant; the clock is back at FIXED_NOW."""
    clock.move_to(FIXED_NOW - timedelta(days=7), tick=False)
    next_week = world.cycle
    world.cycle = cycle = services.cycle_create(week=WEEK)
    cycle.intake_closes_at = FIXED_NOW - timedelta(days=5)
    cycle.review_at = FIXED_NOW - timedelta(days=5)
    cycle.save()
    start = cycle.starts_at
    big = file_request(world, team=world.team_b, title="Search index", gpu_count=40, min_gpu_count=40,
                       duration_hours=100, earliest_start=start + timedelta(hours=8),
                       latest_end=start + timedelta(hours=167))
    close(world)
    for member in (world.chair, world.reviewer, world.finance):
        score(member, big, 9, 8, 9)
    decide(world, big)
    committed(services.cycle_finalize, cycle=cycle, actor=world.chair)
    committed(services.cycle_publish, actor=world.chair, cycle=cycle)
    clock.move_to(FIXED_NOW, tick=False)
    world.cycle = next_week
    return ReviewCycle.objects.get(week=WEEK)


def placed_emergency(world: Any, clock: Any, *, title: str = "Fraud hotfix") -> EmergencyRequest:
    """An emergency filed and placed at FIXED_NOW in the running week (built here first)."""
    if not ReviewCycle.objects.filter(week=WEEK).exists():
        running_week(world, clock)
    emergency = emergency_request_file(
        actor=world.lead_a, team=world.team_a, pool=world.a100, title=title, gpu_count=4, min_gpu_count=2,
        duration_hours=6, justification="A live attack.", now=FIXED_NOW,
    )
    for member in (world.reviewer, world.chair):
        emergency_request_decide(actor=member, emergency=emergency, approve=True, note="Yes.", now=FIXED_NOW)
    return EmergencyRequest.objects.get(pk=emergency.pk)
