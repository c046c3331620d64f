"""The `standard` and `preemptible` tiers as Slurm QOS state, under accounting.

- `standard`: the account's GPU quota while the window runs, a QOS `docket-<account>` with
  GrpTRES=gres/gpu=<sum of its running standard windows> and Preempt=<scavenger>, allowed on
  and default for the account's association; removed when no standard window of the account
  runs. Exact GPU counts; unused GPUs stay usable by others. Needs accounting
  (slurmdbd, AccountingStorageEnforce=limits,qos): without it such windows fail, unless
  `--reservations-only` makes every window a reservation as before tiers.
- `preemptible`: the account may use the scavenger QOS (created if missing, never changed),
  which every quota QOS preempts (PreemptType=preempt/qos).
- a window without an account gets nothing and is reported failed.

The cores are pure: `quota_desire()` and `reconcile_qos()` from (windows, now, current QOS and
associations) to sacctmgr calls. `QuotaExecutor` runs them with sacctmgr and reads the QOS side
back, because Slurm may hold less than asked and still exit 0.
"""

from __future__ import annotations

import sys
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TextIO

from docket_scheduler.base import (
    DesiredWindow,
    Removal,
    RemovalGuard,
    SyncState,
    SyncStatus,
    parse_whole_number,
)
from docket_scheduler.slurm_commands import (
    SLURM_NAME,
    SlurmConfig,
    SlurmError,
    SlurmTools,
    parse_config,
    parse_slurm_time,
    slurm_time,
    tool_message,
)

TIER_PRIORITY, TIER_STANDARD, TIER_PREEMPTIBLE = "priority", "standard", "preemptible"
QOS_PREFIX = "docket-"
SCAVENGER_QOS = "scavenger"
# The Description of every quota QOS the sync creates: how it recognises its own (with the prefix).
QOS_MARK = "docket quota of account "
# What docket-elastic-agent appends to a quota QOS's Description when it raises the quota by the pool's burst reserve:
# " burst <GPUs> lease <time>". The sync keeps such a raise until the lease (the agent renews it every minute it
# holds), so the two never undo each other; after the lease, an agent that stopped renewing is undone.
BURST_MARK = "burst"


@dataclass(frozen=True)
class BurstRaise:
    gpus: int
    lease: datetime


def burst_description(base: str, gpus: int, lease: datetime) -> str:
    return f"{base} {BURST_MARK} {gpus} lease {slurm_time(lease)}"
PREEMPT_MODES = ("requeue", "cancel")


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
                return parse_slurm_time(words[words.index("until") + 1].upper())  # sacctmgr lowercases it
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

    @property
    def burst(self) -> BurstRaise | None:
        """The elastic agent's raise written in the Description (burst_description), None without one."""
        words = self.description.split()
        if len(words) < 4 or words[-4] != BURST_MARK or words[-2] != "lease":
            return None
        gpus = parse_whole_number(words[-3])
        try:
            lease = parse_slurm_time(words[-1].upper())  # sacctmgr lowercases it
        except ValueError:
            return None
        return BurstRaise(gpus, lease) if gpus is not None else None

    @property
    def base_description(self) -> str:
        """The Description without the agent's raise: the sync's own."""
        return " ".join(self.description.split()[:-4]) if self.burst is not None else self.description

    def burst_live(self, now: datetime | None) -> BurstRaise | None:
        held = self.burst
        return held if held is not None and now is not None and held.lease > now else None


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
    now: datetime | None = None  # when the desire was computed: an agent's burst raise is kept until its lease


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
    return QuotaDesire(quotas, frozenset(scavenger), reports, descriptions, now)


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
        raised = existing.burst_live(desire.now) if existing is not None else None
        if raised is not None:  # the elastic agent's raise, within its lease: kept on top of the quota
            gpus, description = gpus + raised.gpus, burst_description(description, raised.gpus, raised.lease)
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
    raised = found.burst_live(now) if found is not None else None
    if raised is not None:
        gpus += raised.gpus
    if found is None or found.gpus != gpus or name not in held.qos or held.default != name:
        shown = "missing" if found is None else f"GrpTRES gres/gpu={found.gpus}, default QOS {held.default or '-'}"
        return SyncStatus(window.id, SyncState.FAILED, 0, 0, f"read back: QOS {name} {shown}, {gpus} GPUs wanted")
    total = "" if gpus == window.gpu_count else f" (the account's active standard windows: {gpus} GPUs in all)"
    if raised is not None:
        total = (f" (the account's active standard windows: {desire.quotas[account]} GPUs, raised by the elastic "
                 f"agent's burst of {raised.gpus} until {slurm_time(raised.lease)})")
    return SyncStatus(window.id, SyncState.IN_SYNC, 0, 0,
                      f"quota: account {account} runs up to {window.gpu_count} GPUs at once until "
                      f"{slurm_time(window.end)} in its default QOS {name}, GrpTRES=gres/gpu={gpus}{total}; "
                      f"beyond it only preemptible in QOS {scavenger}; no GPUs held idle")


