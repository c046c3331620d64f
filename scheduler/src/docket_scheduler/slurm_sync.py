"""Make a Slurm cluster hold its published Docket windows, each as its tier says.

Runs on the Slurm host and talks to Docket only over HTTP (standard library only, no
Django), as

    docket-slurm-sync --url URL --token TOKEN --cluster SLUG \
        [--dry-run] [--once | --interval SECONDS] [--scontrol PATH] [--sacctmgr PATH] \
        [--reservations-only] [--scavenger-qos NAME] [--scavenger-preempt-mode requeue|cancel]

Tiers (docs/adapters.md has the long form and what the operator configures):
- `priority`: one reservation per window, named `docket-w<window id>`; reservations without
  that prefix are never read as ours, changed or deleted. Whole nodes: NodeCnt =
  ceil(gpu_count / gpus_per_node), because Slurm 22.05 cannot reserve GPUs by count (the
  status says so); Features=<scheduler_label> picks the pool's nodes; Accounts=<the team's
  Slurm account>. StartTime and EndTime are sent together on an inactive reservation; an
  active one cannot move its start or change Features, so it is deleted and recreated.
- `standard`: the account's GPU quota while the window runs, a QOS `docket-<account>` with
  GrpTRES=gres/gpu=<sum of its running standard windows> and Preempt=<scavenger>, allowed on
  and default for the account's association; removed when no standard window of the account
  runs. Exact GPU counts; unused GPUs stay usable by others. Needs accounting
  (slurmdbd, AccountingStorageEnforce=limits,qos): without it such windows fail, unless
  `--reservations-only` makes every window a reservation as before tiers.
- `preemptible`: the account may use the scavenger QOS (created if missing, never changed),
  which every quota QOS preempts (PreemptType=preempt/qos).
- a window without an account (or a priority one without a scheduler label) gets nothing and
  is reported failed.

The cores are pure: `reconcile()` from (desired windows, current reservations, now) to
actions, `quota_desire()` and `reconcile_qos()` from (windows, now, current QOS and
associations) to sacctmgr calls. `SlurmSync` runs them with scontrol and sacctmgr and reads
everything it changed back, because Slurm may hold less than asked and still exit 0.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import subprocess
import sys
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TextIO

from docket_scheduler.base import (
    DesiredWindow,
    Removal,
    RemovalGuard,
    SyncState,
    SyncStatus,
    parse_whole_number,
)
from docket_scheduler.cli import add_sync_options, docket_client, output, run_sync, state_file
from docket_scheduler.client import DocketError, poll

RESERVATION_PREFIX = "docket-w"
_OUR_NAME = re.compile(rf"^{re.escape(RESERVATION_PREFIX)}(\d+)$")
# A window starting this soon is created with StartTime=now: a literal time would be in
# the past by the time scontrol runs, and Slurm refuses past start times.
START_SLACK = timedelta(seconds=60)
SLURM_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"


class SlurmError(Exception):
    """scontrol could not be run or answered something unreadable; the pass is aborted."""


# --- naming and arithmetic -------------------------------------------------------------


def reservation_name(window_id: int) -> str:
    return f"{RESERVATION_PREFIX}{window_id}"


def window_id_of(reservation: str) -> int | None:
    """The window id a reservation was created for, or None if Docket did not create it."""
    match = _OUR_NAME.match(reservation)
    return int(match.group(1)) if match else None


def nodes_needed(window: DesiredWindow) -> int:
    """Whole nodes that hold the window's GPUs (rounded up: a node is never split)."""
    return math.ceil(window.gpu_count / window.gpus_per_node)


def rounding_note(window: DesiredWindow) -> str:
    nodes = nodes_needed(window)
    return f"window {window.id}: {window.gpu_count} GPUs → {nodes} nodes ({nodes * window.gpus_per_node} GPUs)"


def slurm_time(moment: datetime) -> str:
    """UTC without offset and without fractions: the only form scontrol accepts (run with TZ=UTC)."""
    return moment.astimezone(UTC).strftime(SLURM_TIME_FORMAT)


