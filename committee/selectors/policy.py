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
from decimal import Decimal
from itertools import groupby
from typing import Any

from django.db.models import Model, Q
from django.utils.translation import gettext as _
from django.utils.translation import pgettext

from allocations.models import ClusterAccount, Department, GpuPool, Team
from committee.models import CommitteeSeat, SeatRole
from core import numbers
from governed import params
from governed.models import PolicyValue
from governed.selectors import policy_value_typed

POLICY_HISTORY_LIMIT = 200


@dataclass(frozen=True)
class FieldChange:
    label: str
    old: str | None  # None: the object was created with `new`
    new: str
    field: str = ""  # what `label` names, as a code: a model's field ("name") or a governed key ("review.quorum")


@dataclass(frozen=True)
class PolicyChange:
    at: datetime
    kind: str  # "Team", "GPU pool", ...
    subject: str  # which one, as it was named then
    action: str  # created, changed, deleted
    changes: tuple[FieldChange, ...]
    who: str
    reason: str
    kind_code: str = ""  # a key of KINDS
    action_code: str = ""  # "+", "~", "-" (simple-history's history_type)
    version: tuple[int, str] | None = None  # a change in the store: its number and effective week (the subject)


def _kinds() -> dict[str, tuple[str, type[Model] | None]]:
    """Each kind of policy change by its code: its label in the active language, and the model whose fields it
    changes (None: the governed store, whose labels are the parameters')."""
    return {
        "department": (_("Department"), Department),
        "team": (_("Team"), Team),
        "pool": (_("GPU pool"), GpuPool),
        "account": (_("Cluster account"), ClusterAccount),
        "seat": (_("Committee seat"), CommitteeSeat),
        "elastic": (_("Elastic policy"), None),
        "governance": (_("Review and fair share"), None),
        "pool_reserves": (_("Pool reserves"), None),
        "prices": (_("Prices"), None),
        "budget": (_("Budgets"), None),
    }


def _actions() -> dict[str, str]:
    return {"+": pgettext("a policy change", "created"), "~": pgettext("a policy change", "changed"),
            "-": pgettext("a policy change", "deleted")}


def _version_subject(number: int, week: str) -> str:
    return _("v%(n)d, from week %(week)s") % {"n": number, "week": week}


def _param_label(key: str) -> str | None:
    found = params.param_for(key)
    if found is None:
        return None
    part = found[1]
    return _lowered(str(found[0].label) % {"pool": part, "criterion": part, "department": part}
                    if part else str(found[0].label))


def policy_change_labels(
    *, kind_code: str, action_code: str, version: Sequence[Any] | None, fields: Sequence[str]
) -> tuple[str, str, str | None, list[str | None]]:
    """A stored change's kind, action, subject (a store version's; None: a name, kept as stored) and field labels
    in the active language, from its codes (a label whose code is unknown: None, keep the stored one)."""
    kind, model = _kinds().get(kind_code, ("", None))
    labels: list[str | None] = []
    for field in fields:
        if model is not None:
            known = field in {f.name for f in model._meta.get_fields()}
            labels.append(_field_label(model, field) if known else None)
        else:
            labels.append(_param_label(field))
    subject = _version_subject(int(version[0]), str(version[1])) if version else None
    return kind, _actions().get(action_code, ""), subject, labels


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
    actions = _actions()
    label = _kinds()[kind][0]
    for record in records:
        before = previous.get(record.id)
        previous[record.id] = record
        diffs = tuple(
            FieldChange(label=name, old=None if before is None else _value(before, f), new=_value(record, f), field=f)
            for f, name in fields
            if _value(record, f) != (_value(before, f) if before is not None else "—")
        )
        if record.history_type == "~" and not diffs:
            continue  # saved without a change of a shown field
        out.append(
            PolicyChange(
                at=record.history_date,
                kind=label,
                subject=subject(record),
                action=actions.get(record.history_type, record.history_type),
                changes=diffs,
                who=record.history_user_name or (_("(a script or the shell)")),
                reason=record.history_change_reason or "",
                kind_code=kind,
                action_code=record.history_type,
            )
        )
    return out


def _field_label(model: type[Model], name: str) -> str:
    field = model._meta.get_field(name)
    return str(getattr(field, "verbose_name", name))


