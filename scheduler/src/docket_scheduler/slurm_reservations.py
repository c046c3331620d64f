"""The `priority` tier as Slurm reservations: one per window, named `docket-w<window id>`.

Reservations without that prefix are never read as ours, changed or deleted. Whole nodes:
NodeCnt = ceil(gpu_count / gpus_per_node), because Slurm 22.05 cannot reserve GPUs by count (the
status says so); Features=<scheduler_label> picks the pool's nodes; Accounts=<the team's Slurm
account>. StartTime and EndTime are sent together on an inactive reservation; an active one cannot
move its start or change Features, so it is deleted and recreated. A priority window without an
account or a scheduler label gets nothing and is reported failed.

The core is pure: `reconcile()` from (desired windows, current reservations, now) to actions.
`ReservationExecutor` runs them with scontrol and reads every reservation it changed back, because
Slurm may hold less than asked and still exit 0.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TextIO

from docket_scheduler.base import (
    DesiredCommitment,
    DesiredWindow,
    Removal,
    RemovalGuard,
    RunSpan,
    SyncState,
    SyncStatus,
    run_spans,
)
from docket_scheduler.slurm_commands import (
    SlurmError,
    SlurmTools,
    parse_fields,
    parse_slurm_time,
    slurm_time,
    tool_message,
    whole_seconds,
)

RESERVATION_PREFIX = "docket-w"
_OUR_NAME = re.compile(rf"^{re.escape(RESERVATION_PREFIX)}(\d+)$")
# A window starting this soon is created with StartTime=now: a literal time would be in
# the past by the time scontrol runs, and Slurm refuses past start times.
START_SLACK = timedelta(seconds=60)


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
                    start=parse_slurm_time(fields["StartTime"]),
                    end=parse_slurm_time(fields["EndTime"]),
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


# --- actions ---------------------------------------------------------------------------


def span_nodes(span: RunSpan, at: datetime) -> int:
    """Whole nodes for the GPUs the span holds at `at` (its part in force then, or the next one)."""
    return math.ceil(span.segment_at(at).gpu_count / span.first.gpus_per_node)


@dataclass(frozen=True)
class Create:
    span: RunSpan
    start: datetime | None  # None: StartTime=now (the window has begun or is about to)
    reason: str = "missing"
    at: datetime | None = None  # the pass's instant: the node count is the span's in force then

    @property
    def window(self) -> DesiredWindow:
        return self.span.first

    @property
    def name(self) -> str:
        return reservation_name(self.span.first.id)

    def argv(self) -> list[str]:
        assert self.window.account is not None  # reconcile() rejects unmapped windows
        return [
            "create",
            "reservation",
            f"ReservationName={self.name}",
            f"StartTime={'now' if self.start is None else slurm_time(self.start)}",
            f"EndTime={slurm_time(self.span.end)}",
            f"NodeCnt={span_nodes(self.span, self.at or self.span.start)}",
            f"Features={self.window.scheduler_label}",
            f"Accounts={self.window.account}",
        ]


@dataclass(frozen=True)
class Update:
    span: RunSpan
    changes: tuple[tuple[str, str], ...]  # (scontrol key, value), in the order sent
    name: str = ""  # the reservation that holds the span (another window's of the run, once that one has ended)

    @property
    def window(self) -> DesiredWindow:
        return self.span.first

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
    span: RunSpan
    reservation: Reservation

    @property
    def window(self) -> DesiredWindow:
        return self.span.first


@dataclass(frozen=True)
class Report:
    """No scontrol call: the window is reported as is (not expressible, or already ended)."""

    window: DesiredWindow
    state: SyncState
    message: str


@dataclass(frozen=True)
class Carry:
    """A live reservation of a run whose window the list no longer holds (last week's, which ended) while the run
    goes on in a week it is committed to that is not published yet: kept, its end following the committed weeks
    (`changes`, empty when it already does). No window of the list is its; the next week's window will be."""

    name: str
    request_id: int
    changes: tuple[tuple[str, str], ...]

    def argv(self) -> list[str]:
        return ["update", f"ReservationName={self.name}", *(f"{key}={value}" for key, value in self.changes)]


Action = Create | Update | Delete | Keep | Report | Carry


def reconcile(
    desired: Sequence[DesiredWindow],
    current: Sequence[Reservation],
    now: datetime,
    *,
    held_as_quota: Collection[int] = (),
    commitments: Sequence[DesiredCommitment] = (),
    lineage: Mapping[int, int | None] | None = None,
    node_sizes: Mapping[int, int] | None = None,
) -> list[Action]:
    """The actions that make Slurm's docket-w* reservations match `desired` at `now`.

    Each span (base.run_spans: a run's windows that meet end to start, continued by its committed weeks) is ONE
    reservation, from its start to its end, so a job in it runs on across the week boundary on the same nodes; its
    NodeCnt is what the span holds at `now` (a release that keeps fewer GPUs from an hour changes it at that hour,
    never before). A span is held by the reservation of its earliest window that has one; when none of its windows
    has one, by a live reservation of ours whose window `lineage` (window id -> its request, for windows the list no
    longer holds) says was the same run's: the run's window of last week that ended, or the window a release split.
    A new span's reservation is named after its first window. A reservation carried by a committed week not published
    yet holds that week's GPUs (whole nodes of `node_sizes`: window id -> GPUs per node of its pool, for the windows
    `lineage` names), so a run that grows or shrinks at the week boundary does so in the same reservation.

    `held_as_quota` names windows that are published but held another way (a standard or
    preemptible window under QOS): a reservation left from before is deleted with that reason.

    Pure. Invariants of the result: it never names a reservation without our prefix;
    every desired window gets exactly one Create, Update, Keep or Report, through its span (a recreate is a
    Delete followed by a Create); deletes come first (they free nodes), then updates,
    then creates, then keeps and reports, each group by window id. Applying the result
    and reconciling again yields only Keeps and Reports.
    """
    lineage = dict(lineage or {})
    ours = {r.window_id: r for r in current if r.window_id is not None}
    deletes: list[Delete] = []
    updates: list[Update] = []
    creates: list[Create] = []
    rest: list[Action] = []

    expressible: list[DesiredWindow] = []
    problems: dict[int, tuple[SyncState, str]] = {}
    for window in sorted(desired, key=lambda w: w.id):
        lineage.setdefault(window.id, window.request_id)
        problem = _inexpressible(window, now)
        if problem is None:
            expressible.append(window)
        else:
            problems[window.id] = problem
    spans = run_spans(expressible, commitments)

    # Which reservation holds each span: one of its own windows' first, then one its run leaves behind.
    holder: dict[int, Reservation] = {}  # span index -> reservation
    claimed: set[int] = set()
    in_spans = {window.id for span in spans for window in span.windows}
    for index, span in enumerate(spans):
        for window in span.windows:
            if window.id in ours and window.id not in claimed:
                holder[index] = ours[window.id]
                claimed.add(window.id)
                break
    for index, span in enumerate(spans):
        if index in holder or span.request_id is None:
            continue
        behind = [r for window_id, r in sorted(ours.items())
                  if window_id not in claimed and window_id not in in_spans and r.start <= now < r.end
                  and lineage.get(window_id) == span.request_id and r.features == span.first.scheduler_label]
        if behind:
            holder[index] = behind[0]
            claimed.add(behind[0].window_id or 0)

    carries: list[Carry] = []
    # A run whose last window has ended goes on in a committed week not published yet: its reservation too.
    for window_id, left in sorted(ours.items()):
        request = lineage.get(window_id)
        if window_id in claimed or request is None or not left.start <= now < left.end:
            continue
        end = _committed_until(request, commitments, now)
        if end is not None:
            claimed.add(window_id)
            follow: tuple[tuple[str, str], ...] = (
                (("EndTime", slurm_time(end)),) if left.end != whole_seconds(end) else ())
            size = (node_sizes or {}).get(window_id)
            week = next(c for c in commitments if c.request_id == request and c.holds and c.start <= now < c.end)
            if size and (nodes := math.ceil(week.gpu_count / size)) != left.node_count:
                follow += (("NodeCnt", str(nodes)),)
            carries.append(Carry(left.name, request, follow))

    for window_id, (state, message) in sorted(problems.items()):
        own = ours.get(window_id)
        if own is not None and window_id not in claimed:
            deletes.append(Delete(own.name, reason=f"window {window_id}: {message}"))
            message += f"; deleted reservation {own.name}"
        elif own is not None:
            message += f"; its run goes on in reservation {own.name}"
        rest.append(Report(next(w for w in desired if w.id == window_id), state, message))

    for index, span in enumerate(spans):
        existing = holder.get(index)
        if existing is None:
            creates.append(Create(span, start=_create_start(span.start, now), at=now))
            continue
        active = existing.start <= now
        if existing.features != span.first.scheduler_label:
            reason = f"Features {existing.features or '(none)'} → {span.first.scheduler_label}"
        elif active and span.start > now + START_SLACK:
            reason = f"active reservation's start moved to {slurm_time(span.start)}"
        else:
            reason = ""
        if reason:
            # Slurm refuses to change Features, and StartTime once a reservation is active.
            deletes.append(Delete(existing.name, reason=reason, recreate=True))
            creates.append(Create(span, start=_create_start(span.start, now), reason=reason, at=now))
            continue
        changes = _changes(span, existing, now, active=active)
        if changes:
            updates.append(Update(span, changes=tuple(changes), name=existing.name))
        else:
            rest.append(Keep(span, existing))

    for window_id, existing in sorted(ours.items()):
        if window_id in claimed or any(d.name == existing.name for d in deletes):
            continue
        if window_id in held_as_quota:
            reason = f"window {window_id} is held as a QOS quota, not a reservation"
            deletes.append(Delete(existing.name, reason=reason))
        elif window_id in in_spans:
            reason = f"window {window_id} is held with its run in one reservation"
            deletes.append(Delete(existing.name, reason=reason))
        else:
            reason = f"window {window_id} is no longer published"
            deletes.append(Delete(existing.name, reason=reason, dropped=True))
    key = _action_window
    return [*deletes, *carries, *sorted(updates, key=key), *sorted(creates, key=key), *sorted(rest, key=key)]


def _committed_until(request: int, commitments: Sequence[DesiredCommitment], now: datetime) -> datetime | None:
    """The end of the run's held committed weeks that meet end to start from the one in force at `now`; None when
    no held commitment of the run is in force."""
    held = sorted((c for c in commitments if c.request_id == request and c.holds), key=lambda c: c.start)
    current = next((c for c in held if c.start <= now < c.end), None)
    if current is None:
        return None
    end = current.end
    for commitment in held:
        if commitment.start == end:
            end = commitment.end
    return end


def _action_window(action: Action) -> int:
    return action.window.id if isinstance(action, (Create, Update, Keep, Report)) else 0


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


def _create_start(start: datetime, now: datetime) -> datetime | None:
    return None if start <= now + START_SLACK else start


def _changes(span: RunSpan, existing: Reservation, now: datetime, *, active: bool) -> list[tuple[str, str]]:
    changes: list[tuple[str, str]] = []
    end = whole_seconds(span.end)
    if active:
        # StartTime cannot change any more; the span's start has passed as well.
        if existing.end != end:
            changes.append(("EndTime", slurm_time(end)))
    elif existing.start != whole_seconds(span.start) or existing.end != end:
        # Sent together: Slurm checks start < end against the stored other half.
        start = _create_start(span.start, now)
        changes.append(("StartTime", "now" if start is None else slurm_time(start)))
        changes.append(("EndTime", slurm_time(end)))
    nodes = span_nodes(span, now)
    if existing.node_count != nodes:
        changes.append(("NodeCnt", str(nodes)))
    if existing.accounts != {span.first.account}:
        changes.append(("Accounts", str(span.first.account)))
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
    if isinstance(action, Carry):
        change = f": scontrol {' '.join(action.argv())}" if action.changes else ""
        return f"keep {action.name}: request {action.request_id}'s run goes on in a week it is committed to{change}"
    return f"window {action.window.id}: {action.state.value}: {action.message}"


# --- executing with scontrol -----------------------------------------------------------


@dataclass
class ReservationExecutor:
    """Runs reconcile() actions with scontrol and reads each reservation it changed back.

    `problems` lists what went wrong outside any window in the last pass (an orphan that would not delete).
    """

    tools: SlurmTools = field(default_factory=SlurmTools)
    out: TextIO = field(default_factory=lambda: sys.stdout)
    problems: list[str] = field(default_factory=list)

    def list_reservations(self) -> list[Reservation]:
        result = self.tools.run_scontrol(["-o", "show", "reservation"])
        if result.returncode != 0:
            raise SlurmError(f"scontrol show reservation failed: {tool_message(result)}")
        return parse_reservations(result.stdout)

    def read_back(self, name: str) -> Reservation | None:
        result = self.tools.run_scontrol(["-o", "show", "reservation", name])
        if result.returncode != 0:
            return None
        found = [r for r in parse_reservations(result.stdout) if r.name == name]
        return found[0] if found else None

    def sync(
        self,
        windows: Sequence[DesiredWindow],
        *,
        now: datetime,
        dry_run: bool,
        guard: RemovalGuard,
        held_as_quota: Collection[int] = (),
        commitments: Sequence[DesiredCommitment] = (),
    ) -> list[SyncStatus]:
        """Reconcile the windows held as reservations and (unless dry_run) apply; one status per window named by
        an action, by window id. A reservation whose window left Docket's list is deleted only as `guard`
        allows, after the run it belonged to (`guard.request_of`) had the chance to keep it."""
        self.problems = []
        for window in sorted(windows, key=lambda w: w.id):
            print(rounding_note(window), file=self.out)
        current = self.list_reservations()
        listed = {window.id for window in windows}
        lineage: dict[int, int | None] = {}
        node_sizes: dict[int, int] = {}
        if guard.request_of is not None and any(w.request_id is not None for w in windows):
            for reservation in current:
                window_id = reservation.window_id
                if window_id is not None and window_id not in listed and reservation.start <= now < reservation.end:
                    lineage[window_id] = guard.request_of(window_id)
                    size = guard.gpus_per_node_of(window_id) if guard.gpus_per_node_of is not None else None
                    if size:
                        node_sizes[window_id] = size
        actions = reconcile(windows, current, now, held_as_quota=held_as_quota, commitments=commitments,
                            lineage=lineage, node_sizes=node_sizes)
        actions = _guard_deletes(actions, current, now=now, guard=guard)
        if dry_run:
            print("dry run: the plan below changes nothing and reports nothing", file=self.out)
            for action in actions:
                print(f"  would {describe(action)}", file=self.out)
            return [status for action in actions if not isinstance(action, (Delete, Carry))
                    for status in _predicted_statuses(action, now)]
        return self.execute(actions, now=now)

    def execute(self, actions: Sequence[Action], *, now: datetime | None = None) -> list[SyncStatus]:
        """Run the actions in order and return one status per window they name, by window id."""
        statuses: dict[int, SyncStatus] = {}
        blocked: dict[int, str] = {}  # windows whose recreate could not delete the old reservation
        for action in actions:
            print(describe(action), file=self.out)
            if isinstance(action, Delete):
                self._delete(action, blocked)
                continue
            if isinstance(action, Carry):
                if action.changes and (result := self.tools.run_scontrol(action.argv())).returncode != 0:
                    self.problems.append(f"could not carry {action.name} on: {tool_message(result)}")
                continue
            for status in self._apply(action, blocked, now=now):
                statuses[status.window] = status
                if status.state is not SyncState.IN_SYNC:
                    print(f"  window {status.window}: {status.state.value}: {status.message}", file=self.out)
        return [statuses[key] for key in sorted(statuses)]

    def _delete(self, action: Delete, blocked: dict[int, str]) -> None:
        result = self.tools.run_scontrol(action.argv())
        if result.returncode == 0:
            return
        message = f"could not delete {action.name}: {tool_message(result)}"
        print(f"  {message}", file=self.out)
        window_id = window_id_of(action.name)
        if action.recreate and window_id is not None:
            blocked[window_id] = message  # creating it again would only fail on the name
        else:
            self.problems.append(message)

    def _apply(
        self, action: Create | Update | Keep | Report, blocked: Mapping[int, str], *, now: datetime | None
    ) -> list[SyncStatus]:
        if isinstance(action, Keep):
            return _held(action.span, action.reservation, now)
        if isinstance(action, Report):
            return [_reported(action)]
        span = action.span
        if span.first.id in blocked:
            return _failed(span, blocked[span.first.id])
        result = self.tools.run_scontrol(action.argv())
        if result.returncode != 0:
            # A refused update leaves the old reservation in place: say what it still holds.
            held = self.read_back(action.name) if isinstance(action, Update) else None
            return _failed(span, tool_message(result), nodes_reserved=held.node_count if held else 0)
        return self._check(span, action.name, now)

    def _check(self, span: RunSpan, name: str, now: datetime | None) -> list[SyncStatus]:
        """Read the reservation back: Slurm may hold fewer nodes than asked and exit 0."""
        reservation = self.read_back(name)
        if reservation is None:
            return _failed(span, f"reservation {name} not found after scontrol succeeded")
        return _held(span, reservation, now)


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


def _held(span: RunSpan, reservation: Reservation, now: datetime | None) -> list[SyncStatus]:
    """One status per window of the span: what the reservation holds against what the span needs at `now`."""
    requested = span_nodes(span, now or span.start)
    across = f"; with its run in {reservation.name}, {span.describe()}" if len(span.segments) > 1 else ""
    statuses = []
    for window in span.windows:
        nodes = nodes_needed(window)
        gpus = f"{window.gpu_count} GPUs on {nodes} nodes ({nodes * window.gpus_per_node} GPUs)"
        if reservation.node_count < requested:
            statuses.append(SyncStatus(
                window=window.id, state=SyncState.SHORT, nodes_requested=nodes_needed(window),
                nodes_reserved=reservation.node_count,
                message=f"short by {requested - reservation.node_count} nodes: {gpus} asked{across}",
            ))
        else:
            statuses.append(SyncStatus(window.id, SyncState.IN_SYNC, nodes_needed(window), reservation.node_count,
                                       f"reserved {gpus}{across}"))
    return statuses


def _failed(span: RunSpan, message: str, *, nodes_reserved: int = 0) -> list[SyncStatus]:
    return [SyncStatus(window.id, SyncState.FAILED, nodes_needed(window), nodes_reserved, message)
            for window in span.windows]


def _reported(action: Report) -> SyncStatus:
    return SyncStatus(action.window.id, action.state, nodes_needed(action.window), 0, action.message)


def _predicted_statuses(action: Action, now: datetime) -> list[SyncStatus]:
    if isinstance(action, Report):
        return [_reported(action)]
    if isinstance(action, Keep):
        return _held(action.span, action.reservation, now)
    assert isinstance(action, (Create, Update))
    return [SyncStatus(window.id, SyncState.IN_SYNC, nodes_needed(window), 0, "dry run: not applied")
            for window in action.span.windows]
