"""The rubric's versions and each cycle's pin go: the one store (governed) holds the rubric's weights and guidance by
week since policy 0003 (weights) and 0004 (guidance), which read them from here first.

Backwards, version 1 comes back from the store's version 1 (the charter's where it has none) and every cycle pins it.
"""

import django.db.models.deletion
from django.db import migrations, models

CRITERIA = ("business_impact", "feasibility", "urgency", "fairness")
CHARTER = {"business_impact": 40, "feasibility": 30, "urgency": 20, "fairness": 10}


def version_1_back(apps, schema_editor):  # type: ignore[no-untyped-def]
    PolicyValue = apps.get_model("governed", "PolicyValue")
    first = dict(PolicyValue.objects.filter(change__number=1, key__startswith="rubric").values_list("key", "value"))
    version = apps.get_model("committee", "RubricVersion").objects.create(
        number=1, reason="The committee's charter.", author_name="Docket",
        **{f"{c}_weight_pct": int(first.get(f"rubric.{c}", CHARTER[c])) for c in CRITERIA},
        **{f"{c}_guidance": first.get(f"rubric_guidance.{c}", "—") for c in CRITERIA},
    )
    apps.get_model("committee", "ReviewCycle").objects.update(rubric=version)


class Migration(migrations.Migration):

    dependencies = [
        ('committee', '0019_delete_governanceversion'),
        ('policy', '0004_rubric_guidance_into_store'),
    ]

    operations = [
        migrations.AlterField(
            model_name='reviewcycle',
            name='rubric',
            field=models.ForeignKey(null=True, on_delete=django.db.models.deletion.PROTECT, related_name='cycles',
                                    to='committee.rubricversion', verbose_name='rubric version'),
        ),
        migrations.RunPython(migrations.RunPython.noop, version_1_back),
        migrations.RemoveField(
            model_name='reviewcycle',
            name='rubric',
        ),
        migrations.DeleteModel(
            name='RubricVersion',
        ),
    ]
