"""The data migration carries each pool's price per GPU-hour (its old field) into the one store: every week reads the
price it read before, and the field goes."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from allocations.selectors import pool_prices
from governed.models import PolicyValue
from tests.conftest import World

BEFORE = [("allocations", "0018_agent_action_standby_and_night_kinds"), ("policy", "0008_elastic_spans_in_minutes")]


@pytest.mark.django_db(transaction=True)
def test_each_pools_price_goes_into_version_1_and_reads_the_same_in_every_week(world: World) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    old.get_model("allocations", "GpuPool").objects.filter(pk=world.a100.pk).update(cost_per_gpu_hour=Decimal("2.4567"))
    PolicyValue.objects.filter(key__endswith=".price_per_gpu_hour").delete()
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
    stored = dict(PolicyValue.objects.filter(key__endswith=".price_per_gpu_hour").values_list("key", "change__number"))
    assert stored == {"pool.atlas/a100.price_per_gpu_hour": 1, "pool.orion/h100.price_per_gpu_hour": 1}
    prices = pool_prices(keys=[(world.a100.pk, "2020-W01"), (world.a100.pk, "2026-W49"), (world.h100.pk, "2026-W49")])
    assert prices == {(world.a100.pk, "2020-W01"): Decimal("2.4567"), (world.a100.pk, "2026-W49"): Decimal("2.4567"),
                      (world.h100.pk, "2026-W49"): Decimal(0)}
