"""The demo's buffer fund and service levels, added when `seed_demo` sends `committee.signals.demo_seeded`.

The running quarter's fund (its buffer: the demo departments' buffer lines, 5% of each budget by the policy), one
spend answering the demo's emergency (at most two fifths of the buffer), one deferred purchase, and a queue-wait
target on each demo pool (a100's is tight, so the monthly review flags it). Idempotent: a second seed adds nothing.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.contrib.auth import get_user_model

from allocations.models import GpuPool
from committee.models import EmergencyRequest
from reports.executive import quarters, selectors, services
from reports.models import BufferFund

DEMO_SPEND = Decimal("6400.00")
# Minutes; the demo's schedulers report waits of 5 to 34 minutes, so a100's target is missed and h100's met.
DEMO_QUEUE_WAIT_TARGETS = {"a100": 15, "h100": 45}


def seed_buffer_fund(*, now: datetime) -> None:
    for pool in GpuPool.objects.filter(slug__in=DEMO_QUEUE_WAIT_TARGETS, queue_wait_target_minutes__isnull=True):
        pool.queue_wait_target_minutes = DEMO_QUEUE_WAIT_TARGETS[pool.slug]
        pool._change_reason = "Demo: the committee's queue-wait service level"  # type: ignore[attr-defined]
        pool.save()
    quarter = quarters.quarter_of(now)
    if BufferFund.objects.filter(quarter=quarter).exists():
        return
    chair = get_user_model().objects.get(username="chair")
    fund = services.buffer_fund_open(actor=chair, quarter=quarter, now=now)
    # The departments' budgets (committee.demo.budgets) decide the buffer: the spend leaves most of it.
    amount = min(DEMO_SPEND, (selectors.fund_state(fund).buffer * 2 / 5).quantize(Decimal("0.01")))
    start, _end = quarters.quarter_bounds(quarter)
    emergency = EmergencyRequest.objects.select_related("request").order_by("-filed_at").first()
    spent_at = max(start, emergency.filed_at if emergency is not None else now - timedelta(days=3))
    if amount > 0:
        services.buffer_spend_record(
            actor=chair, fund=fund, amount=amount, spent_at=min(spent_at, now), now=now,
            item="Burst cloud capacity: A100s for 48 hours",
            reason="The emergency needed more than the pool's burst reserve and standby could give.",
            emergency=emergency,
        )
    services.purchase_deferred_record(
        actor=chair, fund=fund, amount=Decimal("96000.00"), item="Second H100 node (8 GPUs)",
        deferred_at=max(start, now - timedelta(days=10)), now=now,
        reason="Utilization of orion/h100 does not yet justify it; reconsider at the next quarter.",
    )


def on_demo_seeded(sender: Any, *, now: datetime, **kwargs: Any) -> None:
    seed_buffer_fund(now=now)
