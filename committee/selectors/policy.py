"""The history of the policy parameters: fair-share weights, pools, cluster accounts, committee seats, elastic policy.

Read from django-simple-history's historical rows (core/history.py), one query per kind of thing, and
turned into changes: for each row, the fields that differ from the same object's row before it. The
governed parameters (the quorum and fair share, the elastic policy, a pool's reserves) are read from the one store
(governed): each change after version 1 against the values before it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import groupby
from typing import Any

from django.db.models import Model, Q
from django.utils.translation import gettext as _

from allocations.models import ClusterAccount, GpuPool, Team
from committee.models import CommitteeSeat, SeatRole
from governed import params
from governed.models import PolicyValue
from governed.selectors import policy_value_typed

POLICY_HISTORY_LIMIT = 200


@dataclass(frozen=True)
class FieldChange:
    label: str
    old: str | None  # None: the object was created with `new`
    new: str


@dataclass(frozen=True)
class PolicyChange:
    at: datetime
    kind: str  # "Team", "GPU pool", ...
    subject: str  # which one, as it was named then
    action: str  # created, changed, deleted
    changes: tuple[FieldChange, ...]
    who: str
    reason: str


def _value(record: Any, field: str) -> str:
    value = getattr(record, field)
    if field == "role":
        return str(SeatRole(value).label) if value in SeatRole.values else str(value)
    return "—" if value is None else str(value)


def _changes(
    records: Iterable[Any], *, kind: str, fields: Sequence[tuple[str, str]], subject: Any
) -> list[PolicyChange]:
    """Each historical row (ordered by object, then time) as a change against the object's row before it."""
    out: list[PolicyChange] = []
    previous: dict[int, Any] = {}
    actions = {"+": _("created"), "~": _("changed"), "-": _("deleted")}
    for record in records:
        before = previous.get(record.id)
        previous[record.id] = record
        diffs = tuple(
            FieldChange(label=label, old=None if before is None else _value(before, f), new=_value(record, f))
            for f, label in fields
            if _value(record, f) != (_value(before, f) if before is not None else "—")
        )
        if record.history_type == "~" and not diffs:
            continue  # saved without a change of a shown field
        out.append(
            PolicyChange(
                at=record.history_date,
                kind=kind,
                subject=subject(record),
                action=actions.get(record.history_type, record.history_type),
                changes=diffs,
                who=record.history_user_name or (_("(a script or the shell)")),
                reason=record.history_change_reason or "",
            )
        )
    return out


def _field_label(model: type[Model], name: str) -> str:
    field = model._meta.get_field(name)
    return str(getattr(field, "verbose_name", name))


def policy_history(
    *, limit: int = POLICY_HISTORY_LIMIT, after: datetime | None = None, until: datetime | None = None
) -> list[PolicyChange]:
    """The latest `limit` changes of every policy parameter, newest first. Six queries.

    With `after` and `until`, only the changes made in (after, until]; each change is still told against the
    object's row before it, which may be older than `after`.
    """

    def labelled(model: type[Model], *names: str) -> list[tuple[str, str]]:
        return [(name, _field_label(model, name)) for name in names]

    def rows(history: Any, *related: str) -> Any:
        ordered = history.select_related(*related).order_by("id", "history_date", "history_id")
        return ordered if until is None else ordered.filter(history_date__lte=until)

    teams = rows(Team.history)
    pools = rows(GpuPool.history, "cluster")
    accounts = rows(ClusterAccount.history, "cluster", "team")
    seats = rows(CommitteeSeat.history, "user")
    changes = [
        *_changes(teams, kind=_("Team"), fields=labelled(Team, "name", "fair_share_weight"),
                  subject=lambda r: r.name),
        *_changes(
            pools, kind=_("GPU pool"),
            fields=labelled(GpuPool, "gpu_count", "cost_per_gpu_hour", "gpu_model", "gpus_per_node",
                            "scheduler_label", "queue_wait_target_minutes"),
            subject=lambda r: f"{r.cluster.slug}/{r.slug}",
        ),
        *_changes(accounts, kind=_("Cluster account"), fields=labelled(ClusterAccount, "account"),
                  subject=lambda r: f"{r.team.name} @ {r.cluster.slug}"),
        *_changes(
            seats, kind=_("Committee seat"), fields=labelled(CommitteeSeat, "role", "active_from", "active_to"),
            subject=lambda r: r.user.get_full_name() or r.user.get_username(),
        ),
    ]
    changes += _elastic_changes()
    changes += _governance_changes()
    changes += _store_changes(Q(key__startswith=params.POOL_PREFIX), kind=_("Pool reserves"))
    changes = [
        change for change in changes
        if (after is None or change.at > after) and (until is None or change.at <= until)
    ]
    changes.sort(key=lambda change: change.at, reverse=True)
    return changes[:limit]


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return str(_("yes") if value else _("no"))
    if hasattr(value, "strftime"):
        return str(value.strftime("%H:%M"))
    return str(value)


def _lowered(label: str) -> str:
    """A parameter's label as the history's field labels read: "score quorum"."""
    return label[:1].lower() + label[1:]


def _governance_changes() -> list[PolicyChange]:
    """Each change of the quorum or fair share in the one store (governed) against the values before it. One query."""
    keys = (params.QUORUM, params.FAIRSHARE_HALF_LIFE, params.FAIRSHARE_TRAILING)
    return _store_changes(Q(key__in=keys), kind=_("Review and fair share"))


def _elastic_changes() -> list[PolicyChange]:
    """Each change of the elastic policy's thresholds in the one store against the values before it. One query."""
    return _store_changes(Q(key__startswith=params.ELASTIC_PREFIX), kind=_("Elastic policy"))


def _store_changes(keys: Q, *, kind: str) -> list[PolicyChange]:
    """Each change in the store of the keys `keys` selects, as the values it changed (version 1 is the baseline)."""
    # Version 1 as declared, in case its rows are missing (a flushed database); its rows, when there, say the same.
    state: dict[str, str] = {k: params.value_text(v) for k, v in params.defaults().items()
                             if _selects(keys, k)}
    out: list[PolicyChange] = []
    rows = PolicyValue.objects.filter(keys).select_related("change").order_by("change__number", "key")
    for change, values in groupby(rows, key=lambda row: row.change):
        diffs = []
        for row in values:
            found = params.param_for(row.key)
            if state.get(row.key) != row.value and found is not None:
                old = state.get(row.key)
                part = found[1]
                label = str(found[0].label) % {"pool": part, "criterion": part} if part else str(found[0].label)
                diffs.append(FieldChange(
                    label=_lowered(label),
                    old=None if old is None else _shown(policy_value_typed(key=row.key, raw=old)),
                    new=_shown(policy_value_typed(key=row.key, raw=row.value))))
            state[row.key] = row.value
        if change.number == 1 or not diffs:
            continue
        out.append(PolicyChange(
            at=change.created_at, kind=kind,
            subject=_("v%(n)d, from week %(week)s") % {"n": change.number, "week": change.effective_week},
            action=_("changed"), changes=tuple(diffs), who=change.author_name, reason=change.reason,
        ))
    return out


def _selects(keys: Q, key: str) -> bool:
    """Whether the lookups of `keys` (key__in, key__startswith) select `key`."""
    for lookup, value in keys.children:  # type: ignore[misc]
        if lookup == "key__in" and key in value:
            return True
        if lookup == "key__startswith" and key.startswith(value):
            return True
    return False
