"""Reading the governed parameters: the value of a key in a week, every value in force in a week, the changes."""

from __future__ import annotations

from datetime import date

from django.db.models import F, Q

from core.isoweek import parse_iso_week
from governed.models import PolicyChange, PolicyValue
from governed.params import Value, defaults, param_for, value_parse


def _in_force(monday: date) -> Q:
    return Q(change__effective_monday__isnull=True) | Q(change__effective_monday__lte=monday)


def _typed(key: str, raw: str) -> Value:
    found = param_for(key)
    return value_parse(found[0].kind if found else "decimal", raw)


def policy_value(*, key: str, week: str, default: Value | None = None) -> Value | None:
    """The value of `key` in force in `week` (YYYY-Www): that of the latest change effective by then.

    A change effective from a later week does not reach the weeks before it. Without any row for the key, `default`,
    else the declaration's default (governed.params), else None. One query.
    """
    row = (
        PolicyValue.objects.filter(key=key).filter(_in_force(parse_iso_week(week)))
        .order_by(F("change__effective_monday").desc(nulls_last=True), "-change__number")
        .values_list("value", flat=True).first()
    )
    if row is not None:
        return _typed(key, row)
    if default is not None:
        return default
    declared = defaults()
    if key in declared:
        return declared[key]
    found = param_for(key)
    return found[0].default() if found and found[0].default else None


def policy_values(*, week: str, prefix: str = "") -> dict[str, Value]:
    """Every value in force in `week`, by key (those starting with `prefix` only, when given): the latest change's
    effective by then, else the declared default (governed.params.defaults). One query."""
    declared = {key: value for key, value in defaults().items() if key.startswith(prefix)}
    rows = (
        PolicyValue.objects.filter(_in_force(parse_iso_week(week)))
        .filter(key__startswith=prefix)
        .order_by(F("change__effective_monday").asc(nulls_first=True), "change__number")
        .values_list("key", "value")
    )
    return {**declared, **{key: _typed(key, raw) for key, raw in rows}}


def policy_week_change(*, week: str) -> PolicyChange | None:
    """The substantive change that takes effect in `week`, if any. One query."""
    return PolicyChange.objects.filter(effective_monday=parse_iso_week(week), exempt_reason="").first()


def policy_changes(*, prefix: str = "") -> list[PolicyChange]:
    """Every change that sets a key starting with `prefix`, oldest first, with its values. Two queries."""
    changes = PolicyChange.objects.order_by("number").prefetch_related("values")
    if prefix:
        changes = changes.filter(values__key__startswith=prefix).distinct()
    return list(changes)


def policy_values_for_weeks(*, weeks: list[str], keys: tuple[str, ...]) -> dict[str, dict[str, Value]]:
    """The values of `keys` in force in each of `weeks`, by week then key (a key no row sets is left out). One query,
    whatever the number of weeks: the replay reads each replayed week's rules with it."""
    rows = list(
        PolicyValue.objects.filter(key__in=keys)
        .order_by(F("change__effective_monday").asc(nulls_first=True), "change__number")
        .values_list("change__effective_monday", "key", "value")
    )
    out: dict[str, dict[str, Value]] = {}
    for week in weeks:
        monday = parse_iso_week(week)
        values: dict[str, Value] = {}
        for effective, key, raw in rows:
            if effective is None or effective <= monday:
                values[key] = _typed(key, raw)
        out[week] = values
    return out
