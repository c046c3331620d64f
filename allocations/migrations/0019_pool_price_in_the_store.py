"""A pool's price per GPU-hour is only in the one store (governed), by week: the field goes, after policy 0009 carried
each pool's price into the store. Backwards, the field comes back with the price the store holds last."""

from django.db import migrations


def field_back(apps, schema_editor):  # type: ignore[no-untyped-def]
    clusters = dict(apps.get_model("allocations", "Cluster").objects.values_list("id", "slug"))
    rows = apps.get_model("governed", "PolicyValue").objects.filter(key__endswith=".price_per_gpu_hour").order_by(
        "change__effective_monday", "change__number").values_list("key", "value")
    last = dict(rows)
    for pool in apps.get_model("allocations", "GpuPool").objects.all():
        pool.cost_per_gpu_hour = last.get(f"pool.{clusters[pool.cluster_id]}/{pool.slug}.price_per_gpu_hour", "0")
        pool.save(update_fields=["cost_per_gpu_hour"])


class Migration(migrations.Migration):

    dependencies = [
        ('allocations', '0018_agent_action_standby_and_night_kinds'),
        ('policy', '0009_pool_prices_into_store'),
    ]

    operations = [
        migrations.RunPython(migrations.RunPython.noop, field_back),
        migrations.RemoveConstraint(
            model_name='gpupool',
            name='gpupool_cost_not_negative',
        ),
        migrations.RemoveField(
            model_name='gpupool',
            name='cost_per_gpu_hour',
        ),
        migrations.RemoveField(
            model_name='historicalgpupool',
            name='cost_per_gpu_hour',
        ),
    ]