# --- executing with sacctmgr -------------------------------------------------------------


@dataclass
class QuotaExecutor:
    """Runs reconcile_qos() commands with sacctmgr and reads the QOS side back.

    `problems` lists what went wrong outside any window in the last pass (a command that concerned no
    window's account).
    """

    tools: SlurmTools = field(default_factory=SlurmTools)
    settings: QosSettings = field(default_factory=QosSettings)
    out: TextIO = field(default_factory=lambda: sys.stdout)
    problems: list[str] = field(default_factory=list)

    def read_config(self) -> SlurmConfig:
        result = self.tools.run_scontrol(["show", "config"])
        if result.returncode != 0:
            raise SlurmError(f"scontrol show config failed: {tool_message(result)}")
        return parse_config(result.stdout)

    def read_qos(self, cluster: str) -> tuple[dict[str, Qos], dict[str, AccountQos]]:
        """Every QOS and the cluster's account associations, as sacctmgr shows them."""
        shown = self.tools.run_sacctmgr(["-P", "-n", "show", "qos", "format=name,grptres,preempt,description"])
        if shown.returncode != 0:
            raise SlurmError(f"sacctmgr show qos failed: {tool_message(shown)}")
        assoc = self.tools.run_sacctmgr(
            ["-P", "-n", "show", "assoc", "where", f"cluster={cluster}", "format=account,user,qos,defaultqos"]
        )
        if assoc.returncode != 0:
            raise SlurmError(f"sacctmgr show assoc failed: {tool_message(assoc)}")
        return parse_qos(shown.stdout), parse_assoc(assoc.stdout)

    def sync(
        self, windows: Sequence[DesiredWindow], *, now: datetime, dry_run: bool, guard: RemovalGuard
    ) -> list[SyncStatus]:
        """Make the QOS side hold the standard and preemptible windows active at `now`.

        Without accounting (or without limits,qos enforced) sacctmgr is not called: every
        such window fails with the reason. Otherwise reconcile_qos() commands run in order
        and the state is read back; a window fails with the message of a command that
        concerned its account. A quota QOS whose windows left Docket's list is removed only as `guard` allows.
        """
        self.problems = []
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
            return [quota_status(w, desire, qos, assoc, self.settings, failures, now) for w in windows]
        keep = quota_removals_refused(desire, qos, now=now, guard=guard)
        commands, refusals = reconcile_qos(
            desire, qos, assoc, cluster=config.cluster, settings=self.settings, keep=keep
        )
        failures.update(refusals)
        if dry_run:
            for command in commands:
                print(f"  would run {command.line()}", file=self.out)
            return [
                quota_status(w, desire, qos, assoc, self.settings, failures, now)
                if w.id in desire.reports or (w.account or "").lower() in failures
                else SyncStatus(w.id, SyncState.IN_SYNC, 0, 0, "dry run: not applied")
                for w in windows
            ]
        for command in commands:
            print(command.line(), file=self.out)
            result = self.tools.run_sacctmgr(["-i", *command.argv])
            if result.returncode != 0:
                message = f"{command.line()}: {tool_message(result)}"
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
        statuses = [quota_status(w, desire, qos, assoc, self.settings, failures, now) for w in windows]
        for status in statuses:
            if status.state is not SyncState.IN_SYNC:
                print(f"  window {status.window}: {status.state.value}: {status.message}", file=self.out)
        return statuses
