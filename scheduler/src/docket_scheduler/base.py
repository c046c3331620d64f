"""What every scheduler adapter shares: desired windows in, per-window statuses out.

An adapter turns the published windows of one cluster (as the windows API serves them)
into that scheduler's own objects: Slurm reservations and QOS (`slurm_sync`), Kueue
ClusterQueues (`kueue_sync`). Each starts from the same `DesiredWindow`; an adapter that
changes a live scheduler implements `SchedulerSync` and reports one `SyncStatus` per window.

Standard library only (Python 3.11+): the package runs on scheduler hosts that have no Django.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol


class WindowFormatError(ValueError):
    """A window from the API does not have the contract's shape; nothing may be synced from it."""


# The sync-status endpoint refuses a longer message, and one refused status loses the whole report.
MESSAGE_MAX_CHARS = 2000


class SyncState(enum.StrEnum):
    """The states the sync-status endpoint accepts."""

    IN_SYNC = "in_sync"
    SHORT = "short"  # the scheduler holds fewer resources than the window asked for
    FAILED = "failed"  # the scheduler holds nothing for the window


@dataclass(frozen=True)
class DesiredWindow:
    """One published window of the cluster, as the scheduler should hold it.

    Invariants (checked by `from_api`): `start < end`, both timezone-aware UTC;
    `gpu_count > 0`; `gpus_per_node > 0`. `account` is None when Docket has no
    scheduler account mapped for the team; `scheduler_label` may be empty when the pool
    has none configured. Adapters decide what they can do with such a window.
    """

    id: int
    plan_version: int
    cluster: str
    pool: str
    gpu_model: str
    scheduler_label: str
    gpu_count: int
    gpus_per_node: int
    start: datetime
    end: datetime
    team: str
    account: str | None
    tier: str
    request_id: int | None
    # GPUs the elastic policy offers to preemptible work now (0 from an older Docket that does not send it).
    lendable_gpus: int = 0
    # GPUs of this preemptible window the chair let it take from the pool's cold standby (0 from a Docket before 1.3).
    standby_gpus: int = 0

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> DesiredWindow:
        """Parse one element of the windows API's `results`; raise WindowFormatError if malformed."""
        try:
            window = cls(
                id=_int(data, "id"),
                plan_version=_int(data, "plan_version"),
                cluster=_str(data, "cluster"),
                pool=_str(data, "pool"),
                gpu_model=_str(data, "gpu_model"),
                scheduler_label=_str(data, "scheduler_label", allow_empty=True),
                gpu_count=_int(data, "gpu_count"),
                gpus_per_node=_int(data, "gpus_per_node"),
                start=parse_utc(_str(data, "start")),
                end=parse_utc(_str(data, "end")),
                team=_str(data, "team"),
                account=_str(data, "account") if data.get("account") is not None else None,
                tier=_str(data, "tier"),
                request_id=_int(data, "request_id") if data.get("request_id") is not None else None,
                lendable_gpus=_int(data, "lendable_gpus") if data.get("lendable_gpus") is not None else 0,
                standby_gpus=_int(data, "standby_gpus") if data.get("standby_gpus") is not None else 0,
            )
        except WindowFormatError as exc:
            raise WindowFormatError(f"window {data.get('id', '?')}: {exc}") from None
        if window.gpu_count <= 0 or window.gpus_per_node <= 0:
            raise WindowFormatError(f"window {window.id}: gpu_count and gpus_per_node must be positive")
        if not 0 <= window.lendable_gpus <= window.gpu_count:
            raise WindowFormatError(f"window {window.id}: lendable_gpus must be from 0 to gpu_count")
        if not 0 <= window.standby_gpus <= window.gpu_count or (window.standby_gpus and window.tier != "preemptible"):
            raise WindowFormatError(f"window {window.id}: standby_gpus must be from 0 to gpu_count, on a preemptible "
                                    "window only")
        if window.end <= window.start:
            raise WindowFormatError(f"window {window.id}: end {window.end} is not after start {window.start}")
        return window

    def is_active(self, at: datetime) -> bool:
        """True while the window holds its GPUs: start <= at < end."""
        return self.start <= at < self.end


def parse_windows(results: Sequence[Mapping[str, Any]]) -> list[DesiredWindow]:
    """Parse the API's `results`, all or nothing, and refuse duplicate window ids.

    All or nothing because adapters delete what is not desired: a window silently
    dropped from a half-understood plan would delete its scheduler objects.
    """
    windows = [DesiredWindow.from_api(item) for item in results]
    seen: set[int] = set()
    for window in windows:
        if window.id in seen:
            raise WindowFormatError(f"window {window.id} appears twice")
        seen.add(window.id)
    return windows


