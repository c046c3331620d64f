"""Apply a cluster's Kueue objects through the Kubernetes API, at every window boundary.

Runs wherever it can reach both Docket and the cluster's API server (a host with a
kubeconfig, or a Pod with a ServiceAccount), talks to both over HTTPS with the standard
library only, like slurm_sync:

    docket-kueue-sync --url URL --token TOKEN --cluster SLUG \
        [--kubeconfig PATH [--context NAME] | --in-cluster] [--dry-run] [--once | --interval SECONDS]
        [--department-cohorts]

Each pass reads the cluster's windows (`GET /api/v1/windows/`), renders the objects that hold
now (`kueue.render`: priority classes, the cohort, flavors, one ClusterQueue per team,
LocalQueues), applies each one with server-side apply (`PATCH` with
`Content-Type: application/apply-patch+yaml`, `fieldManager=docket`, `force=true`: Docket
owns these fields, a hand edit of them is overwritten), deletes the objects it labelled
for this cluster that are no longer rendered, and posts one status per window to
`POST /api/v1/windows/sync-status/`. Quotas change only at window boundaries, so the loop
sleeps until the next one (`kueue.next_change`) or `--interval`, whichever comes first.
With `--dry-run` every object is sent with `dryRun=All`: the API server validates it
(schemas, CEL rules, Kueue's webhooks) and stores nothing; nothing is deleted or reported.

The body is JSON, which is YAML, so PyYAML is needed only to read a YAML kubeconfig.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TextIO

from docket_scheduler import kueue
from docket_scheduler.base import (
    DEFAULT_MAX_REMOVE_PCT,
    DesiredCommitment,
    DesiredWindow,
    Removal,
    RemovalGuard,
    SyncState,
    SyncStatus,
    continued_windows,
)
from docket_scheduler.cli import add_sync_options, docket_client, instant, output, run_sync, state_file
from docket_scheduler.client import DocketClient, DocketError, StateFile, poll
from docket_scheduler.kube_api import (
    APPLY_CONTENT_TYPE,
    FIELD_MANAGER,
    PLURALS,
    SERVICE_ACCOUNT_DIR,
    USER_AGENT,
    KubeClient,
    KubeConfig,
    KubeError,
    add_kube_options,
    describe,
    in_cluster_config,
    kube_config,
    load_kubeconfig,
    object_path,
    status_message,
)

# Still importable from here, as before the Kubernetes API server's half moved to kube_api.
__all__ = [
    "APPLY_CONTENT_TYPE", "FIELD_MANAGER", "PLURALS", "PRUNED_KINDS", "SERVICE_ACCOUNT_DIR", "USER_AGENT",
    "KubeClient", "KubeConfig", "KubeError", "KueueSync", "build_parser", "describe", "export",
    "in_cluster_config", "load_kubeconfig", "main", "object_path", "queue_removal", "run_loop", "status_message",
]

# Deleted when no longer rendered, dependents first. Priority classes are always rendered.
PRUNED_KINDS = ("LocalQueue", "ClusterQueue", "Cohort", "ResourceFlavor")


# --- the sync -------------------------------------------------------------------------------


@dataclass
class KueueSync:
    """Renders the windows that hold at `now` and applies them; implements base.SchedulerSync.

    `next_boundary` is set by every pass: the next window start or end, when the applied
    quotas stop being true. `problems` lists what went wrong outside any window (an object
    that would not delete).
    """

    kube: KubeClient
    cluster: str
    cohort: str | None = None
    policy: kueue.KueuePolicy = field(default_factory=kueue.KueuePolicy)
    namespaces: Mapping[str, Sequence[str]] = field(default_factory=dict)
    api_version: str = "v1beta2"
    prune: bool = True
    out: TextIO = field(default_factory=lambda: sys.stdout)
    # With --department-cohorts: Docket's cluster reference (DocketClient.fetch_cluster), read at every pass.
    tree_source: Callable[[], Mapping[str, Any]] | None = None
    next_boundary: datetime | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def label_selector(self) -> str:
        return f"{kueue.MANAGED_BY_KEY}=docket,{kueue.CLUSTER_LABEL}={self.cluster}"

    def sync(
        self, windows: Sequence[DesiredWindow], *, now: datetime, dry_run: bool, guard: RemovalGuard | None = None,
        commitments: Sequence[DesiredCommitment] = (),
    ) -> list[SyncStatus]:
        """Apply what holds at `now` (validate only, with dry_run); one status per window, by id.

        A run's window is carried on over the weeks the run is committed to (`base.continued_windows`): its quota
        holds across the week boundary without a gap, published or not, and a published week's window stands for
        its commitment (never counted twice).

        A ClusterQueue no longer rendered is deleted only as `guard` allows (base.RemovalGuard): one that holds
        quota now, or more than the guard's share of the queues, needs Docket to confirm that its windows were
        withdrawn. When one is kept, nothing else is pruned in that pass (its flavors, cohort and LocalQueues
        stay with it), and its windows that Docket still knows are reported failed."""
        guard = guard if guard is not None else RemovalGuard()
        self.problems = []
        windows = continued_windows(windows, commitments)
        self.next_boundary = kueue.next_change(windows, at=now)
        departments = kueue.department_tree(self.tree_source()) if self.tree_source is not None else None
        try:
            objects = kueue.render(
                windows, at=now, cluster=self.cluster, cohort=self.cohort, policy=self.policy,
                namespaces=self.namespaces, api_version=self.api_version, departments=departments,
            )
        except ValueError as exc:
            # A team or pool label with no valid Kubernetes name, an unknown tier: apply nothing, say why.
            print(f"nothing applied: {exc}", file=self.out)
            return [
                SyncStatus(w.id, SyncState.FAILED, _nodes(w), 0, f"nothing applied: {exc}")
                for w in sorted(windows, key=lambda w: w.id)
            ]
        if dry_run:
            print("dry run: every object is sent with dryRun=All (validated, not stored); nothing is deleted "
                  "or reported", file=self.out)
        refused: dict[tuple[str, str], str] = {}
        for obj in objects:
            try:
                status, _held = self.kube.apply(obj, dry_run=dry_run)
            except KubeError as exc:
                refused[(obj["kind"], obj["metadata"]["name"])] = f"{describe(obj)}: {exc}"
                print(f"refused {describe(obj)}: {exc}", file=self.out)
                if obj["kind"] == "LocalQueue":  # no window depends on it, but its team cannot submit there
                    self.problems.append(f"refused {describe(obj)}: {exc}")
                if exc.status in (0, 401):  # unreachable or not signed in: every other call fails the same way
                    for rest in objects:
                        refused.setdefault((rest["kind"], rest["metadata"]["name"]), f"{describe(obj)}: {exc}")
                    break
                continue
            verb = "would apply" if dry_run else ("created" if status == 201 else "applied")
            print(f"{verb} {describe(obj)}{_summary(obj)}", file=self.out)
        if self.prune and not refused:
            self._prune(objects, dry_run=dry_run, now=now, guard=guard)
        cohort = next(o for o in objects if o["kind"] == "Cohort")["metadata"]["name"]  # the cluster's, first
        queues = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ClusterQueue"}
        statuses = [
            self._status(window, now=now, cohort=cohort, queues=queues, refused=refused, dry_run=dry_run)
            for window in sorted(windows, key=lambda w: w.id)
        ]
        self.problems += list(guard.refused.values())
        desired = {w.id for w in windows}
        statuses += [SyncStatus(window, SyncState.FAILED, 0, 0, message)
                     for window, message in sorted(guard.held.items()) if window not in desired]
        if self.next_boundary:
            print(f"next window boundary {_iso(self.next_boundary)}: the quotas change then", file=self.out)
        return statuses

    def _prune(
        self, objects: Sequence[Mapping[str, Any]], *, dry_run: bool, now: datetime, guard: RemovalGuard
    ) -> None:
        """Delete our objects of this cluster that are no longer rendered (a team or pool that left), as far
        as `guard` allows the ClusterQueues to go; if it keeps one, nothing is deleted."""
        api = f"{kueue.API_GROUP}/{self.api_version}"
        wanted = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in objects}
        found: dict[str, list[dict[str, Any]]] = {}
        for kind in PRUNED_KINDS:
            try:
                found[kind] = self.kube.list(api, kind, label_selector=self.label_selector)
            except KubeError as exc:
                self.problems.append(f"cannot list {kind}s to prune: {exc}")
                found[kind] = []
        queues = [q for q in found["ClusterQueue"] if (q.get("metadata") or {}).get("name")]
        removals = [queue_removal(q, now=now) for q in queues
                    if ("ClusterQueue", None, q["metadata"]["name"]) not in wanted]
        if len(guard.allowed(removals, managed=len(queues))) < len(removals):
            print("nothing pruned: a ClusterQueue that is no longer rendered was kept", file=self.out)
            return
        for kind in PRUNED_KINDS:
            for item in found[kind]:
                metadata = item.get("metadata") or {}
                key = (kind, metadata.get("namespace"), metadata.get("name"))
                if key in wanted or not metadata.get("name"):
                    continue
                stale = {"apiVersion": api, "kind": kind, "metadata": metadata}
                if dry_run:
                    print(f"would delete {describe(stale)}: no longer rendered", file=self.out)
                    continue
                try:
                    self.kube.delete(stale)
                except KubeError as exc:
                    self.problems.append(f"could not delete {describe(stale)}: {exc}")
                    print(f"could not delete {describe(stale)}: {exc}", file=self.out)
                else:
                    print(f"deleted {describe(stale)}: no longer rendered", file=self.out)

    def _status(
        self,
        window: DesiredWindow,
        *,
        now: datetime,
        cohort: str,
        queues: Mapping[str, Mapping[str, Any]],
        refused: Mapping[tuple[str, str], str],
        dry_run: bool,
    ) -> SyncStatus:
        nodes = _nodes(window)
        if window.end <= now:
            return SyncStatus(window.id, SyncState.IN_SYNC, nodes, 0, "window has ended; nothing to hold")
        flavor = kueue.flavor_name(window)
        queue_name = kueue.cluster_queue_name(window.team)
        spec = (queues.get(queue_name) or {}).get("spec") or {}
        cohort = spec.get("cohortName") or spec.get("cohort") or cohort  # the team's department's, if it has one
        needed = [
            ("WorkloadPriorityClass", kueue.priority_class_name(window.tier)),
            ("Cohort", cohort),
            ("ResourceFlavor", flavor),
            ("ClusterQueue", queue_name),
        ]
        failures = [refused[key] for key in needed if key in refused]
        if failures:
            return SyncStatus(window.id, SyncState.FAILED, nodes, 0, "; ".join(dict.fromkeys(failures)))
        prefix = "dry run, validated: " if dry_run else ""
        if not window.is_active(now):
            return SyncStatus(
                window.id, SyncState.IN_SYNC, nodes, 0,
                f"{prefix}starts {_iso(window.start)}: ClusterQueue {queue_name} gets its {window.gpu_count} "
                f"GPUs on {flavor} then (kueue_sync applies at every window boundary)",
            )
        [group] = queues[queue_name]["spec"]["resourceGroups"]
        [resource] = next(f for f in group["flavors"] if f["name"] == flavor)["resources"]
        if window.tier == "preemptible":
            limit = resource.get("borrowingLimit")
            may = f"borrowingLimit {limit}" if limit is not None else "no borrowingLimit: any idle GPU too"
            held = (f"{window.gpu_count} GPUs on {flavor} to borrow in cohort {cohort} (ClusterQueue {queue_name}, "
                    f"{may}); preempted when owners reclaim")
        else:
            held = (f"{window.gpu_count} GPUs on {flavor} in ClusterQueue {queue_name} (nominalQuota "
                    f"{resource['nominalQuota']}, lendingLimit {resource['lendingLimit']}, cohort {cohort})")
        return SyncStatus(window.id, SyncState.IN_SYNC, nodes, nodes, prefix + held)


def queue_removal(queue: Mapping[str, Any], *, now: datetime) -> Removal:
    """A listed ClusterQueue as a removal: live while a flavor has nominal quota, ended when every window its
    `docket.io/windows` annotation names has ended, with those windows to ask Docket about."""
    metadata = queue.get("metadata") or {}
    try:
        held = json.loads((metadata.get("annotations") or {}).get(f"{kueue.ANNOTATION_PREFIX}windows") or "[]")
        windows = [w for w in held if isinstance(w, dict) and isinstance(w.get("id"), int)]
        ends = [datetime.fromisoformat(str(w["end"]).replace("Z", "+00:00")) for w in windows]
    except (ValueError, TypeError, KeyError):
        windows, ends = [], []
    quota = any(
        (resource.get("nominalQuota") or 0) not in (0, "0")
        for group in (queue.get("spec") or {}).get("resourceGroups") or []
        for flavor in group.get("flavors") or []
        for resource in flavor.get("resources") or []
    )
    ended = bool(ends) and all(end <= now for end in ends)
    return Removal(str(metadata.get("name")), frozenset(w["id"] for w in windows), live=quota and not ended,
                   ended=ended)


def _nodes(window: DesiredWindow) -> int:
    """Kueue counts GPUs, not nodes: the status's node columns carry whole-node equivalents."""
    return math.ceil(window.gpu_count / window.gpus_per_node)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _summary(obj: Mapping[str, Any]) -> str:
    """The numbers of an object, for the log: value, or GPUs per flavor."""
    if obj["kind"] == "WorkloadPriorityClass":
        return f" (value {obj['value']})"
    groups = obj.get("spec", {}).get("resourceGroups") or []
    parts = []
    for group in groups:
        for flavor in group["flavors"]:
            numbers = {k: v for k, v in flavor["resources"][0].items() if k != "name"}
            parts.append(f"{flavor['name']}: " + ", ".join(f"{k} {v}" for k, v in numbers.items()))
    return f" ({'; '.join(parts)})" if parts else ""