def policy_history(
    *, limit: int = POLICY_HISTORY_LIMIT, after: datetime | None = None, until: datetime | None = None
) -> list[PolicyChange]:
    """The latest `limit` changes of every policy parameter, newest first. Seven queries.

    With `after` and `until`, only the changes made in (after, until]; each change is still told against the
    object's row before it, which may be older than `after`.
    """

    def labelled(model: type[Model], *names: str) -> list[tuple[str, str]]:
        return [(name, _field_label(model, name)) for name in names]

    def rows(history: Any, *related: str) -> Any:
        ordered = history.select_related(*related).order_by("id", "history_date", "history_id")
        return ordered if until is None else ordered.filter(history_date__lte=until)

    departments = rows(Department.history)
    teams = rows(Team.history, "department")
    pools = rows(GpuPool.history, "cluster")
    accounts = rows(ClusterAccount.history, "cluster", "team")
    seats = rows(CommitteeSeat.history, "user")
    changes = [
        *_changes(departments, kind="department", fields=labelled(Department, "name", "fair_share_weight"),
                  subject=lambda r: r.name),
        *_changes(teams, kind="team", fields=labelled(Team, "name", "department", "fair_share_weight"),
                  subject=lambda r: r.name),
        *_changes(
            pools, kind="pool",
            fields=labelled(GpuPool, "gpu_count", "gpu_model", "gpus_per_node",
                            "scheduler_label", "queue_wait_target_minutes"),
            subject=lambda r: f"{r.cluster.slug}/{r.slug}",
        ),
        *_changes(accounts, kind="account", fields=labelled(ClusterAccount, "account"),
                  subject=lambda r: f"{r.team.name} @ {r.cluster.slug}"),
        *_changes(
            seats, kind="seat", fields=labelled(CommitteeSeat, "role", "active_from", "active_to"),
            subject=lambda r: r.user.get_full_name() or r.user.get_username(),
        ),
    ]
    changes += _elastic_changes()
    changes += _governance_changes()
    price = f".{params.PRICE}"  # a pool's price per GPU-hour: a price, not a reserve
    changes += _store_changes(Q(key__startswith=params.POOL_PREFIX), kind="pool_reserves", but=price)
    changes += _store_changes(Q(key__startswith=params.POOL_PREFIX, key__endswith=price), kind="prices")
    changes += _store_changes(Q(key__startswith=params.BUDGET_PREFIX) | Q(key=params.PREEMPTIBLE_DISCOUNT),
                              kind="budget")
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
    if isinstance(value, int | Decimal):  # a budget of 176,200: thousands separated
        return numbers.format_figure(value)
    return str(value)


def _lowered(label: str) -> str:
    """A parameter's label as the history's field labels read: "score quorum"."""
    return label[:1].lower() + label[1:]


def _governance_changes() -> list[PolicyChange]:
    """Each change of the quorum or fair share in the one store (governed) against the values before it. One query."""
    keys = (params.QUORUM, params.FAIRSHARE_HALF_LIFE, params.FAIRSHARE_TRAILING)
    return _store_changes(Q(key__in=keys), kind="governance")


def _elastic_changes() -> list[PolicyChange]:
    """Each change of the elastic policy's thresholds in the one store against the values before it. One query."""
    return _store_changes(Q(key__startswith=params.ELASTIC_PREFIX), kind="elastic")


def _store_changes(keys: Q, *, kind: str, but: str = "") -> list[PolicyChange]:
    """Each change in the store of the keys `keys` selects (those ending with `but` left out), as the values it
    changed (version 1 is the baseline)."""
    # Version 1 as declared, in case its rows are missing (a flushed database); its rows, when there, say the same.
    state: dict[str, str] = {k: params.value_text(v) for k, v in params.defaults().items()
                             if _selects(keys, k)}
    out: list[PolicyChange] = []
    rows = PolicyValue.objects.filter(keys).select_related("change").order_by("change__number", "key")
    if but:
        rows = rows.exclude(key__endswith=but)
    for change, values in groupby(rows, key=lambda row: row.change):
        diffs = []
        for row in values:
            label = _param_label(row.key)
            if state.get(row.key) != row.value and label is not None:
                old = state.get(row.key)
                diffs.append(FieldChange(
                    label=label,
                    old=None if old is None else _shown(policy_value_typed(key=row.key, raw=old)),
                    new=_shown(policy_value_typed(key=row.key, raw=row.value)), field=row.key))
            state[row.key] = row.value
        if change.number == 1 or not diffs:
            continue
        out.append(PolicyChange(
            at=change.created_at, kind=_kinds()[kind][0],
            subject=_version_subject(change.number, change.effective_week),
            action=_actions()["~"], changes=tuple(diffs), who=change.author_name, reason=change.reason,
            kind_code=kind, action_code="~", version=(change.number, change.effective_week),
        ))
    return out


def _selects(keys: Q, key: str) -> bool:
    """Whether the lookups of `keys` (key__in, key__startswith, key__endswith; or-ed, or and-ed) select `key`."""
    found = []
    for lookup, value in keys.children:  # type: ignore[misc]
        found.append((lookup == "key" and key == value) or (lookup == "key__in" and key in value)
                     or (lookup == "key__startswith" and key.startswith(value))
                     or (lookup == "key__endswith" and key.endswith(value)))
    return all(found) if keys.connector == Q.AND and len(found) > 1 else any(found)