def _seconds(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(microsecond=0)


# --- reading reservations --------------------------------------------------------------


@dataclass(frozen=True)
class Reservation:
    """A reservation as `scontrol -o show reservation` shows it (times in UTC)."""

    name: str
    start: datetime
    end: datetime
    node_count: int
    features: str = ""
    accounts: frozenset[str] = frozenset()
    nodes: str = ""
    state: str = ""

    @property
    def window_id(self) -> int | None:
        return window_id_of(self.name)


def parse_fields(line: str) -> dict[str, str]:
    """Split one `scontrol -o` line into Key=Value pairs.

    Each token splits on its FIRST '=' (values such as TRES=cpu=128 contain '='); a token
    without '=' continues the previous value (a value with a space); "(null)" is empty.
    """
    fields: dict[str, str] = {}
    last: str | None = None
    for token in line.split():
        key, sep, value = token.partition("=")
        if sep:
            fields[key] = value
            last = key
        elif last is not None:
            fields[last] += " " + token
    return {key: "" if value == "(null)" else value for key, value in fields.items()}


def parse_reservations(text: str) -> list[Reservation]:
    """Parse `scontrol -o show reservation` output (one line per reservation).

    Raises SlurmError only for an unreadable docket-w* line: acting on a reservation of
    ours that we misread could delete or duplicate it.
    """
    reservations = []
    for line in text.splitlines():
        if not line.startswith("ReservationName="):
            continue  # "No reservations in the system", blank lines
        fields = parse_fields(line)
        try:
            reservations.append(
                Reservation(
                    name=fields["ReservationName"],
                    start=_parse_slurm_time(fields["StartTime"]),
                    end=_parse_slurm_time(fields["EndTime"]),
                    node_count=int(fields.get("NodeCnt") or 0),
                    features=fields.get("Features", ""),
                    accounts=frozenset(a for a in fields.get("Accounts", "").split(",") if a),
                    nodes=fields.get("Nodes", ""),
                    state=fields.get("State", ""),
                )
            )
        except (KeyError, ValueError) as exc:
            if window_id_of(fields.get("ReservationName", "")) is None:
                continue  # not ours: an odd reservation of someone else's must not stop the sync
            raise SlurmError(f"cannot read reservation line {line!r}: {exc}") from None
    return reservations


def _parse_slurm_time(value: str) -> datetime:
    # scontrol runs with TZ=UTC, so its offset-less times are UTC.
    return datetime.strptime(value, SLURM_TIME_FORMAT).replace(tzinfo=UTC)


# --- actions ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Create:
    window: DesiredWindow
    start: datetime | None  # None: StartTime=now (the window has begun or is about to)
    reason: str = "missing"

    @property
    def name(self) -> str:
        return reservation_name(self.window.id)

    def argv(self) -> list[str]:
        assert self.window.account is not None  # reconcile() rejects unmapped windows
        return [
            "create",
            "reservation",
            f"ReservationName={self.name}",
            f"StartTime={'now' if self.start is None else slurm_time(self.start)}",
            f"EndTime={slurm_time(self.window.end)}",
            f"NodeCnt={nodes_needed(self.window)}",
            f"Features={self.window.scheduler_label}",
            f"Accounts={self.window.account}",
        ]


@dataclass(frozen=True)
class Update:
    window: DesiredWindow
    changes: tuple[tuple[str, str], ...]  # (scontrol key, value), in the order sent

    @property
    def name(self) -> str:
        return reservation_name(self.window.id)

    def argv(self) -> list[str]:
        return ["update", f"ReservationName={self.name}", *(f"{key}={value}" for key, value in self.changes)]


@dataclass(frozen=True)
class Delete:
    name: str
    reason: str
    recreate: bool = False  # a Create for the same window follows
    dropped: bool = False  # its window is not in Docket's list at all (a RemovalGuard decides)

    def argv(self) -> list[str]:
        return ["delete", f"ReservationName={self.name}"]


@dataclass(frozen=True)
class Keep:
    window: DesiredWindow
    reservation: Reservation


@dataclass(frozen=True)
class Report:
    """No scontrol call: the window is reported as is (not expressible, or already ended)."""

    window: DesiredWindow
    state: SyncState
    message: str


Action = Create | Update | Delete | Keep | Report


def reconcile(
    desired: Sequence[DesiredWindow],
    current: Sequence[Reservation],
    now: datetime,
    *,
    held_as_quota: Collection[int] = (),
) -> list[Action]:
    """The actions that make Slurm's docket-w* reservations match `desired` at `now`.

    `held_as_quota` names windows that are published but held another way (a standard or
    preemptible window under QOS): a reservation left from before is deleted with that reason.

    Pure. Invariants of the result: it never names a reservation without our prefix;
    every desired window gets exactly one Create, Update, Keep or Report (a recreate is a
    Delete followed by a Create); deletes come first (they free nodes), then updates,
    then creates, then keeps and reports, each group by window id. Applying the result
    and reconciling again yields only Keeps and Reports.
    """
    ours = {r.window_id: r for r in current if r.window_id is not None}
    deletes: list[Delete] = []
    updates: list[Update] = []
    creates: list[Create] = []
    rest: list[Action] = []
    wanted: set[int] = set()

    for window in sorted(desired, key=lambda w: w.id):
        existing = ours.get(window.id)
        problem = _inexpressible(window, now)
        if problem is not None:
            state, message = problem
            if existing is not None:
                deletes.append(Delete(existing.name, reason=f"window {window.id}: {message}"))
                message += f"; deleted reservation {existing.name}"
            rest.append(Report(window, state, message))
            continue
        wanted.add(window.id)
        if existing is None:
            creates.append(Create(window, start=_create_start(window, now)))
            continue

        active = existing.start <= now
        if existing.features != window.scheduler_label:
            reason = f"Features {existing.features or '(none)'} → {window.scheduler_label}"
        elif active and window.start > now + START_SLACK:
            reason = f"active reservation's start moved to {slurm_time(window.start)}"
        else:
            reason = ""
        if reason:
            # Slurm refuses to change Features, and StartTime once a reservation is active.
            deletes.append(Delete(existing.name, reason=reason, recreate=True))
            creates.append(Create(window, start=_create_start(window, now), reason=reason))
            continue

        changes = _changes(window, existing, now, active=active)
        if changes:
            updates.append(Update(window, changes=tuple(changes)))
        else:
            rest.append(Keep(window, existing))

    for window_id, existing in sorted(ours.items()):
        if window_id not in wanted and not any(d.name == existing.name for d in deletes):
            if window_id in held_as_quota:
                reason = f"window {window_id} is held as a QOS quota, not a reservation"
                deletes.append(Delete(existing.name, reason=reason))
            else:
                reason = f"window {window_id} is no longer published"
                deletes.append(Delete(existing.name, reason=reason, dropped=True))
    return [*deletes, *updates, *creates, *rest]


def _inexpressible(window: DesiredWindow, now: datetime) -> tuple[SyncState, str] | None:
    """Why no reservation can stand for the window, if it cannot."""
    if window.end <= now:
        return SyncState.IN_SYNC, "window has ended; nothing to reserve"
    if window.account is None:
        return SyncState.FAILED, f"no Slurm account mapped for team {window.team}"
    if not window.scheduler_label:
        # Without Features a NodeCnt reservation may land on any GPU model.
        return SyncState.FAILED, f"pool {window.pool} has no scheduler label (Slurm feature)"
    return None


def _create_start(window: DesiredWindow, now: datetime) -> datetime | None:
    return None if window.start <= now + START_SLACK else window.start


def _changes(window: DesiredWindow, existing: Reservation, now: datetime, *, active: bool) -> list[tuple[str, str]]:
    changes: list[tuple[str, str]] = []
    end = _seconds(window.end)
    if active:
        # StartTime cannot change any more; the window's start has passed as well.
        if existing.end != end:
            changes.append(("EndTime", slurm_time(end)))
    elif existing.start != _seconds(window.start) or existing.end != end:
        # Sent together: Slurm checks start < end against the stored other half.
        start = _create_start(window, now)
        changes.append(("StartTime", "now" if start is None else slurm_time(start)))
        changes.append(("EndTime", slurm_time(end)))
    if existing.node_count != nodes_needed(window):
        changes.append(("NodeCnt", str(nodes_needed(window))))
    if existing.accounts != {window.account}:
        changes.append(("Accounts", str(window.account)))
    return changes


def describe(action: Action) -> str:
    """One line for the log and the dry-run plan."""
    if isinstance(action, Create):
        return f"create {action.name} ({action.reason}): scontrol {' '.join(action.argv())}"
    if isinstance(action, Update):
        return f"update {action.name}: scontrol {' '.join(action.argv())}"
    if isinstance(action, Delete):
        return f"delete {action.name} ({action.reason})"
    if isinstance(action, Keep):
        return f"keep {action.reservation.name}: in sync"
    return f"window {action.window.id}: {action.state.value}: {action.message}"


# --- tiers under accounting: QOS quotas and the scavenger QOS ----------------------------

TIER_PRIORITY, TIER_STANDARD, TIER_PREEMPTIBLE = "priority", "standard", "preemptible"
QOS_PREFIX = "docket-"
SCAVENGER_QOS = "scavenger"
# The Description of every quota QOS the sync creates: how it recognises its own (with the prefix).
QOS_MARK = "docket quota of account "
PREEMPT_MODES = ("requeue", "cancel")
# What Docket's cluster accounts allow; anything else is never put into a sacctmgr argument.
SLURM_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
NEEDED_ENFORCE = frozenset({"limits", "qos"})


@dataclass(frozen=True)
class SlurmConfig:
    """What the sync needs from `scontrol show config`."""

    cluster: str
    accounting_type: str
    enforce: frozenset[str]
    preempt_type: str

    def quota_problem(self) -> str | None:
        """Why Slurm cannot enforce a QOS quota here, if it cannot."""
        if self.accounting_type != "accounting_storage/slurmdbd":
            return (
                "accounting is needed for quotas (AccountingStorageType=accounting_storage/slurmdbd, "
                f"AccountingStorageEnforce=limits,qos; this cluster has AccountingStorageType="
                f"{self.accounting_type or 'none'}); or run the sync with --reservations-only"
            )
        missing = NEEDED_ENFORCE - self.enforce
        if missing:
            return (
                f"AccountingStorageEnforce lacks {','.join(sorted(missing))}: Slurm would not enforce "
                "a QOS quota (set AccountingStorageEnforce=associations,limits,qos)"
            )
        return None

    def preempt_problem(self) -> str | None:
        if self.preempt_type != "preempt/qos":
            return (
                f"PreemptType=preempt/qos is needed for preemptible work (this cluster has "
                f"{self.preempt_type or 'none'}): scavenger jobs would not yield to the owners"
            )
        return None


def parse_config(text: str) -> SlurmConfig:
    """Parse `scontrol show config` ("Key = Value" lines)."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip()
    enforce = values.get("AccountingStorageEnforce", "")
    return SlurmConfig(
        cluster=values.get("ClusterName", ""),
        accounting_type=values.get("AccountingStorageType", "").replace("(null)", ""),
        enforce=frozenset(part.strip().lower() for part in enforce.split(",") if part.strip() and part != "none"),
        preempt_type=values.get("PreemptType", "").replace("(null)", ""),
    )


@dataclass(frozen=True)
class Qos:
    """A QOS as `sacctmgr -P -n show qos format=name,grptres,preempt,description` shows it."""

    name: str
    grp_tres: Mapping[str, str]
    preempt: frozenset[str]
    description: str = ""

    @property
    def quota_account(self) -> str | None:
        """The account a Docket quota QOS is for; None for every QOS the sync did not create."""
        if self.name.startswith(QOS_PREFIX) and self.description.lower().startswith(QOS_MARK):
            words = self.description[len(QOS_MARK) :].split()
            return words[0].lower() if words else None
        return None

    @property
    def until(self) -> datetime | None:
        """When the quota's windows end, from its Description (None when it does not say)."""
        words = self.description.split()
        if "until" in words[:-1]:
            try:
                return _parse_slurm_time(words[words.index("until") + 1].upper())  # sacctmgr lowercases it
            except ValueError:
                return None
        return None

    @property
    def windows(self) -> frozenset[int]:
        """The windows the quota was set for, from its Description (empty when it does not say)."""
        words = self.description.split()
        if "windows" not in words[:-1]:
            return frozenset()
        ids = [parse_whole_number(part) for part in words[words.index("windows") + 1].split(",")]
        return frozenset(i for i in ids if i is not None)

    @property
    def gpus(self) -> int | None:
        value = self.grp_tres.get("gres/gpu")
        return parse_whole_number(value)


@dataclass(frozen=True)
class AccountQos:
    """An account's own association on the cluster: the QOS its jobs may use, and their default."""

    account: str
    qos: frozenset[str]
    default: str


def parse_qos(text: str) -> dict[str, Qos]:
    found: dict[str, Qos] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        name, grp_tres, preempt, description = [*line.split("|", 3), "", "", ""][:4]
        tres = dict(part.split("=", 1) for part in grp_tres.split(",") if "=" in part)
        found[name] = Qos(name, tres, frozenset(p for p in preempt.split(",") if p), description)
    return found


def parse_assoc(text: str) -> dict[str, AccountQos]:
    """Account rows (no user) of `sacctmgr -P -n show assoc format=account,user,qos,defaultqos`."""
    found: dict[str, AccountQos] = {}
    for line in text.splitlines():
        parts = line.split("|")
        if len(parts) < 4 or parts[1]:
            continue  # user rows follow their account's (sacctmgr modify account sets both)
        found[parts[0]] = AccountQos(parts[0], frozenset(q for q in parts[2].split(",") if q), parts[3])
    return found


def quota_qos_name(account: str) -> str:
    return f"{QOS_PREFIX}{account}".lower()


def quota_description(account: str, windows: Sequence[DesiredWindow]) -> str:
    """The mark by which the sync knows its own quota QOS, with when the quota ends and for which windows: a
    later pass that no longer sees those windows knows from Slurm alone whether the quota is still in force."""
    until = max(w.end for w in windows)
    ids = ",".join(str(w.id) for w in sorted(windows, key=lambda w: w.id))
    return f"{QOS_MARK}{account} until {slurm_time(until)} windows {ids}"


@dataclass(frozen=True)
class QosSettings:
    """The operator's names: the scavenger QOS and how it yields (used only when the sync creates it)."""

    scavenger: str = SCAVENGER_QOS
    scavenger_preempt_mode: str = "requeue"


@dataclass(frozen=True)
class QosCommand:
    """One sacctmgr call; `accounts` are those whose windows fail if it fails (empty: every window)."""

    argv: tuple[str, ...]
    accounts: frozenset[str] = frozenset()

    def line(self) -> str:
        return "sacctmgr -i " + " ".join(arg if " " not in arg else repr(arg) for arg in self.argv)


@dataclass(frozen=True)
class QuotaDesire:
    """What the QOS side should hold at `now`: GPUs per account with an active standard window,
    the accounts that may run scavenger work, and the windows reported without any command."""

    quotas: Mapping[str, int]
    scavenger_accounts: frozenset[str]
    reports: Mapping[int, tuple[SyncState, str]]
    # The Description of each account's quota QOS (quota_description: its end and windows).
    descriptions: Mapping[str, str] = field(default_factory=dict)


def quota_desire(windows: Sequence[DesiredWindow], now: datetime, config: SlurmConfig) -> QuotaDesire:
    """Pure: sum each account's active standard windows; say why other windows hold nothing."""
    quotas: dict[str, int] = {}
    held: dict[str, list[DesiredWindow]] = {}
    scavenger: set[str] = set()
    reports: dict[int, tuple[SyncState, str]] = {}
    quota_problem, preempt_problem = config.quota_problem(), config.preempt_problem()
    for window in windows:
        if window.tier not in (TIER_STANDARD, TIER_PREEMPTIBLE):
            reports[window.id] = (SyncState.FAILED, f"unknown tier {window.tier!r}")
        elif window.end <= now:
            reports[window.id] = (SyncState.IN_SYNC, "window has ended; no quota")
        elif window.account is None:
            reports[window.id] = (SyncState.FAILED, f"no Slurm account mapped for team {window.team}")
        elif not SLURM_NAME.match(window.account):
            reports[window.id] = (SyncState.FAILED, f"{window.account!r} is not a Slurm account name")
        elif quota_problem is not None:
            reports[window.id] = (SyncState.FAILED, quota_problem)
        elif window.tier == TIER_PREEMPTIBLE and preempt_problem is not None:
            reports[window.id] = (SyncState.FAILED, preempt_problem)
        elif window.start <= now:
            account = window.account.lower()
            scavenger.add(account)
            if window.tier == TIER_STANDARD:
                quotas[account] = quotas.get(account, 0) + window.gpu_count
                held.setdefault(account, []).append(window)
    descriptions = {account: quota_description(account, ws) for account, ws in held.items()}
    return QuotaDesire(quotas, frozenset(scavenger), reports, descriptions)


def reconcile_qos(
    desire: QuotaDesire,
    qos: Mapping[str, Qos],
    assoc: Mapping[str, AccountQos],
    *,
    cluster: str,
    settings: QosSettings,
    keep: Collection[str] = (),
) -> tuple[list[QosCommand], dict[str, str]]:
    """Pure: the sacctmgr calls that make the QOS side match `desire`.

    Order: the scavenger QOS (the quotas name it in Preempt), quota QOS, grants on the
    accounts, then revokes and deletes (Slurm refuses to delete a QOS still some account's
    default). Touches only QOS that carry the sync's prefix and mark, plus the operator's
    scavenger QOS (created if missing, never changed). The scavenger QOS is granted, never
    revoked: the sync cannot tell its own grant from the operator's.
    Returns the commands and the accounts refused without a command (a QOS of that name
    that is not ours, no association), with the reason. Applying the commands and
    reconciling again yields no command. A quota QOS named in `keep` (a removal its RemovalGuard refused) is
    left as it is.
    """
    commands: list[QosCommand] = []
    refusals: dict[str, str] = {}
    scavenger = settings.scavenger.lower()
    if (desire.quotas or desire.scavenger_accounts) and scavenger not in qos:
        commands.append(QosCommand(("add", "qos", scavenger, "Priority=0",
                                    f"PreemptMode={settings.scavenger_preempt_mode}",
                                    "Description=docket: preemptible work, yields to the owners")))
    for account, gpus in sorted(desire.quotas.items()):
        name = quota_qos_name(account)
        existing = qos.get(name)
        only = frozenset({account})
        description = desire.descriptions.get(account, f"{QOS_MARK}{account}")
        if existing is None:
            commands.append(QosCommand(("add", "qos", name, f"GrpTRES=gres/gpu={gpus}", f"Preempt={scavenger}",
                                        f"Description={description}"), only))
        elif existing.quota_account != account:
            refusals[account] = f"QOS {name} exists and was not created by Docket (its Description is not ours)"
        elif (existing.gpus, existing.preempt, existing.description.lower()) != (gpus, {scavenger},
                                                                                 description.lower()):
            commands.append(QosCommand(("modify", "qos", "where", f"name={name}", "set",
                                        f"GrpTRES=gres/gpu={gpus}", f"Preempt={scavenger}",
                                        f"Description={description}"), only))
    for account in sorted(set(desire.quotas) | desire.scavenger_accounts):
        if account in refusals:
            continue
        held = assoc.get(account)
        if held is None:
            refusals[account] = f"account {account} has no association on cluster {cluster}"
            continue
        want = {scavenger} | ({quota_qos_name(account)} if account in desire.quotas else set())
        sets = []
        if not want <= held.qos:
            sets.append("QOS+=" + ",".join(sorted(want - held.qos)))
        if account in desire.quotas and held.default != quota_qos_name(account):
            sets.append(f"DefaultQOS={quota_qos_name(account)}")
        if sets:
            commands.append(QosCommand(("modify", "account", "where", f"name={account}", f"cluster={cluster}",
                                        "set", *sets), frozenset({account})))
    ours = {q.name: q.quota_account for q in qos.values() if q.quota_account is not None}
    for name, account in sorted(ours.items()):
        if (account in desire.quotas and name == quota_qos_name(account)) or name in keep:
            continue
        for held in sorted(assoc.values(), key=lambda a: a.account):
            if name in held.qos or held.default == name:
                sets = [f"QOS-={name}"] + (["DefaultQOS=-1"] if held.default == name else [])
                commands.append(QosCommand(("modify", "account", "where", f"name={held.account}",
                                            f"cluster={cluster}", "set", *sets), frozenset({held.account})))
        commands.append(QosCommand(("delete", "qos", "where", f"name={name}"), frozenset({account or ""})))
    return commands, refusals


def quota_removals_refused(
    desire: QuotaDesire, qos: Mapping[str, Qos], *, now: datetime, guard: RemovalGuard
) -> set[str]:
    """The quota QOS that `guard` does not let this pass remove. A quota is live until the end its Description
    names (one without it, from an older sync, counts as live)."""
    ours = [q for q in qos.values() if q.quota_account is not None]
    removals = [
        Removal(q.name, q.windows, live=q.until is None or q.until > now, ended=q.until is not None and q.until <= now)
        for q in ours
        if not (q.quota_account in desire.quotas and q.name == quota_qos_name(q.quota_account or ""))
    ]
    allowed = {r.name for r in guard.allowed(removals, managed=len(ours))}
    return {r.name for r in removals} - allowed


def next_boundary(windows: Sequence[DesiredWindow], now: datetime) -> datetime | None:
    """The first start or end after `now` of a window held as a QOS: the sync must run then."""
    later = [moment for w in windows for moment in (w.start, w.end) if moment > now]
    return min(later) if later else None


def quota_status(
    window: DesiredWindow, desire: QuotaDesire, qos: Mapping[str, Qos], assoc: Mapping[str, AccountQos],
    settings: QosSettings, failures: Mapping[str, str], now: datetime,
) -> SyncStatus:
    """How the QOS side holds one standard or preemptible window, from what sacctmgr shows."""
    if window.id in desire.reports:
        state, message = desire.reports[window.id]
        return SyncStatus(window.id, state, 0, 0, message)
    assert window.account is not None  # quota_desire() reports unmapped windows
    account, scavenger = window.account.lower(), settings.scavenger.lower()
    if account in failures or "" in failures:
        return SyncStatus(window.id, SyncState.FAILED, 0, 0, failures.get(account) or failures[""])
    span = f"{slurm_time(window.start)} to {slurm_time(window.end)}"
    if window.start > now:
        what = (f"a quota of {window.gpu_count} GPUs in QOS {quota_qos_name(account)}"
                if window.tier == TIER_STANDARD else f"preemptible work in QOS {scavenger}")
        return SyncStatus(window.id, SyncState.IN_SYNC, 0, 0,
                          f"not started: account {account} gets {what} from {span}, applied at the start")
    held = assoc.get(account)
    if held is None or scavenger not in held.qos:
        return SyncStatus(window.id, SyncState.FAILED, 0, 0,
                          f"read back: account {account} may not use QOS {scavenger}")
    if window.tier == TIER_PREEMPTIBLE:
        return SyncStatus(window.id, SyncState.IN_SYNC, 0, 0,
                          f"preemptible: account {account} runs in QOS {scavenger} on idle GPUs until "
                          f"{slurm_time(window.end)}; owners' jobs preempt it (no GPUs held, {window.gpu_count} "
                          "not capped by Slurm)")
    name, gpus = quota_qos_name(account), desire.quotas[account]
    found = qos.get(name)
    if found is None or found.gpus != gpus or name not in held.qos or held.default != name:
        shown = "missing" if found is None else f"GrpTRES gres/gpu={found.gpus}, default QOS {held.default or '-'}"
        return SyncStatus(window.id, SyncState.FAILED, 0, 0, f"read back: QOS {name} {shown}, {gpus} GPUs wanted")
    total = "" if gpus == window.gpu_count else f" (the account's active standard windows: {gpus} GPUs in all)"
    return SyncStatus(window.id, SyncState.IN_SYNC, 0, 0,
                      f"quota: account {account} runs up to {window.gpu_count} GPUs at once until "
                      f"{slurm_time(window.end)} in its default QOS {name}, GrpTRES=gres/gpu={gpus}{total}; "
                      f"beyond it only preemptible in QOS {scavenger}; no GPUs held idle")


# --- executing with scontrol -----------------------------------------------------------


@dataclass
class SlurmSync:
    """Runs reconcile() actions with scontrol; implements base.SchedulerSync.

    `env` is the environment for scontrol (SLURM_CONF and the like); TZ=UTC is always
    forced on top because reservation times are exchanged without an offset.
    `problems` lists what went wrong outside any window (an orphan that would not delete).
    """

    scontrol: str = "scontrol"
    sacctmgr: str = "sacctmgr"
    reservations_only: bool = False
    qos: QosSettings = field(default_factory=QosSettings)
    env: Mapping[str, str] | None = None
    out: TextIO = field(default_factory=lambda: sys.stdout)
    timeout_s: float = 60.0
    problems: list[str] = field(default_factory=list)
    # After a sync: the next start or end of a window held as QOS, when a pass must run
    # even if Docket's windows did not change (client.poll reads it).
    next_boundary: datetime | None = None

    def list_reservations(self) -> list[Reservation]:
        result = self._run(["-o", "show", "reservation"])
        if result.returncode != 0:
            raise SlurmError(f"scontrol show reservation failed: {_message(result)}")
        return parse_reservations(result.stdout)

    def read_back(self, name: str) -> Reservation | None:
        result = self._run(["-o", "show", "reservation", name])
        if result.returncode != 0:
            return None
        found = [r for r in parse_reservations(result.stdout) if r.name == name]
        return found[0] if found else None

    def sync(
        self, windows: Sequence[DesiredWindow], *, now: datetime, dry_run: bool, guard: RemovalGuard | None = None
    ) -> list[SyncStatus]:
        """Reconcile and (unless dry_run) apply; one status per window, in window order.

        Priority windows (every window with `reservations_only`) are reservations; standard
        and preemptible ones are QOS state (`sync_quotas`). Sets `next_boundary`. A reservation or quota whose
        windows left Docket's list is removed only as `guard` allows (base.RemovalGuard: never a live one, nor
        more than its share, without Docket confirming the withdrawal); a kept one is reported `failed` on its
        window when Docket still knows that window, and is named in `problems`.
        """
        guard = guard if guard is not None else RemovalGuard()
        self.problems = []
        self.next_boundary = None
        if self.reservations_only:
            reserved, quota_windows = list(windows), []
        else:
            reserved = [w for w in windows if w.tier == TIER_PRIORITY]
            quota_windows = [w for w in windows if w.tier != TIER_PRIORITY]
        for window in sorted(reserved, key=lambda w: w.id):
            print(rounding_note(window), file=self.out)
        current = self.list_reservations()
        actions = reconcile(reserved, current, now, held_as_quota={w.id for w in quota_windows})
        actions = self._guard_deletes(actions, current, now=now, guard=guard)
        if dry_run:
            print("dry run: the plan below changes nothing and reports nothing", file=self.out)
            for action in actions:
                print(f"  would {describe(action)}", file=self.out)
            statuses = [_predicted_status(action) for action in actions if not isinstance(action, Delete)]
        else:
            statuses = self.execute(actions)
        if not self.reservations_only:
            statuses += self.sync_quotas(quota_windows, now=now, dry_run=dry_run, guard=guard)
            self.next_boundary = next_boundary(quota_windows, now)
        self.problems += [message for message in guard.refused.values() if message not in self.problems]
        desired = {w.id for w in windows}
        statuses += [SyncStatus(window, SyncState.FAILED, 0, 0, message)
                     for window, message in sorted(guard.held.items()) if window not in desired]
        return sorted(statuses, key=lambda status: status.window)

    @staticmethod
    def _guard_deletes(
        actions: list[Action], current: Sequence[Reservation], *, now: datetime, guard: RemovalGuard
    ) -> list[Action]:
        """The actions without the deletes of dropped windows' reservations that `guard` refuses."""
        ours = [r for r in current if r.window_id is not None]
        by_name = {r.name: r for r in ours}
        removals = [
            Removal(a.name, frozenset({by_name[a.name].window_id or 0}),
                    live=by_name[a.name].start <= now < by_name[a.name].end, ended=by_name[a.name].end <= now)
            for a in actions if isinstance(a, Delete) and a.dropped
        ]
        allowed = {r.name for r in guard.allowed(removals, managed=len(ours))}
        return [a for a in actions if not (isinstance(a, Delete) and a.dropped and a.name not in allowed)]

    def read_config(self) -> SlurmConfig:
        result = self._run(["show", "config"])
        if result.returncode != 0:
            raise SlurmError(f"scontrol show config failed: {_message(result)}")
        return parse_config(result.stdout)

    def read_qos(self, cluster: str) -> tuple[dict[str, Qos], dict[str, AccountQos]]:
        """Every QOS and the cluster's account associations, as sacctmgr shows them."""
        shown = self._run_tool(self.sacctmgr, ["-P", "-n", "show", "qos", "format=name,grptres,preempt,description"])
        if shown.returncode != 0:
            raise SlurmError(f"sacctmgr show qos failed: {_message(shown)}")
        assoc = self._run_tool(
            self.sacctmgr, ["-P", "-n", "show", "assoc", "where", f"cluster={cluster}",
                            "format=account,user,qos,defaultqos"]
        )
        if assoc.returncode != 0:
            raise SlurmError(f"sacctmgr show assoc failed: {_message(assoc)}")
        return parse_qos(shown.stdout), parse_assoc(assoc.stdout)

    def sync_quotas(
        self, windows: Sequence[DesiredWindow], *, now: datetime, dry_run: bool, guard: RemovalGuard | None = None
    ) -> list[SyncStatus]:
        """Make the QOS side hold the standard and preemptible windows active at `now`.

        Without accounting (or without limits,qos enforced) sacctmgr is not called: every
        such window fails with the reason. Otherwise reconcile_qos() commands run in order
        and the state is read back; a window fails with the message of a command that
        concerned its account.
        """
        config = self.read_config()
        desire = quota_desire(windows, now, config)
        qos: dict[str, Qos] = {}
        assoc: dict[str, AccountQos] = {}
        failures: dict[str, str] = {}
        if config.accounting_type == "accounting_storage/slurmdbd":
            # Even with no window to hold: quota QOS of windows no longer served are removed.
            try:
                qos, assoc = self.read_qos(config.cluster)
            except SlurmError as exc:
                failures[""] = str(exc)
        if failures:
            return [quota_status(w, desire, qos, assoc, self.qos, failures, now) for w in windows]
        keep = quota_removals_refused(desire, qos, now=now, guard=guard if guard is not None else RemovalGuard())
        commands, refusals = reconcile_qos(desire, qos, assoc, cluster=config.cluster, settings=self.qos, keep=keep)
        failures.update(refusals)
        if dry_run:
            for command in commands:
                print(f"  would run {command.line()}", file=self.out)
            return [
                quota_status(w, desire, qos, assoc, self.qos, failures, now)
                if w.id in desire.reports or (w.account or "").lower() in failures
                else SyncStatus(w.id, SyncState.IN_SYNC, 0, 0, "dry run: not applied")
                for w in windows
            ]
        for command in commands:
            print(command.line(), file=self.out)
            result = self._run_tool(self.sacctmgr, ["-i", *command.argv])
            if result.returncode != 0:
                message = f"{command.line()}: {_message(result)}"
                print(f"  {message}", file=self.out)
                for account in command.accounts or {""}:
                    failures.setdefault(account, message)
                if not command.accounts & (set(desire.quotas) | desire.scavenger_accounts):
                    self.problems.append(message)
        if commands:
            try:
                qos, assoc = self.read_qos(config.cluster)
            except SlurmError as exc:
                failures.setdefault("", str(exc))
        statuses = [quota_status(w, desire, qos, assoc, self.qos, failures, now) for w in windows]
        for status in statuses:
            if status.state is not SyncState.IN_SYNC:
                print(f"  window {status.window}: {status.state.value}: {status.message}", file=self.out)
        return statuses

    def execute(self, actions: Sequence[Action]) -> list[SyncStatus]:
        """Run the actions in order and return one status per window they name, by window id."""
        statuses: dict[int, SyncStatus] = {}
        blocked: dict[int, str] = {}  # windows whose recreate could not delete the old reservation
        for action in actions:
            print(describe(action), file=self.out)
            if isinstance(action, Delete):
                self._delete(action, blocked)
                continue
            status = self._apply(action, blocked)
            statuses[status.window] = status
            if status.state is not SyncState.IN_SYNC:
                print(f"  window {status.window}: {status.state.value}: {status.message}", file=self.out)
        return [statuses[key] for key in sorted(statuses)]

    def _delete(self, action: Delete, blocked: dict[int, str]) -> None:
        result = self._run(action.argv())
        if result.returncode == 0:
            return
        message = f"could not delete {action.name}: {_message(result)}"
        print(f"  {message}", file=self.out)
        window_id = window_id_of(action.name)
        if action.recreate and window_id is not None:
            blocked[window_id] = message  # creating it again would only fail on the name
        else:
            self.problems.append(message)

    def _apply(self, action: Create | Update | Keep | Report, blocked: Mapping[int, str]) -> SyncStatus:
        window = action.window
        if isinstance(action, Keep):
            return _held(window, action.reservation.node_count)
        if isinstance(action, Report):
            return _reported(action)
        if window.id in blocked:
            return _failed(window, blocked[window.id])
        result = self._run(action.argv())
        if result.returncode != 0:
            # A refused update leaves the old reservation in place: say what it still holds.
            held = self.read_back(action.name) if isinstance(action, Update) else None
            return _failed(window, _message(result), nodes_reserved=held.node_count if held else 0)
        return self._check(window)

    def _check(self, window: DesiredWindow) -> SyncStatus:
        """Read the reservation back: Slurm may hold fewer nodes than asked and exit 0."""
        reservation = self.read_back(reservation_name(window.id))
        if reservation is None:
            return _failed(window, f"reservation {reservation_name(window.id)} not found after scontrol succeeded")
        return _held(window, reservation.node_count)

    def _run(self, args: list[str]) -> subprocess.CompletedProcess[str]:
        return self._run_tool(self.scontrol, args)

    def _run_tool(self, tool: str, args: list[str]) -> subprocess.CompletedProcess[str]:
        env = dict(os.environ if self.env is None else self.env)
        env["TZ"] = "UTC"
        try:
            # The argv is ours; the tool's path comes from the operator's command line.
            return subprocess.run(  # noqa: S603
                [tool, *args], env=env, capture_output=True, text=True, timeout=self.timeout_s, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SlurmError(f"cannot run {tool}: {exc}") from None


def _held(window: DesiredWindow, nodes_reserved: int) -> SyncStatus:
    requested = nodes_needed(window)
    gpus = f"{window.gpu_count} GPUs on {requested} nodes ({requested * window.gpus_per_node} GPUs)"
    if nodes_reserved < requested:
        return SyncStatus(
            window=window.id,
            state=SyncState.SHORT,
            nodes_requested=requested,
            nodes_reserved=nodes_reserved,
            message=f"short by {requested - nodes_reserved} nodes: {gpus} asked",
        )
    return SyncStatus(window.id, SyncState.IN_SYNC, requested, nodes_reserved, f"reserved {gpus}")


def _failed(window: DesiredWindow, message: str, *, nodes_reserved: int = 0) -> SyncStatus:
    return SyncStatus(window.id, SyncState.FAILED, nodes_needed(window), nodes_reserved, message)


def _reported(action: Report) -> SyncStatus:
    return SyncStatus(action.window.id, action.state, nodes_needed(action.window), 0, action.message)


def _predicted_status(action: Action) -> SyncStatus:
    if isinstance(action, Report):
        return _reported(action)
    if isinstance(action, Keep):
        return _held(action.window, action.reservation.node_count)
    assert isinstance(action, (Create, Update))
    return SyncStatus(action.window.id, SyncState.IN_SYNC, nodes_needed(action.window), 0, "dry run: not applied")


def _message(result: subprocess.CompletedProcess[str]) -> str:
    """Slurm's own words: stderr (stdout carries notes even on failure), de-duplicated."""
    lines: list[str] = []
    for line in (result.stderr.strip() or result.stdout.strip()).splitlines():
        # "slurm_update error: X" repeats "Error updating the reservation: X".
        if line.strip() and not any(line.split(": ", 1)[-1] in seen for seen in lines):
            lines.append(line.strip())
    return "; ".join(lines) or f"scontrol exited {result.returncode}"


# --- command line ----------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="docket-slurm-sync",
        description="Make this Slurm cluster's docket-w* reservations match its published Docket windows.",
    )
    add_sync_options(parser, interval_s=60.0, interval_help="poll period (60)")
    parser.add_argument("--scontrol", default="scontrol", help="path to scontrol (default: scontrol on PATH)")
    parser.add_argument("--sacctmgr", default="sacctmgr", help="path to sacctmgr (default: sacctmgr on PATH)")
    parser.add_argument(
        "--reservations-only",
        action="store_true",
        help="every window becomes a whole-node reservation whatever its tier (the behaviour before tiers; "
        "for a cluster without accounting, where standard windows cannot be QOS quotas)",
    )
    parser.add_argument(
        "--scavenger-qos",
        type=_slurm_name,
        default=SCAVENGER_QOS,
        metavar="NAME",
        help=f"the QOS of preemptible work, which every quota QOS preempts ({SCAVENGER_QOS}); created if missing",
    )
    parser.add_argument(
        "--scavenger-preempt-mode",
        choices=PREEMPT_MODES,
        default="requeue",
        help="PreemptMode of the scavenger QOS when the sync creates it (requeue); an existing one is not changed",
    )
    return parser


def _slurm_name(text: str) -> str:
    if not SLURM_NAME.match(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a QOS name (letters, digits, '.', '_', '-')")
    return text


def main(argv: Sequence[str] | None = None, *, env: Mapping[str, str] | None = None, out: TextIO | None = None) -> int:
    """Exit codes (cli.run_sync): 0 every window in sync or short; 1 a window failed (or a reservation would not
    delete, or was kept) in --once mode; 2 Docket or scontrol could not be used."""
    parser = build_parser()
    args = parser.parse_args(argv)
    client = docket_client(parser, args, env)
    stream = output(out)
    adapter = SlurmSync(
        scontrol=args.scontrol,
        sacctmgr=args.sacctmgr,
        reservations_only=args.reservations_only,
        qos=QosSettings(scavenger=args.scavenger_qos, scavenger_preempt_mode=args.scavenger_preempt_mode),
        env=env,
        out=stream,
    )
    errors = (DocketError, SlurmError)

    def loop() -> None:
        poll(client, adapter, interval_s=args.interval, resync_s=args.resync, dry_run=args.dry_run, out=stream,
             errors=errors, max_backoff_s=args.max_backoff, max_remove_pct=args.max_remove_pct, state=state_file(args))

    return run_sync(args, client=client, adapter=adapter, loop=loop, errors=errors, out=stream)


if __name__ == "__main__":
    sys.exit(main())