# --- the loop -------------------------------------------------------------------------------


def run_loop(
    docket: DocketClient,
    adapter: KueueSync,
    *,
    interval_s: float,
    resync_s: float,
    dry_run: bool,
    passes: int | None = None,
    sleep: Callable[[float], None] = time.sleep,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    out: TextIO = sys.stdout,
    max_backoff_s: float = 900.0,
    max_remove_pct: int = DEFAULT_MAX_REMOVE_PCT,
    rng: Callable[[float, float], float] = random.uniform,
    state: StateFile | None = None,
) -> None:
    """Passes forever (or `passes` times): `client.poll`, which also wakes at the next window boundary
    (Kueue has no time windows: the quotas change though the windows do not)."""
    poll(docket, adapter, interval_s=interval_s, resync_s=resync_s, dry_run=dry_run, passes=passes, sleep=sleep,
         wall_clock=now, out=out, errors=(DocketError, KubeError), max_backoff_s=max_backoff_s,
         max_remove_pct=max_remove_pct, wake_at_boundary=True, rng=rng, state=state)


# --- command line ---------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="docket-kueue-sync",
        description="Apply this cluster's Kueue objects (quotas, cohort, priority classes) from its Docket windows.",
    )
    add_sync_options(parser, interval_s=300.0,
                     interval_help="longest sleep between passes (300); the loop also wakes at every window boundary")
    add_kube_options(parser)
    parser.add_argument("--cohort", help="the Cohort's name (default: docket-<cluster>)")
    parser.add_argument("--standard-lend-pct", type=int, default=100, metavar="PCT",
                        help="share of a team's standard GPUs lent to the cohort while idle (100)")
    parser.add_argument("--priority-lend-pct", type=int, default=0, metavar="PCT",
                        help="share of a team's priority GPUs lent while idle (0: a hard guarantee)")
    parser.add_argument("--borrowing", choices=kueue.BORROWING_MODES, default="elastic",
                        help="which queues may borrow idle GPUs: elastic (default: those with a preemptible window, "
                             "any idle GPU), granted (exactly their preemptible GPUs), any (every queue)")
    parser.add_argument("--namespace", action="append", default=[], metavar="TEAM=NAMESPACE",
                        help="render a LocalQueue `docket` in NAMESPACE for TEAM's ClusterQueue (repeatable)")
    parser.add_argument("--api-version", choices=kueue.API_VERSIONS, default="v1beta2",
                        help="Kueue API version (default v1beta2; v1beta1 for a Kueue that serves only that)")
    parser.add_argument("--department-cohorts", action="store_true",
                        help="put each department's teams' ClusterQueues in a Cohort per department under the "
                             "cluster's (its fairSharing weight the department's), from Docket's org chart")
    parser.add_argument("--no-prune", action="store_true", help="never delete objects that are no longer rendered")
    parser.add_argument("--export", action="store_true",
                        help="print the objects that hold at --at as YAML and exit: no Kubernetes API server is "
                             "used, nothing is applied or reported (needs PyYAML: docket-scheduler[kueue])")
    parser.add_argument("--at", type=instant, metavar="TIME",
                        help="with --export: the instant, ISO 8601 with an offset (default: now)")
    return parser


