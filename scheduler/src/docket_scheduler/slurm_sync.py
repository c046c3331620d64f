"""Make a Slurm cluster hold its published Docket windows, each as its tier says: the program.

Runs on the Slurm host and talks to Docket only over HTTP (standard library only, no
Django), as

    docket-slurm-sync --url URL --token TOKEN --cluster SLUG \
        [--dry-run] [--once | --interval SECONDS] [--scontrol PATH] [--sacctmgr PATH] \
        [--reservations-only] [--scavenger-qos NAME] [--scavenger-preempt-mode requeue|cancel] \
        [--department-accounts]

Tiers (docs/adapters.md has the long form and what the operator configures):
- `priority`: one whole-node reservation per window (`slurm_reservations`).
- `standard`: the account's GPU quota while the window runs, a QOS `docket-<account>`; `preemptible`: the account
  may use the scavenger QOS (`slurm_qos`). Both need accounting; `--reservations-only` makes every window a
  reservation as before tiers.

With `--department-accounts`, each full pass also makes the account tree Docket's departments (`slurm_accounts`):
an account `dept-<slug>` per department under root, each team's account under its department's, fairshare = the
weights, so Slurm's classic hierarchical fair share is Docket's.

This module holds `SlurmSync`, which hands each window to its side, and the command line; running scontrol and
sacctmgr and reading what they print is `slurm_commands`. The names below stay importable from here, as before
the program was split into those modules.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TextIO

from docket_scheduler.base import (
    DesiredCommitment,
    DesiredWindow,
    RemovalGuard,
    SyncState,
    SyncStatus,
    continued_windows,
    run_spans,
    unpublished_commitments,
)
from docket_scheduler.cli import add_sync_options, docket_client, output, run_sync, state_file
from docket_scheduler.client import DocketError, poll
from docket_scheduler.slurm_accounts import AccountTreeExecutor, team_places
from docket_scheduler.slurm_commands import (
    NEEDED_ENFORCE,
    SLURM_NAME,
    SLURM_TIME_FORMAT,
    SlurmConfig,
    SlurmError,
    SlurmTools,
    parse_config,
    parse_fields,
    slurm_time,
)
from docket_scheduler.slurm_qos import (
    PREEMPT_MODES,
    QOS_MARK,
    QOS_PREFIX,
    SCAVENGER_QOS,
    TIER_PREEMPTIBLE,
    TIER_PRIORITY,
    TIER_STANDARD,
    AccountQos,
    Qos,
    QosCommand,
    QosSettings,
    QuotaDesire,
    QuotaExecutor,
    next_boundary,
    parse_assoc,
    parse_qos,
    quota_description,
    quota_desire,
    quota_qos_name,
    quota_removals_refused,
    quota_status,
    reconcile_qos,
)
from docket_scheduler.slurm_reservations import (
    RESERVATION_PREFIX,
    START_SLACK,
    Action,
    Create,
    Delete,
    Keep,
    Report,
    Reservation,
    ReservationExecutor,
    Update,
    describe,
    nodes_needed,
    parse_reservations,
    reconcile,
    reservation_name,
    rounding_note,
    window_id_of,
)

__all__ = [
    "NEEDED_ENFORCE", "PREEMPT_MODES", "QOS_MARK", "QOS_PREFIX", "RESERVATION_PREFIX", "SCAVENGER_QOS",
    "SLURM_NAME", "SLURM_TIME_FORMAT", "START_SLACK", "TIER_PREEMPTIBLE", "TIER_PRIORITY", "TIER_STANDARD",
    "AccountQos", "Action", "Create", "Delete", "Keep", "Qos", "QosCommand", "QosSettings", "QuotaDesire",
    "Report", "Reservation", "SlurmConfig", "SlurmError", "SlurmSync", "Update",
    "build_parser", "describe", "main", "next_boundary", "nodes_needed", "parse_assoc", "parse_config",
    "parse_fields", "parse_qos", "parse_reservations", "quota_description", "quota_desire", "quota_qos_name",
    "quota_removals_refused", "quota_status", "reconcile", "reconcile_qos", "reservation_name", "rounding_note",
    "slurm_time", "window_id_of",
]


@dataclass
class SlurmSync:
    """Holds each window as its tier says, with scontrol and sacctmgr; implements base.SchedulerSync.

    `env` is the environment for scontrol and sacctmgr (SLURM_CONF and the like); TZ=UTC is always
    forced on top because reservation times are exchanged without an offset.
    `problems` lists what went wrong outside any window (an orphan that would not delete).
    `reservations` and `quotas` are the two sides it hands the windows to; `accounts` makes the department account
    tree from what `tree_source` returns (the cluster reference, `DocketClient.fetch_cluster`), when there is one.
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
    tree_source: Callable[[], Mapping[str, Any]] | None = None
    reservations: ReservationExecutor = field(init=False)
    quotas: QuotaExecutor = field(init=False)
    accounts: AccountTreeExecutor = field(init=False)

    def __post_init__(self) -> None:
        tools = SlurmTools(scontrol=self.scontrol, sacctmgr=self.sacctmgr, env=self.env, timeout_s=self.timeout_s)
        self.reservations = ReservationExecutor(tools=tools, out=self.out)
        self.quotas = QuotaExecutor(tools=tools, settings=self.qos, out=self.out)
        self.accounts = AccountTreeExecutor(tools=tools, out=self.out)

    def sync(
        self, windows: Sequence[DesiredWindow], *, now: datetime, dry_run: bool, guard: RemovalGuard | None = None,
        commitments: Sequence[DesiredCommitment] = (),
    ) -> list[SyncStatus]:
        """Reconcile and (unless dry_run) apply; one status per window, in window order.

        A run is held without a gap across week boundaries: its priority windows that meet and the weeks it is
        committed to (`commitments`) are one reservation (`slurm_reservations.reconcile`); its standard or
        preemptible windows are carried on over those weeks as quota (`base.continued_windows`).

        Priority windows (every window with `reservations_only`) are reservations; standard
        and preemptible ones are QOS state (`quotas`). Sets `next_boundary`. A reservation or quota whose
        windows left Docket's list is removed only as `guard` allows (base.RemovalGuard: never a live one, nor
        more than its share, without Docket confirming the withdrawal); a kept one is reported `failed` on its
        window when Docket still knows that window, and is named in `problems`.
        """
        guard = guard if guard is not None else RemovalGuard()
        tree_problems = self.sync_account_tree(dry_run=dry_run)
        self.problems = []
        self.next_boundary = None
        # A week published with another tier is held by its own window, not by the run's reservation or quota too.
        commitments = unpublished_commitments(windows, commitments)
        if self.reservations_only:
            reserved, quota_windows = list(windows), []
        else:
            reserved = [w for w in windows if w.tier == TIER_PRIORITY]
            quota_windows = [w for w in windows if w.tier != TIER_PRIORITY]
        statuses = self.reservations.sync(
            reserved, now=now, dry_run=dry_run, guard=guard, held_as_quota={w.id for w in quota_windows},
            commitments=commitments,
        )
        self.problems = list(self.reservations.problems)
        # A reservation whose GPUs change at an hour (a release that keeps some from then) is changed at that hour.
        changes = [change for span in run_spans(reserved, commitments) if (change := span.next_change(now))]
        if not self.reservations_only:
            quota_windows = continued_windows(quota_windows, commitments)
            statuses += self.quotas.sync(quota_windows, now=now, dry_run=dry_run, guard=guard)
            self.problems += self.quotas.problems
            if (quota_boundary := next_boundary(quota_windows, now)) is not None:
                changes.append(quota_boundary)
        self.next_boundary = min(changes, default=None)
        self.problems += tree_problems
        self.problems += [message for message in guard.refused.values() if message not in self.problems]
        desired = {w.id for w in windows}
        statuses += [SyncStatus(window, SyncState.FAILED, 0, 0, message)
                     for window, message in sorted(guard.held.items()) if window not in desired]
        return sorted(statuses, key=lambda status: status.window)


    def sync_account_tree(self, *, dry_run: bool) -> list[str]:
        """The department account tree, when the sync has a `tree_source`; what went wrong (the windows are synced
        whatever happens here)."""
        if self.tree_source is None:
            return []
        try:
            places = team_places(self.tree_source())
            self.accounts.sync(places, cluster=self.quotas.read_config().cluster, dry_run=dry_run)
        except (DocketError, SlurmError) as exc:
            return [f"account tree: {exc}"]
        return [f"account tree: {problem}" for problem in self.accounts.problems]


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
        "--department-accounts",
        action="store_true",
        help="also make the account tree Docket's departments: an account dept-<slug> per department under root, "
        "each team's account under it, fairshare = the weights (needs accounting; never deletes an account)",
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
        tree_source=client.fetch_cluster if args.department_accounts else None,
    )
    errors = (DocketError, SlurmError)

    def loop() -> None:
        poll(client, adapter, interval_s=args.interval, resync_s=args.resync, dry_run=args.dry_run, out=stream,
             errors=errors, max_backoff_s=args.max_backoff, max_remove_pct=args.max_remove_pct, state=state_file(args))

    return run_sync(args, client=client, adapter=adapter, loop=loop, errors=errors, out=stream)


if __name__ == "__main__":
    sys.exit(main())
