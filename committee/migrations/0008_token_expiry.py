"""Personal tokens expire: existing ones DOCKET_TOKEN_MAX_AGE_DAYS after they were made, at the earliest a week from now."""

from datetime import timedelta

from django.conf import settings
from django.db import migrations, models
from django.db.models import F, Value
from django.db.models.functions import Greatest
from django.utils import timezone


def existing_tokens_expire(apps, schema_editor):
    PersonalToken = apps.get_model("committee", "PersonalToken")
    # A token past its age when this runs still gets a week, so no script stops without warning on upgrade.
    PersonalToken.objects.update(expires_at=Greatest(
        F("created_at") + timedelta(days=settings.DOCKET_TOKEN_MAX_AGE_DAYS), Value(timezone.now() + timedelta(days=7))
    ))
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")  # before the ALTER TABLE below


class Migration(migrations.Migration):

    dependencies = [
        ("committee", "0007_alternative_emergency"),
    ]

    operations = [
        migrations.AddField(
            model_name="personaltoken",
            name="expires_at",
            field=models.DateTimeField(null=True, verbose_name="expires"),
        ),
        migrations.RunPython(existing_tokens_expire, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="personaltoken",
            name="expires_at",
            field=models.DateTimeField(verbose_name="expires"),
        ),
    ]
