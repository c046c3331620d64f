"""Each elastic action recorded before the one store names the store's version of the elastic thresholds in force in
the week it started (policy 0003 carried the elastic policy's versions into the store by the week each was saved in).
The explanation each action keeps stays as it was written."""

from __future__ import annotations

from datetime import timedelta
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import migrations


def forward(apps, schema_editor):  # type: ignore[no-untyped-def]
    rows = list(
        apps.get_model("governed", "PolicyValue").objects.filter(key__startswith="elastic.")
        .order_by("change__effective_monday", "change__number")
        .values_list("change__effective_monday", "change__number")
    )
    # Version 1 (no week) first: nulls sort first on SQLite and last on PostgreSQL.
    rows = [r for r in rows if r[0] is None] + [r for r in rows if r[0] is not None]
    zone = ZoneInfo(settings.TIME_ZONE)
    ElasticAction = apps.get_model("allocations", "ElasticAction")
    for action in ElasticAction.objects.filter(policy_version__isnull=True):
        day = action.started_at.astimezone(zone).date()
        monday = day - timedelta(days=day.weekday())
        number = 1
        for effective, change in rows:
            if effective is None or effective <= monday:
                number = change
        action.policy_version = number
        action.save(update_fields=["policy_version"])


class Migration(migrations.Migration):
    dependencies = [
        ("policy", "0004_rubric_guidance_into_store"),
        ("allocations", "0012_elasticaction_policy_version"),
    ]

    operations = [migrations.RunPython(forward, migrations.RunPython.noop)]
