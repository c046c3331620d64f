"""The elastic policy's spans in minutes (issue 33): every stored value of `elastic.idle_span_hours` and
`elastic.recent_span_hours` becomes `elastic.idle_span_minutes` / `elastic.recent_span_minutes`, the same span in
minutes (4 hours → 240), in every change of the store and every proposal of the policy lab; so each week reads the
policy it read before. The committee's minute figures (5 and 10 minutes) are adopted as a change of the rules, never
by a migration. The explanations kept with recorded actions stay as they were written.
"""

from __future__ import annotations

from django.db import migrations

RENAMED = {"elastic.idle_span_hours": "elastic.idle_span_minutes",
           "elastic.recent_span_hours": "elastic.recent_span_minutes"}


def _minutes(value: str) -> str:
    try:
        return str(int(value.strip()) * 60)
    except ValueError:
        return value  # not a number (never stored by the forms): kept for a person to read


def _hours(value: str) -> str:
    """Back to whole hours, rounded up: 5 minutes becomes 1 hour, the shortest span the hourly policy had."""
    try:
        return str(max(1, -(-int(value.strip()) // 60)))
    except ValueError:
        return value


def _rename(apps, renamed: dict[str, str], convert, unit: str) -> None:  # type: ignore[no-untyped-def]
    PolicyValue = apps.get_model("governed", "PolicyValue")
    for row in PolicyValue.objects.filter(key__in=renamed):
        row.key, row.value = renamed[row.key], convert(row.value)
        row.save(update_fields=["key", "value"])
    ProposalChange = apps.get_model("policy", "ProposalChange")
    for change in ProposalChange.objects.filter(key__in=renamed):
        change.key, change.unit = renamed[change.key], unit if change.unit else change.unit
        change.old_value, change.new_value = convert(change.old_value), convert(change.new_value)
        change.save(update_fields=["key", "unit", "old_value", "new_value"])


def forward(apps, schema_editor):  # type: ignore[no-untyped-def]
    _rename(apps, RENAMED, _minutes, "minutes")


def backward(apps, schema_editor):  # type: ignore[no-untyped-def]
    _rename(apps, {new: old for old, new in RENAMED.items()}, _hours, "hours")
    apps.get_model("governed", "PolicyValue").objects.filter(key="elastic.standby_wake_minutes").delete()
    apps.get_model("policy", "ProposalChange").objects.filter(key="elastic.standby_wake_minutes").delete()


class Migration(migrations.Migration):
    dependencies = [("policy", "0007_pool_reserves_all_in_store"), ("governed", "0002_policyvalue_text")]

    operations = [migrations.RunPython(forward, backward)]
