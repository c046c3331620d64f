"""A pool's burst reserve and cold standby are only in the one store (governed), by week: the fields go, after policy
0007 made sure the store names every pool. Backwards, the fields come back with the values the store holds last."""

from django.db import migrations


def fields_back(apps, schema_editor):  # type: ignore[no-untyped-def]
    clusters = dict(apps.get_model("allocations", "Cluster").objects.values_list("id", "slug"))
    rows = apps.get_model("governed", "PolicyValue").objects.filter(key__startswith="pool.").order_by(
        "change__effective_monday", "change__number").values_list("key", "value")
    last = dict(rows)
    for pool in apps.get_model("allocations", "GpuPool").objects.all():
        key = f"pool.{clusters[pool.cluster_id]}/{pool.slug}"
        pool.burst_reserve_pct = int(last.get(f"{key}.burst_reserve_pct", 20))
        pool.standby_pct = int(last.get(f"{key}.standby_pct", 10))
        pool.save(update_fields=["burst_reserve_pct", "standby_pct"])



class Migration(migrations.Migration):

    dependencies = [
        ('allocations', '0013_remove_elasticpolicyversion'),
        ('policy', '0007_pool_reserves_all_in_store'),
    ]

    operations = [
        migrations.RunPython(migrations.RunPython.noop, fields_back),
        migrations.RemoveConstraint(
            model_name='gpupool',
            name='gpupool_reserves_below_100_pct',
        ),
        migrations.RemoveField(
            model_name='gpupool',
            name='burst_reserve_pct',
        ),
        migrations.RemoveField(
            model_name='gpupool',
            name='standby_pct',
        ),
        migrations.RemoveField(
            model_name='historicalgpupool',
            name='burst_reserve_pct',
        ),
        migrations.RemoveField(
            model_name='historicalgpupool',
            name='standby_pct',
        ),
    ]