# The states of a commitment that still hold its GPUs (the windows API: committed, confirmed, withheld, released).
HELD_COMMITMENT_STATES = frozenset({"committed", "confirmed"})


@dataclass(frozen=True)
class DesiredCommitment:
    """A later week of a run over several weeks, as the windows API lists it beside the windows (`commitments`).

    It continues the run's window of the week before from the week's first hour; once its week is published, a
    window of that week's plan (same `request_id`) stands for it. Only `committed` and `confirmed` hold GPUs."""

    id: int
    week: str
    pool: str
    gpu_count: int
    start: datetime
    end: datetime
    team: str
    account: str | None
    state: str
    request_id: int

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> DesiredCommitment:
        """Parse one element of the windows API's `commitments`; raise WindowFormatError if malformed."""
        try:
            commitment = cls(
                id=_int(data, "id"), week=_str(data, "week"), pool=_str(data, "pool"),
                gpu_count=_int(data, "gpu_count"), start=parse_utc(_str(data, "start")),
                end=parse_utc(_str(data, "end")), team=_str(data, "team"),
                account=_str(data, "account") if data.get("account") is not None else None,
                state=_str(data, "state"), request_id=_int(data, "request_id"),
            )
        except WindowFormatError as exc:
            raise WindowFormatError(f"commitment {data.get('id', '?')}: {exc}") from None
        if commitment.gpu_count <= 0 or commitment.end <= commitment.start:
            raise WindowFormatError(f"commitment {commitment.id}: needs GPUs and an end after its start")
        return commitment

    @property
    def holds(self) -> bool:
        return self.state in HELD_COMMITMENT_STATES


def parse_commitments(items: Sequence[Mapping[str, Any]]) -> list[DesiredCommitment]:
    """Parse the API's `commitments`, all or nothing (a run half understood could be cut at a week boundary)."""
    return [DesiredCommitment.from_api(item) for item in items]


@dataclass(frozen=True)
class Segment:
    """Part of a run span: `gpu_count` GPUs over [start, end); from a window, or from a commitment (window None)."""

    start: datetime
    end: datetime
    gpu_count: int
    window: DesiredWindow | None = None


@dataclass(frozen=True)
class RunSpan:
    """What a scheduler holds as one object, without a gap: the windows of one request that meet end to start (a
    run's weeks, a window split by a release) and the held commitments that continue them.

    Invariants (`run_spans`): `segments` by start, each starting where the one before ends; `windows` the windows
    among them, at least one (a commitment alone is not held: its week's window will be); a window without a
    request is a span of its own."""

    segments: tuple[Segment, ...]

    @property
    def windows(self) -> tuple[DesiredWindow, ...]:
        return tuple(s.window for s in self.segments if s.window is not None)

    @property
    def first(self) -> DesiredWindow:
        return self.windows[0]

    @property
    def request_id(self) -> int | None:
        return self.first.request_id

    @property
    def start(self) -> datetime:
        return self.segments[0].start

    @property
    def end(self) -> datetime:
        return self.segments[-1].end

    def segment_at(self, at: datetime) -> Segment:
        """The segment in force at `at`: the one running then, else the next to start, else the last."""
        for segment in self.segments:
            if at < segment.end:
                return segment
        return self.segments[-1]

    def next_change(self, after: datetime) -> datetime | None:
        """The first segment start after `after` where the GPU count changes (the scheduler must act then)."""
        for before, segment in zip(self.segments, self.segments[1:], strict=False):
            if segment.start > after and segment.gpu_count != before.gpu_count:
                return segment.start
        return None

    def describe(self) -> str:
        weeks = len(self.segments)
        return (f"{self.start.strftime('%Y-%m-%dT%H:%M:%SZ')} to {self.end.strftime('%Y-%m-%dT%H:%M:%SZ')}"
                + (f" in {weeks} parts without a gap" if weeks > 1 else ""))


