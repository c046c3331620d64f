"""Every pool's price per GPU-hour into the one store before the pool's own field goes (allocations 0018).

The price was `GpuPool.cost_per_gpu_hour`, edited in the admin; it becomes the governed value
`pool.<cluster>/<slug>.price_per_gpu_hour`, versioned with effective weeks. Each pool's current price goes into
version 1, since always: every week reads what it read before (the field held one price for all weeks). A pool the
store already names keeps the store's value.
"""

from __future__ import annotations

from decimal import Decimal

from django.db import migrations


def _text(value: Decimal) -> str:
    value = Decimal(value).normalize()
    return str(int(value)) if value == value.to_integral_value() else format(value, "f")


def forward(apps, schema_editor):  # type: ignore[no-untyped-def]
    PolicyChange = apps.get_model("governed", "PolicyChange")
    PolicyValue = apps.get_model("governed", "PolicyValue")
    pools = list(apps.get_model("allocations", "GpuPool").objects.all())
    if not pools:
        return
    version_1, _created = PolicyChange.objects.get_or_create(number=1, defaults={
        "source": "migration", "reason": "Version 1: the settings and the declared defaults.",
        "exempt_reason": "Version 1.", "author_name": "Docket"})
    known = set(PolicyValue.objects.filter(key__endswith=".price_per_gpu_hour").values_list("key", flat=True))
    clusters = dict(apps.get_model("allocations", "Cluster").objects.values_list("id", "slug"))
    PolicyValue.objects.bulk_create(
        PolicyValue(change=version_1, key=key, value=_text(pool.cost_per_gpu_hour))
        for pool in pools
        if (key := f"pool.{clusters[pool.cluster_id]}/{pool.slug}.price_per_gpu_hour") not in known
    )


class Migration(migrations.Migration):
    dependencies = [
        ("policy", "0008_elastic_spans_in_minutes"),
        ("allocations", "0017_commitments"),
        ("governed", "0003_budgets_page_source"),
    ]

    operations = [migrations.RunPython(forward, migrations.RunPython.noop)]
