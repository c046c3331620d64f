"""The one way to change a governed parameter: `policy_change_record`.

Every path goes through it: the policy lab's adoption, the rubric page, the elastic policy page, the admin and any
management command. It enforces at most one substantive change per ISO week (the store's unique constraint holds
it when two writers race), or records why a change is exempt; after commit it sends `governed.signals.
policy_changed`, on which the archive writes the change's page.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from core.audit import person_name
from core.datetimes import format_isoweek
from core.errors import StateConflict
from core.isoweek import parse_iso_week
from core.locks import write_transaction
from governed import params, selectors, signals
from governed.models import ChangeSource, PolicyChange, PolicyValue

WEEKS_AHEAD_MAX = 104


def week_next_free(*, week: str) -> str:
    """The first week from `week` on that has no substantive change. One query."""
    monday = parse_iso_week(week)
    taken = set(PolicyChange.objects.filter(effective_monday__gte=monday, exempt_reason="")
                .values_list("effective_monday", flat=True))
    for _step in range(WEEKS_AHEAD_MAX):
        if monday not in taken:
            break
        monday += timedelta(weeks=1)
    return format_isoweek(monday)


def week_taken_message(*, week: str, change: PolicyChange | None) -> str:
    what = change.reason.splitlines()[0][:120] if change is not None else "?"
    return _("Week %(week)s already has an adopted change (“%(title)s”): at most one change takes effect per week. "
             "The next free week is %(free)s.") % {"week": week, "title": what, "free": week_next_free(week=week)}


def policy_version_1() -> PolicyChange:
    """Version 1, the change with no week (written with its values by policy's migration 0003). Where a database lost
    it (a flushed test database), written again without values: the declared defaults (governed.params) are then
    version 1's, as the selectors read them."""
    change, _created = PolicyChange.objects.get_or_create(number=1, defaults={
        "source": ChangeSource.MIGRATION, "reason": "Version 1: the settings and the declared defaults.",
        "exempt_reason": "Version 1.", "author_name": "Docket"})
    return change


@write_transaction
def policy_change_record(
    *,
    actor: User | None,
    changes: Mapping[str, object],
    effective_week: str,
    reason: str,
    source: str,
    source_ref: str = "",
    exempt_reason: str = "",
    author_name: str = "",
    baseline: Mapping[str, params.Value] | None = None,
) -> PolicyChange:
    """Record a change of one or more governed parameters (key → new value), effective from `effective_week`.

    Refused (ValidationError listing every problem, nothing written) for an unknown key, a value of the wrong type
    or out of its bounds (governed.params), rubric weights not adding up to 100, a pool's reserve and standby
    reaching 100 %, an empty reason, a malformed week, or values that are all those already in force that week.
    Refused as a StateConflict naming the next free week when the week already has a substantive change and this
    one states no `exempt_reason` (also when two writers race: the database's unique constraint decides). Who may
    change what, and from which weeks, the caller checks (the chair; a week to come). After commit, sends
    `policy_changed(change=…)`: the archive writes the change's page.
    """
    errors: dict[str, list[str]] = {}
    parsed: dict[str, params.Value] = {}
    for key, raw in changes.items():
        value, problem = params.value_errors(key, raw)
        if problem:
            errors.setdefault("changes", []).append(problem)
        else:
            assert value is not None
            parsed[key] = value
    if not changes:
        errors.setdefault("changes", []).append(_("Change at least one parameter."))
    reason = (reason or "").strip()
    if not reason:
        errors.setdefault("reason", []).append(_("Say why the rules change: the reason is published with them."))
    exempt_reason = (exempt_reason or "").strip()
    try:
        monday = parse_iso_week((effective_week or "").strip().upper())
    except ValueError:
        errors.setdefault("effective_week", []).append(_("Give the week as YYYY-Www, for example 2027-W01."))
        raise ValidationError(errors) from None
    week = format_isoweek(monday)
    # One writer at a time: the numbers stay consecutive and the week check below is not raced.
    last = PolicyChange.objects.select_for_update(no_key=True).order_by("-number").first()
    in_force = {**(baseline or {}), **selectors.policy_values(week=week)}
    merged = {**in_force, **parsed}
    if parsed:
        errors.setdefault("changes", []).extend(params.combined_errors(merged, set(parsed)))
    if not errors.get("changes"):
        errors.pop("changes", None)
    if errors:
        raise ValidationError(errors)
    if all(key in in_force and in_force[key] == value for key, value in parsed.items()):
        raise ValidationError(_("Nothing changed: these are the values in force in week %(week)s.") % {"week": week})
    if not exempt_reason:
        taken = selectors.policy_week_change(week=week)
        if taken is not None:
            raise StateConflict({"effective_week": [week_taken_message(week=week, change=taken)]})
    change = PolicyChange(
        number=(last.number if last is not None else 1) + 1, effective_week=week, effective_monday=monday,
        source=source if source in ChangeSource.values else ChangeSource.COMMAND, source_ref=source_ref,
        reason=reason, exempt_reason=exempt_reason, author=actor,
        author_name=author_name or (person_name(actor) if actor is not None else "Docket"),
    )
    try:
        with transaction.atomic():
            change.save()
    except IntegrityError:
        # Another substantive change for the same week committed meanwhile.
        raise StateConflict({"effective_week": [
            week_taken_message(week=week, change=selectors.policy_week_change(week=week))]}) from None
    PolicyValue.objects.bulk_create(
        PolicyValue(change=change, key=key, value=params.value_text(value)) for key, value in sorted(parsed.items())
    )
    transaction.on_commit(lambda: signals.policy_changed.send(sender=PolicyChange, change=change))
    return change