def run_spans(windows: Sequence[DesiredWindow], commitments: Sequence[DesiredCommitment] = ()) -> list[RunSpan]:
    """The windows as spans held whole: a request's windows on one pool, tier and account that meet end to start
    are one span, continued by its held commitments (committed or confirmed) on that pool that start where it ends
    and whose week no window of the request covers yet. Pure; spans by start, then first window id."""
    by_run: dict[tuple[Any, ...], list[DesiredWindow]] = {}
    for window in sorted(windows, key=lambda w: (w.start, w.id)):
        key = ((window.request_id, window.pool, window.tier, window.account) if window.request_id is not None
               else ("window", window.id))
        by_run.setdefault(key, []).append(window)
    covered: dict[int, list[DesiredWindow]] = {}
    for window in windows:
        if window.request_id is not None:
            covered.setdefault(window.request_id, []).append(window)
    spans: list[RunSpan] = []
    for run in by_run.values():
        chains: list[list[Segment]] = []
        for window in run:
            segment = Segment(window.start, window.end, window.gpu_count, window)
            if chains and chains[-1][-1].end == window.start:
                chains[-1].append(segment)
            else:
                chains.append([segment])
        first = run[0]
        continuing = sorted(
            (c for c in commitments
             if first.request_id is not None and c.request_id == first.request_id and c.holds and c.pool == first.pool
             and not any(w.start < c.end and c.start < w.end for w in covered.get(c.request_id, ()))),
            key=lambda c: c.start,
        )
        for chain in chains:
            for commitment in continuing:
                if commitment.start == chain[-1].end:
                    chain.append(Segment(commitment.start, commitment.end, commitment.gpu_count))
        spans += [RunSpan(tuple(chain)) for chain in chains]
    return sorted(spans, key=lambda span: (span.start, span.first.id))


def unpublished_commitments(
    windows: Sequence[DesiredWindow], commitments: Sequence[DesiredCommitment]
) -> list[DesiredCommitment]:
    """The commitments whose week no window of their run covers (a published week's window stands for its
    commitment, whatever its tier): what an adapter that splits the windows by tier hands each side."""
    return [c for c in commitments
            if not any(w.request_id == c.request_id and w.start < c.end and c.start < w.end for w in windows)]


def continued_windows(
    windows: Sequence[DesiredWindow], commitments: Sequence[DesiredCommitment] = ()
) -> list[DesiredWindow]:
    """The windows, each carried on over the commitments that continue it with the same GPUs (`run_spans`): an
    adapter that holds what is in force at an instant (a quota) keeps a run's GPUs across the week boundary, whether
    the next week is published yet or not, and never counts a week twice (a published week's window stands for its
    commitment). Same order; only `end` changes."""
    carried = {window.id: window for window in windows}
    for span in run_spans(windows, commitments):
        last = span.windows[-1]
        end = last.end
        for segment in span.segments[span.segments.index(next(s for s in span.segments if s.window is last)) + 1:]:
            if segment.gpu_count != last.gpu_count:
                break
            end = segment.end
        if end != last.end:
            carried[last.id] = dataclasses.replace(last, end=end)
    return [carried[window.id] for window in windows]


@dataclass(frozen=True)
class SyncStatus:
    """How the scheduler holds one window after a sync; the body of sync-status, per window."""

    window: int
    state: SyncState
    nodes_requested: int
    nodes_reserved: int
    message: str = ""

    def to_api(self) -> dict[str, Any]:
        message = self.message
        if len(message) > MESSAGE_MAX_CHARS:
            message = message[: MESSAGE_MAX_CHARS - 1] + "…"
        return {
            "window": self.window,
            "state": self.state.value,
            "nodes_requested": self.nodes_requested,
            "nodes_reserved": self.nodes_reserved,
            "message": message,
        }


class Withdrawal(enum.Enum):
    """What Docket says of a window whose scheduler object a sync is about to remove."""

    WITHDRAWN = "withdrawn"  # a plan version withdrew it: removing its object is what the plan says
    HELD = "held"  # Docket still holds it (it was only left out of the list)
    UNKNOWN = "unknown"  # Docket does not know it (an old backup, another database) or could not be asked


@dataclass(frozen=True)
class Removal:
    """A scheduler object a sync would remove because Docket's list no longer holds its windows.

    `live`: it holds resources now (an active reservation, a quota in force). `ended`: every window it was
    made for has ended (removing it loses nothing). `windows`: the windows it was made for (empty when the
    object does not say)."""

    name: str
    windows: frozenset[int]
    live: bool
    ended: bool = False


# By default a pass may remove at most half of what the sync manages without Docket confirming each window.
DEFAULT_MAX_REMOVE_PCT = 50


