"""The elastic policy's versions go: the one store (governed) holds its thresholds by week since policy 0003, and each
action names the store's version since policy 0005.

Backwards, version 1 comes back from the store's version 1 and every action names it.
"""

import django.db.models.deletion
from django.db import migrations, models

PARAMETERS = (
    "idle_threshold_pct", "idle_span_hours", "offer_idle_to_preemptible", "promote_utilization_pct",
    "promote_queue_wait_minutes", "recent_span_hours", "night_start", "night_end", "night_utilization_pct",
)


def version_1_back(apps, schema_editor):  # type: ignore[no-untyped-def]
    first = dict(apps.get_model("governed", "PolicyValue").objects.filter(
        change__number=1, key__startswith="elastic.").values_list("key", "value"))
    values = {}
    for name in PARAMETERS:
        raw = first.get(f"elastic.{name}")
        if raw is None:
            continue  # the model's default
        values[name] = raw == "true" if raw in ("true", "false") else raw if ":" in raw else int(raw)
    version = apps.get_model("allocations", "ElasticPolicyVersion").objects.create(
        number=1, reason="The seed's elastic pool.", author_name="Docket", **values)
    apps.get_model("allocations", "ElasticAction").objects.update(policy=version)


class Migration(migrations.Migration):

    dependencies = [
        ('allocations', '0012_elasticaction_policy_version'),
        ('policy', '0005_elastic_actions_name_the_store'),
    ]

    operations = [
        migrations.AlterField(
            model_name='elasticaction',
            name='policy_version',
            field=models.PositiveIntegerField(default=1, verbose_name='policy version'),
            preserve_default=False,
        ),
        migrations.AlterField(
            model_name='elasticaction',
            name='policy',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='actions',
                                    to='allocations.elasticpolicyversion', verbose_name='policy version'),
        ),
        migrations.RunPython(migrations.RunPython.noop, version_1_back),
        migrations.RemoveField(
            model_name='elasticaction',
            name='policy',
        ),
        migrations.DeleteModel(
            name='ElasticPolicyVersion',
        ),
    ]
