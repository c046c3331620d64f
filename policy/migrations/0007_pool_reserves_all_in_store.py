"""Every pool's burst reserve and cold standby in the one store before the pools' own fields go (allocations 0014).

Policy 0003 carried the reserves of the pools that existed then; a pool added since (its reserves set in the admin
when it was added) may have no value in the store: its fields go into version 1, since always (the pool did not exist
before). A pool the store already names keeps the store's values, which every reader of a week already read.
"""

from __future__ import annotations

from django.db import migrations

FIELDS = ("burst_reserve_pct", "standby_pct")


def forward(apps, schema_editor):  # type: ignore[no-untyped-def]
    PolicyChange = apps.get_model("governed", "PolicyChange")
    PolicyValue = apps.get_model("governed", "PolicyValue")
    version_1 = PolicyChange.objects.filter(number=1).first()
    if version_1 is None:
        return
    known = set(PolicyValue.objects.filter(key__startswith="pool.").values_list("key", flat=True))
    clusters = dict(apps.get_model("allocations", "Cluster").objects.values_list("id", "slug"))
    rows = []
    for pool in apps.get_model("allocations", "GpuPool").objects.all():
        for field in FIELDS:
            key = f"pool.{clusters[pool.cluster_id]}/{pool.slug}.{field}"
            if key not in known:
                rows.append(PolicyValue(change=version_1, key=key, value=str(int(getattr(pool, field)))))
    PolicyValue.objects.bulk_create(rows)


class Migration(migrations.Migration):
    dependencies = [
        ("policy", "0006_proposal_applied_note_text"),
        ("allocations", "0013_remove_elasticpolicyversion"),
    ]

    operations = [migrations.RunPython(forward, migrations.RunPython.noop)]
