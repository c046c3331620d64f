"""What the dashboards and the monthly review show: each pool's price per GPU-hour and the usage the schedulers
reported in the months before Docket."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

from allocations.models import (
    GpuPool,
    Team,
    UsageRecord,
)
from committee import weeks
from committee.demo.dice import dice
from committee.demo.history import HISTORY, HISTORY_WEEKS
from governed.models import ChangeSource, PolicyValue
from governed.params import POOL_PREFIX, PRICE
from governed.services import policy_change_record

POOL_COSTS = {"a100": Decimal("2.40"), "h100": Decimal("4.10")}  # per GPU-hour: charges, statements, dashboards
# Before Docket allocated them, the schedulers reported usage for months (the monthly review's baseline).
# Ads trained on H100 then; it moved to A100 with Docket. Queues were shorter.
BEFORE_DOCKET_WEEKS = range(HISTORY_WEEKS + 1, HISTORY_WEEKS + 17)
BEFORE_DOCKET_ADS = ("ads", 16, 96, 0.50)


def seed_dashboard_history(*, pools: dict[str, GpuPool], now: datetime) -> None:
    """What the dashboards and the monthly review show: a price per GPU-hour on each pool (governed, from the first
    week of usage on), the review cycles of the four history weeks (their requests and decisions, some asking for more
    than the pool had), and daily usage of the sixteen weeks before them. The history weeks' cycles are
    `_seed_history_week`'s. Idempotent: each week is seeded once, the prices once."""
    today = now.astimezone(weeks.committee_zone()).date()
    prices = {f"{POOL_PREFIX}{pools[slug].key}.{PRICE}": cost for slug, cost in POOL_COSTS.items()}
    if not PolicyValue.objects.filter(key__in=prices).exists():
        policy_change_record(
            actor=None, changes=prices, source=ChangeSource.COMMAND, source_ref="seed_demo",
            effective_week=weeks.week_label(today - timedelta(weeks=max(BEFORE_DOCKET_WEEKS))),
            reason="The pools' prices per GPU-hour, as finance set them when the pools were bought.",
            exempt_reason="A new pool's first price: no number in force changes.")
    teams = {team.slug: team for team in Team.objects.all()}
    for back in BEFORE_DOCKET_WEEKS:
        week = weeks.week_label(today - timedelta(weeks=back))
        if not UsageRecord.objects.filter(idempotency_key__startswith=f"demo-before:{week}:").exists():
            _seed_usage_before_docket(week=week, pools=pools, teams=teams)


def _seed_usage_before_docket(*, week: str, pools: dict[str, GpuPool], teams: dict[str, Team]) -> None:
    start, _end = weeks.week_bounds(week)
    rows = [(pool, *spec) for pool, specs in HISTORY.items() for spec in specs if (pool, spec[0]) != ("a100", "ads")]
    rows.append(("h100", *BEFORE_DOCKET_ADS))
    records = []
    for day_index in range(7):
        day = start + timedelta(days=day_index)
        until = day + timedelta(days=1)
        for pool_slug, team_slug, gpus, hours, share in rows:
            wobble = Decimal(dice(week, team_slug, pool_slug, day_index) % 7 - 3) / 100
            used = (Decimal(gpus * hours) / 7 * (Decimal(share) + wobble)).quantize(Decimal("0.01"))
            records.append(UsageRecord(
                pool=pools[pool_slug], team=teams[team_slug], period_start=day, period_end=until,
                gpu_hours_used=max(Decimal(0), used),
                mean_utilization_pct=min(Decimal(100), (Decimal(share) * 100 + wobble * 50).quantize(Decimal("0.1"))),
                mean_queue_wait_minutes=Decimal(6 + dice(team_slug, pool_slug, day) % 8),
                idempotency_key=f"demo-before:{week}:{team_slug}:{pool_slug}:{day_index}",
                reported_by="demo-sync",
            ))
    UsageRecord.objects.bulk_create(records)
