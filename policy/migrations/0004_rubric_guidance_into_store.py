"""The rubric's guidance into the one store (governed), as its weights went in 0003: `rubric_guidance.<criterion>`.

Each week reads the guidance of the rubric version its cycle pinned, as before: version 1 holds the first cycle's (or,
without cycles, the latest version's); a later cycle whose version's guidance differs sets it from its week, and a
later version no cycle pinned yet from the week after the last cycle. A week that has a change already gets the
guidance in it; any other week gets a change of its own, exempt from one change a week (a guidance changes no
number). The old rows stay as they were until committee's migration removes them.
"""

from __future__ import annotations

from datetime import date, timedelta

from django.db import migrations

CRITERIA = ("business_impact", "feasibility", "urgency", "fairness")
PREFIX = "rubric_guidance."
EXEMPT = "Carried over into the one store: a change of the rubric's guidance alone changes no number."


def label(monday: date) -> str:
    year, number, _day = monday.isocalendar()
    return f"{year}-W{number:02d}"


def parse(week: str) -> date:
    year, number = week.split("-W")
    return date.fromisocalendar(int(year), int(number), 1)


def forward(apps, schema_editor):  # type: ignore[no-untyped-def]
    PolicyChange = apps.get_model("governed", "PolicyChange")
    PolicyValue = apps.get_model("governed", "PolicyValue")
    version_1 = PolicyChange.objects.filter(number=1).first()
    if version_1 is None or PolicyValue.objects.filter(key__startswith=PREFIX).exists():
        return
    RubricVersion = apps.get_model("committee", "RubricVersion")
    versions = {v.pk: v for v in RubricVersion.objects.all()}
    if not versions:
        return  # the store's declared default (governed.params) is the charter's guidance

    def guidance(version: object | None) -> dict[str, str]:
        return {c: getattr(version, f"{c}_guidance") for c in CRITERIA} if version is not None else {}

    cycles = list(apps.get_model("committee", "ReviewCycle").objects.order_by("starts_at"))
    latest = max(versions.values(), key=lambda v: v.number)
    first = versions.get(cycles[0].rubric_id) if cycles else latest
    later: dict[date, tuple[object, dict[str, str]]] = {}
    previous = first
    for cycle in cycles[1:]:
        version = versions.get(cycle.rubric_id)
        if version is not None and guidance(version) != guidance(previous):
            later[parse(cycle.week)] = (version, guidance(previous))
            previous = version
    if cycles and guidance(latest) != guidance(previous):
        later[parse(cycles[-1].week) + timedelta(weeks=1)] = (latest, guidance(previous))

    PolicyValue.objects.bulk_create(
        PolicyValue(change=version_1, key=PREFIX + c, value=g) for c, g in guidance(first).items())
    number = PolicyChange.objects.order_by("-number").values_list("number", flat=True).first() or 1
    for monday, (version, before) in sorted(later.items()):
        change = PolicyChange.objects.filter(effective_monday=monday).order_by("-number").first()
        if change is None:
            number += 1
            change = PolicyChange.objects.create(
                number=number, effective_week=label(monday), effective_monday=monday, source="migration",
                reason=(f"Carried over: rubric version {version.number} ({version.author_name}): "
                        f"{version.reason}")[:5000],
                exempt_reason=EXEMPT, author_name="Docket",
            )
        PolicyValue.objects.bulk_create(
            PolicyValue(change=change, key=PREFIX + c, value=g) for c, g in guidance(version).items()
            if before.get(c) != g)


def backward(apps, schema_editor):  # type: ignore[no-untyped-def]
    PolicyChange = apps.get_model("governed", "PolicyChange")
    apps.get_model("governed", "PolicyValue").objects.filter(key__startswith=PREFIX).delete()
    PolicyChange.objects.filter(source="migration", exempt_reason=EXEMPT, values__isnull=True).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("policy", "0003_policy_values_from_versions"),
        ("governed", "0002_policyvalue_text"),
        ("committee", "0019_delete_governanceversion"),
    ]

    operations = [migrations.RunPython(forward, backward)]
