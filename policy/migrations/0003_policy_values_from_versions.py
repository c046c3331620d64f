"""Version 1 and the history of every governed parameter, as rows of the one store (governed).

Read from the settings and the old mechanisms, so that each week reads the same values as before:
- the score quorum and fair share: the settings (version 1), then each committee.GovernanceVersion from its week;
- the rubric: the version each cycle pinned, from the cycle's week (the weeks in order; a new row where the weights
  change), and a later version no cycle pinned yet from the week after the last cycle, which would have pinned it;
- a pool's reserves: its first history row (version 1), then the last row of each week it changed in;
- the elastic thresholds: the first version (version 1), then the last version of each week a version was saved in;
- an adopted proposal not yet applied: its changes, from its effective week.
Each later week becomes one change. A week with an adopted proposal is that week's substantive change; any other
is recorded as exempt, with the reason that it was made before the one store. The old rows stay as they were.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date, datetime, timedelta
from decimal import Decimal
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db import migrations

CRITERIA = ("business_impact", "feasibility", "urgency", "fairness")
DEFAULT_WEIGHTS = {"business_impact": 40, "feasibility": 30, "urgency": 20, "fairness": 10}
ELASTIC_FIELDS = (
    "idle_threshold_pct", "idle_span_hours", "offer_idle_to_preemptible", "promote_utilization_pct",
    "promote_queue_wait_minutes", "recent_span_hours", "night_start", "night_end", "night_utilization_pct",
)
ELASTIC_DEFAULTS = {
    "idle_threshold_pct": "25", "idle_span_hours": "4", "offer_idle_to_preemptible": "true",
    "promote_utilization_pct": "80", "promote_queue_wait_minutes": "30", "recent_span_hours": "1",
    "night_start": "22:00", "night_end": "06:00", "night_utilization_pct": "30",
}
EXEMPT = "Carried over into the one store: made before the one-change-a-week rule covered this path."


def text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if hasattr(value, "strftime"):
        return value.strftime("%H:%M")  # type: ignore[union-attr]
    if isinstance(value, float | Decimal):
        number = Decimal(str(value)).normalize()
        return str(int(number)) if number == number.to_integral_value() else format(number, "f")
    return str(int(value))  # type: ignore[call-overload]


def monday_of(day: date) -> date:
    return day - timedelta(days=day.weekday())


def label(monday: date) -> str:
    year, number, _day = monday.isocalendar()
    return f"{year}-W{number:02d}"


def parse(week: str) -> date:
    year, number = week.split("-W")
    return date.fromisocalendar(int(year), int(number), 1)


def forward(apps, schema_editor):  # type: ignore[no-untyped-def]
    PolicyChange = apps.get_model("governed", "PolicyChange")
    PolicyValue = apps.get_model("governed", "PolicyValue")
    if PolicyChange.objects.exists():
        return
    zone = ZoneInfo(settings.TIME_ZONE)

    def week_of(moment: datetime) -> date:
        return monday_of(moment.astimezone(zone).date())

    first: dict[str, str] = {}
    later: dict[date, dict[str, str]] = defaultdict(dict)
    notes: dict[date, list[str]] = defaultdict(list)

    # The quorum and fair share.
    first["review.quorum"] = text(settings.DOCKET_SCORE_QUORUM)
    first["fairshare.half_life_weeks"] = text(settings.DOCKET_FAIRSHARE_HALF_LIFE_WEEKS)
    first["fairshare.trailing_weeks"] = text(settings.DOCKET_FAIRSHARE_TRAILING_WEEKS)
    for version in apps.get_model("committee", "GovernanceVersion").objects.order_by("effective_monday"):
        monday = version.effective_monday
        later[monday].update({
            "review.quorum": text(version.score_quorum),
            "fairshare.half_life_weeks": text(version.fairshare_half_life_weeks),
            "fairshare.trailing_weeks": text(version.fairshare_trailing_weeks),
        })
        notes[monday].append(f"review and fair share version {version.number} ({version.author_name}): "
                             f"{version.reason}")

    # The rubric: by the cycles that pinned it.
    RubricVersion = apps.get_model("committee", "RubricVersion")
    versions = {v.pk: v for v in RubricVersion.objects.all()}

    def weights(version: object | None) -> dict[str, str]:
        if version is None:
            return {c: text(w) for c, w in DEFAULT_WEIGHTS.items()}
        return {c: text(getattr(version, f"{c}_weight_pct")) for c in CRITERIA}

    cycles = list(apps.get_model("committee", "ReviewCycle").objects.order_by("starts_at"))
    previous: object | None = None
    for n, cycle in enumerate(cycles):
        version = versions.get(cycle.rubric_id)
        if n == 0:
            first.update({f"rubric.{c}": w for c, w in weights(version).items()})
        elif weights(version) != weights(previous):
            monday = parse(cycle.week)
            later[monday].update({f"rubric.{c}": w for c, w in weights(version).items()})
            notes[monday].append(f"rubric version {version.number} ({version.author_name}): {version.reason}")
        previous = version
    latest = max(versions.values(), key=lambda v: v.number, default=None)
    if not cycles:
        first.update({f"rubric.{c}": w for c, w in weights(latest).items()})
    elif latest is not None and weights(latest) != weights(previous):
        monday = parse(cycles[-1].week) + timedelta(weeks=1)
        later[monday].update({f"rubric.{c}": w for c, w in weights(latest).items()})
        notes[monday].append(f"rubric version {latest.number} ({latest.author_name}): {latest.reason}")

    # Each pool's reserves, by its history.
    clusters = dict(apps.get_model("allocations", "Cluster").objects.values_list("id", "slug"))
    history = defaultdict(list)
    for row in apps.get_model("allocations", "HistoricalGpuPool").objects.order_by("history_date", "history_id"):
        history[row.id].append(row)
    for pool in apps.get_model("allocations", "GpuPool").objects.all():
        rows = [r for r in history.get(pool.pk, []) if r.history_type != "-"] or [pool]
        key = f"pool.{clusters[pool.cluster_id]}/{pool.slug}"
        state = {f"{key}.burst_reserve_pct": text(rows[0].burst_reserve_pct),
                 f"{key}.standby_pct": text(rows[0].standby_pct)}
        first.update(state)
        for row in rows[1:]:
            values = {f"{key}.burst_reserve_pct": text(row.burst_reserve_pct),
                      f"{key}.standby_pct": text(row.standby_pct)}
            if values != state:
                monday = week_of(row.history_date)
                later[monday].update(values)
                notes[monday].append(f"pool {key.removeprefix('pool.')} ({getattr(row, 'history_change_reason', '')})")
                state = values

    # The elastic thresholds.
    elastic = list(apps.get_model("allocations", "ElasticPolicyVersion").objects.order_by("number"))
    first.update({f"elastic.{k}": v for k, v in ELASTIC_DEFAULTS.items()})
    for n, version in enumerate(elastic):
        values = {f"elastic.{name}": text(getattr(version, name)) for name in ELASTIC_FIELDS}
        if n == 0:
            first.update(values)
            continue
        monday = week_of(version.created_at)
        later[monday].update(values)
        notes[monday].append(f"elastic policy version {version.number} ({version.author_name}): {version.reason}")

    # Adopted proposals: their week is a substantive change; those not yet applied bring their values.
    adopted = {}
    pool_keys = {}
    for pool in apps.get_model("allocations", "GpuPool").objects.all():
        pool_keys.setdefault(pool.slug, []).append(f"{clusters[pool.cluster_id]}/{pool.slug}")
        pool_keys[f"{clusters[pool.cluster_id]}/{pool.slug}"] = [f"{clusters[pool.cluster_id]}/{pool.slug}"]
    Proposal = apps.get_model("policy", "Proposal")
    for proposal in Proposal.objects.filter(status="adopted").order_by("effective_monday"):
        monday = proposal.effective_monday
        adopted[monday] = proposal
        if proposal.applied_at is not None:
            continue
        for change in apps.get_model("policy", "ProposalChange").objects.filter(proposal=proposal):
            key = change.key
            if key.startswith("pool."):
                slug, _dot, field = key.removeprefix("pool.").rpartition(".")
                matches = pool_keys.get(slug, [])
                if len(matches) != 1:
                    continue
                key = f"pool.{matches[0]}.{field}"
            elif key.startswith("rubric.") and proposal.rubric_applied_at is not None:
                continue
            elif key in ("review.quorum", "fairshare.half_life_weeks", "fairshare.trailing_weeks"):
                continue  # written at adoption as a governance version, read above
            later[monday][key] = change.new_value
        notes[monday].append(f"policy proposal #{proposal.pk} “{proposal.title}”")

    change = PolicyChange.objects.create(
        number=1, effective_week="", effective_monday=None, source="migration",
        reason="Version 1: the settings and the first versions of the rubric, the pools and the elastic policy.",
        exempt_reason="Version 1.", author_name="Docket",
    )
    PolicyValue.objects.bulk_create(PolicyValue(change=change, key=k, value=v) for k, v in sorted(first.items()))
    for number, monday in enumerate(sorted(set(later) | set(adopted)), start=2):
        proposal = adopted.get(monday)
        change = PolicyChange.objects.create(
            number=number, effective_week=label(monday), effective_monday=monday, source="migration",
            source_ref=f"proposal:{proposal.pk}" if proposal else "",
            reason=("Carried over: " + "; ".join(notes[monday]))[:5000],
            exempt_reason="" if proposal else EXEMPT, author_name=proposal.decided_by_name if proposal else "Docket",
        )
        PolicyValue.objects.bulk_create(
            PolicyValue(change=change, key=k, value=v) for k, v in sorted(later.get(monday, {}).items()))


def backward(apps, schema_editor):  # type: ignore[no-untyped-def]
    apps.get_model("governed", "PolicyValue").objects.all().delete()
    apps.get_model("governed", "PolicyChange").objects.all().delete()


class Migration(migrations.Migration):
    dependencies = [
        ("policy", "0002_proposal_rubric_applied_at"),
        ("governed", "0001_initial"),
        ("committee", "0017_decision_exception_and_corrected_alternative"),
        ("allocations", "0010_pool_queue_wait_target"),
    ]

    operations = [migrations.RunPython(forward, backward)]
