"""An elastic action names the version of the rules (the one store's change number) it started under; policy 0005
fills it for the actions recorded before, allocations 0013 then removes ElasticPolicyVersion."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('allocations', '0011_allocationplan_note_text'),
    ]

    operations = [
        migrations.AddField(
            model_name='elasticaction',
            name='policy_version',
            field=models.PositiveIntegerField(null=True, verbose_name='policy version'),
        ),
    ]
