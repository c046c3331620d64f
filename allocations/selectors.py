"""Reads of the allocations app, already scoped to who asks."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from django.db.models import Sum

from allocations.models import UsageRecord


def usage_gpu_hours_by_team(*, since: datetime, until: datetime) -> dict[int, Decimal]:
    """GPU-hours used per team id by usage records whose period starts in [since, until)."""
    rows = (
        UsageRecord.objects.filter(period_start__gte=since, period_start__lt=until)
        .values("team_id")
        .annotate(total=Sum("gpu_hours_used"))
    )
    return {row["team_id"]: row["total"] for row in rows}
