"""Reading the governed parameters: the value of a key in a week, every value in force in a week, the changes."""

from __future__ import annotations

from datetime import date
from typing import NamedTuple

from django.db.models import F, Q

from core.isoweek import parse_iso_week
from governed.models import PolicyChange, PolicyValue
from governed.params import Value, defaults, param_for, value_parse


def _in_force(monday: date) -> Q:
    return Q(change__effective_monday__isnull=True) | Q(change__effective_monday__lte=monday)


def policy_value_typed(*, key: str, raw: str) -> Value:
    """A stored value (text) of `key` as its declared type."""
    found = param_for(key)
    return value_parse(found[0].kind if found else "decimal", raw)


def _typed(key: str, raw: str) -> Value:
    return policy_value_typed(key=key, raw=raw)


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


def policy_values_versioned(*, week: str, prefix: str) -> tuple[dict[str, Value], int]:
    """The values starting with `prefix` in force in `week` (as `policy_values`), and the version (the number of
    the change) that last set one of them by then: 1 where only version 1, or no row, does. One query."""
    declared = {key: value for key, value in defaults().items() if key.startswith(prefix)}
    rows = list(
        PolicyValue.objects.filter(_in_force(parse_iso_week(week)))
        .filter(key__startswith=prefix)
        .order_by(F("change__effective_monday").asc(nulls_first=True), "change__number")
        .values_list("key", "value", "change__number")
    )
    return {**declared, **{key: _typed(key, raw) for key, raw, _n in rows}}, (rows[-1][2] if rows else 1)


def policy_version_next() -> int:
    """The number the next change will have (what a form says saving creates). One query."""
    last = PolicyChange.objects.order_by("-number").values_list("number", flat=True).first()
    return (last or 1) + 1


def policy_week_change(*, week: str) -> PolicyChange | None:
    """The substantive change that takes effect in `week`, if any. One query."""
    return PolicyChange.objects.filter(effective_monday=parse_iso_week(week), exempt_reason="").first()


def policy_changes(*, prefix: str = "") -> list[PolicyChange]:
    """Every change that sets a key starting with `prefix`, oldest first, with its values. Two queries."""
    changes = PolicyChange.objects.order_by("number").prefetch_related("values")
    if prefix:
        changes = changes.filter(values__key__startswith=prefix).distinct()
    return list(changes)


class Setting(NamedTuple):
    """A value in force, with the number of the change that set it and that change's place in the order of effect
    (by effective week, then number): the latest of several keys' settings is the one with the highest `order`."""

    value: Value
    number: int
    order: int


def policy_settings_for_weeks(*, weeks: list[str], keys: tuple[str, ...]) -> dict[str, dict[str, Setting]]:
    """The settings of `keys` in force in each of `weeks`, by week then key (a key no row sets is left out). One
    query, whatever the number of weeks: the replay reads each replayed week's rules and rubric with it."""
    rows = list(
        PolicyValue.objects.filter(key__in=keys)
        .order_by(F("change__effective_monday").asc(nulls_first=True), "change__number")
        .values_list("change__effective_monday", "change__number", "key", "value")
    )
    out: dict[str, dict[str, Setting]] = {}
    for week in weeks:
        monday = parse_iso_week(week)
        settings: dict[str, Setting] = {}
        for order, (effective, number, key, raw) in enumerate(rows):
            if effective is None or effective <= monday:
                settings[key] = Setting(_typed(key, raw), number, order)
        out[week] = settings
    return out


def policy_values_for_weeks(*, weeks: list[str], keys: tuple[str, ...]) -> dict[str, dict[str, Value]]:
    """The values of `keys` in force in each of `weeks`, by week then key (a key no row sets is left out). One query,
    whatever the number of weeks."""
    return {week: {key: setting.value for key, setting in settings.items()}
            for week, settings in policy_settings_for_weeks(weeks=weeks, keys=keys).items()}