def _namespaces(pairs: Sequence[str], parser: argparse.ArgumentParser) -> dict[str, list[str]]:
    mapping: dict[str, list[str]] = {}
    for pair in pairs:
        team, sep, namespace = pair.partition("=")
        if not sep or not team or not namespace:
            parser.error(f"--namespace takes TEAM=NAMESPACE, got {pair!r}")
        mapping.setdefault(team, []).append(namespace)
    return mapping


def main(
    argv: Sequence[str] | None = None,
    *,
    out: TextIO | None = None,
    now: Callable[[], datetime] | None = None,
) -> int:
    """Exit codes in --once mode (cli.run_sync): 0 every window in sync; 1 a window failed (the API server
    refused an object or could not be reached) or an object would not delete or was kept; 2 Docket could not be
    used. `--export` prints the objects as YAML and exits 0 (2 when Docket could not be used). A bad option or
    an unusable kubeconfig exits 2 through argparse."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        policy = kueue.KueuePolicy(
            standard_lend_pct=args.standard_lend_pct,
            priority_lend_pct=args.priority_lend_pct,
            borrowing=args.borrowing,
        )
    except ValueError as exc:
        parser.error(str(exc))
    docket = docket_client(parser, args)
    stream = output(out)
    clock = now or (lambda: datetime.now(UTC))
    namespaces = _namespaces(args.namespace, parser)
    if args.export:
        return export(docket, at=args.at or clock(), cohort=args.cohort, policy=policy, namespaces=namespaces,
                      api_version=args.api_version, out=stream)
    try:
        config = kube_config(args)
    except KubeError as exc:
        parser.error(str(exc))
    print(f"Kubernetes API server {config.server} from {config.source}", file=stream)
    adapter = KueueSync(
        kube=KubeClient(config), cluster=args.cluster, cohort=args.cohort, policy=policy,
        namespaces=namespaces, api_version=args.api_version, prune=not args.no_prune, out=stream,
        tree_source=docket.fetch_cluster if args.department_cohorts else None,
    )

    def loop() -> None:
        run_loop(docket, adapter, interval_s=args.interval, resync_s=args.resync, dry_run=args.dry_run,
                 now=clock, out=stream, max_backoff_s=args.max_backoff, max_remove_pct=args.max_remove_pct,
                 state=state_file(args))

    return run_sync(args, client=docket, adapter=adapter, loop=loop, errors=(DocketError, KubeError), out=stream,
                    now=clock())


def export(docket: DocketClient, *, at: datetime, cohort: str | None, policy: kueue.KueuePolicy,
           namespaces: Mapping[str, Sequence[str]], api_version: str, out: TextIO) -> int:
    """Print the Kueue objects that hold at `at` as YAML, for a look or `kubectl apply --server-side -f -`: the
    same objects a pass applies, from the windows of the weeks not ended at `at`. Needs PyYAML (the `kueue` extra)."""
    try:
        snapshot = docket.fetch_windows(ends_after=at)
    except DocketError as exc:
        print(f"export failed: {exc}", file=sys.stderr)
        return 2
    windows = continued_windows(snapshot.windows, snapshot.commitments) if snapshot else []
    try:
        text = kueue.render_yaml(windows, at=at, cluster=docket.cluster, cohort=cohort, policy=policy,
                                 namespaces=namespaces, api_version=api_version)
    except ValueError as exc:
        print(f"export failed: {exc}", file=sys.stderr)
        return 1
    out.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