@dataclass
class RemovalGuard:
    """Decides which removals a pass may make: the one rule for every adapter.

    A removal is *guarded* when its object is live, or when the pass would remove more than `max_remove_pct`
    percent of the objects the adapter manages (every removal of that pass is then guarded: an empty or
    truncated list from Docket looks exactly like this). The removal of an object whose windows have all
    ended is never guarded and not counted. A guarded removal goes ahead only when Docket,
    asked about each of its windows (`check`, the window's own endpoint), says a newer plan version withdrew
    it. Without `check` every guarded removal is refused. `refused` collects, per pass, the windows
    whose objects were kept and why; `held` those of them Docket still knows (a status can be reported).

    Before any removal, an adapter hands a live object whose window left the list to the run that window belonged
    to, when the run goes on (`request_of`: the request of a window the list no longer holds, an ended or superseded
    one, from the window's own endpoint; None when Docket does not say): the run keeps its object across a week
    boundary or a release instead of losing it. `gpus_per_node_of` gives the GPUs per node of such a window's pool
    (known once `request_of` asked; None otherwise), so the object can hold the committed week's GPUs.
    """

    max_remove_pct: int = DEFAULT_MAX_REMOVE_PCT
    check: Callable[[int], tuple[Withdrawal, str]] | None = None
    request_of: Callable[[int], int | None] | None = None
    gpus_per_node_of: Callable[[int], int | None] | None = None
    refused: dict[str, str] = field(default_factory=dict)
    held: dict[int, str] = field(default_factory=dict)

    def allowed(self, removals: Sequence[Removal], *, managed: int) -> list[Removal]:
        """The removals this pass may make; records the others in `refused` (object name -> why kept)."""
        allowed = [removal for removal in removals if removal.ended]
        pending = [removal for removal in removals if not removal.ended]
        too_many = len(pending) * 100 > self.max_remove_pct * max(managed, 1)
        answers: dict[int, tuple[Withdrawal, str]] = {}
        for removal in pending:
            if not (too_many or removal.live):
                allowed.append(removal)
                continue
            why = "it is live" if removal.live else (
                f"the pass would remove {len(pending)} of the {managed} objects it manages "
                f"(more than {self.max_remove_pct}%)")
            if not removal.windows:
                self.refused[removal.name] = f"kept {removal.name}: {why}, and it names no window to ask Docket about"
                continue
            problems = []
            for window in sorted(removal.windows):
                if window not in answers:
                    answers[window] = self.check(window) if self.check else (
                        Withdrawal.UNKNOWN, f"window {window}: no Docket to confirm its withdrawal")
                state, detail = answers[window]
                if state is not Withdrawal.WITHDRAWN:
                    problems.append((window, state, detail))
            if not problems:
                allowed.append(removal)
                continue
            message = (f"kept {removal.name}: {why}, and Docket does not say its window was withdrawn ("
                       + "; ".join(detail for _w, _s, detail in problems) + ")")
            self.refused[removal.name] = message
            for window, state, _detail in problems:
                if state is Withdrawal.HELD:
                    self.held[window] = message
        return allowed


class SchedulerSync(Protocol):
    """An adapter that makes a live scheduler hold exactly the desired windows.

    `sync` must be idempotent (a second call with the same windows changes nothing),
    touch only the objects the adapter itself created, and return exactly one status per
    desired window, plus a `failed` one per window in `guard.held` (an object kept because Docket left its
    window out of the list without withdrawing it). Every removal of an object whose window is no longer in the
    list goes through `guard.allowed`. With `dry_run` it prints what it would do and changes nothing.
    `commitments` (the later weeks of runs) continue the windows they meet (`run_spans`): a run is held without a
    gap across a week boundary.
    """

    def sync(
        self, windows: Sequence[DesiredWindow], *, now: datetime, dry_run: bool, guard: RemovalGuard | None = None,
        commitments: Sequence[DesiredCommitment] = (),
    ) -> list[SyncStatus]: ...


def parse_whole_number(text: str | None, *, max_digits: int = 18) -> int | None:
    """`text` as a whole number when it is ASCII digits only (1 to `max_digits` of them), else None.

    `str.isdigit()` is not this test: it takes "²" and other digits that `int()` refuses, so a check with it still lets
    a ValueError (a 500, a crash) through. Every whole number read from outside (a request, a scheduler's output, a
    task id) is parsed here; standard library only, like the rest of the scheduler-side code."""
    if text is None or not 0 < len(text) <= max_digits or not (text.isascii() and text.isdigit()):
        return None
    return int(text)


def parse_utc(value: str) -> datetime:
    """Parse an ISO 8601 timestamp with an offset ("Z" accepted) into an aware UTC datetime."""
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise WindowFormatError(f"{value!r} is not an ISO 8601 timestamp") from None
    if parsed.tzinfo is None:
        raise WindowFormatError(f"{value!r} has no UTC offset")
    return parsed.astimezone(UTC)


def _int(data: Mapping[str, Any], key: str) -> int:
    value = data.get(key)
    # bool is an int in Python; a true/false here is a malformed payload, not 1/0.
    if not isinstance(value, int) or isinstance(value, bool):
        raise WindowFormatError(f"{key} must be an integer, got {value!r}")
    return value


def _str(data: Mapping[str, Any], key: str, *, allow_empty: bool = False) -> str:
    value = data.get(key)
    if value is None and allow_empty:
        return ""
    if not isinstance(value, str) or (not value and not allow_empty):
        raise WindowFormatError(f"{key} must be a non-empty string, got {value!r}")
    return value
