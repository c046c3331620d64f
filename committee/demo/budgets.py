"""The demo's org chart and budgets: three departments over the six teams, each with a budget for the quarter, one of
them near its limit (docs/chargeback.md)."""

from __future__ import annotations

from datetime import datetime
from decimal import ROUND_CEILING, Decimal

from django.contrib.auth import get_user_model

from allocations.models import Department, Team
from committee.quarters import quarter_of
from committee.selectors.budgets import department_budgets
from committee.services.budgets import department_budget_set
from governed.models import PolicyValue

DEPARTMENTS = [
    # slug, name, fair-share weight, teams, budget as a multiple of what its windows charge this quarter (0: 20,000)
    ("consumer", "Consumer Products", 3, ("search", "ads"), Decimal("1.08")),  # near its limit: about 93 % used
    ("perception", "Perception", 2, ("vision", "speech"), Decimal(3)),
    ("labs", "Labs", 1, ("recommendations", "research"), Decimal(4)),
]
CARRY_OVER_PCT = 10


def seed_departments_and_budgets(*, now: datetime) -> None:
    """Put the teams into their departments and, as the finance member, set each department's budget for the quarter
    (versioned in the one store). Idempotent: a department or a budget already there is left as it is."""
    for slug, name, weight, team_slugs, _multiple in DEPARTMENTS:
        department, _created = Department.objects.get_or_create(
            slug=slug, defaults={"name": name, "fair_share_weight": weight})
        for team in Team.objects.filter(slug__in=team_slugs, department__isnull=True):
            team.department = department
            team._change_reason = "The demo's org chart."  # type: ignore[attr-defined]
            team.save(update_fields=["department"])
    finance = get_user_model().objects.get(username="finance")
    quarter = quarter_of(now)
    spent = {b.slug: b.spent for b in department_budgets(quarter=quarter)}
    for slug, _name, _weight, _teams, multiple in DEPARTMENTS:
        if PolicyValue.objects.filter(key=f"budget.{slug}.quarterly").exists():
            continue
        amount = (spent.get(slug, Decimal(0)) * multiple / 100).to_integral_value(ROUND_CEILING) * 100 \
            or Decimal(20000)
        department_budget_set(
            actor=finance, department=Department.objects.get(slug=slug), quarter=quarter, quarterly=amount,
            carry_over_pct=CARRY_OVER_PCT, reason="The demo's budget for the quarter.", now=now)
