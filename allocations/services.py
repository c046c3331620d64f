"""Every write of the allocations app: publishing plans, scheduler clients, usage and sync status.

One function per operation; the pages, the API, the management commands and the committee's
publishing glue all call these.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Count, Max, Min
from django.utils import timezone
from django.utils.translation import gettext as _

from allocations import selectors, signals, usage_fit
from allocations.engine import EngineWindow, Explanation
from allocations.explanations import explanation_text, reasons_as_json
from allocations.models import (
    AllocationPlan,
    AllocationWindow,
    Cluster,
    ClusterAccount,
    GpuPool,
    PlanExplanation,
    PlanSequence,
    SchedulerClient,
    SyncState,
    Team,
    UsageRecord,
    WindowSyncStatus,
    WindowTier,
    WindowWithdrawal,
)
from core.locks import write_transaction
from core.tokens import token_hash, token_new

# "Docket scheduler": lets the authentication class tell its tokens from other kinds.
TOKEN_PREFIX = "dks_"  # noqa: S105 (a prefix, not a secret)
TOKEN_PREFIX_SHOWN = 12  # characters of the token kept in clear, to tell tokens apart
LAST_SEEN_RESOLUTION = timedelta(minutes=1)  # write last_seen_at at most this often per client
FUTURE_SKEW = timedelta(minutes=5)  # clocks of scheduler hosts may run a little ahead
# Reads that widen the span around a new measured usage record to the records chained to it, before counting the
# whole retention window at once instead (a long chain of staggered periods).
CLUSTER_WALK_STEPS = 8
# The most stored reports a new one is checked against (those chained to it by overlapping periods). More is
# implausibly fragmented reporting: collectors report on an hour grid, whose periods touch and do not chain.
# It bounds the check, which runs under the pool's row lock (docs/benchmarks.md, "Measured usage").
USAGE_MAX_CHAINED = 1000

# --- publishing -------------------------------------------------------------------------------


def _window_key(
    *, pool_id: int, team_id: int, gpu_count: int, start: datetime, end: datetime, tier: str, request_ref: int | None
) -> tuple[Any, ...]:
    """What a scheduler sees of a window: equal keys in two versions are the same window."""
    return (pool_id, team_id, gpu_count, start, end, tier, request_ref)


@write_transaction
def plan_publish(
    *,
    week: str,
    week_starts_at: datetime,
    week_ends_at: datetime,
    source_ref: str,
    windows: Sequence[EngineWindow],
    explanations: Sequence[Explanation],
    pools: Mapping[str, GpuPool],
    teams: Mapping[int, Team],
    published_by_name: str,
    note: str = "",
    refs_are_requests: bool = True,
) -> AllocationPlan:
    """Publish the engine's result for `week` as its next plan version, in one transaction.

    `pools` maps the engine's pool keys to pools; `teams` maps each demand's ref (the request
    id) to its team. With `refs_are_requests=False` (a plan placed for no request, like the
    demo's history) the windows keep no request reference and `explanations` must be empty.
    Explanations' times are read on the grid of the week starting at `week_starts_at`.

    Version n+1 supersedes n. A window of n that n+1 places identically (pool, team, GPUs,
    start, end, tier, request) is carried over, keeping its id; the other
    windows of n are withdrawn (a `WindowWithdrawal` at this plan's change sequence) and the
    new ones are created. No window row is ever updated.

    Invariants: publishes are serialized on the `PlanSequence` row, so `change_seq` grows in
    commit order and a poller reading in a snapshot sees all of a plan or none of it. Any
    error rolls the whole publish back: the previous version stays current.

    Raises ValidationError for a window outside the week or naming an unknown pool or
    request, and for an explanation naming an unknown request.
    """
    if not refs_are_requests and explanations:
        raise ValidationError(_("Explanations belong to requests; this plan places none."))
    _check_publishable(
        week_starts_at=week_starts_at,
        week_ends_at=week_ends_at,
        windows=windows,
        explanations=explanations,
        pools=pools,
        teams=teams,
    )
    sequence, _created = PlanSequence.objects.select_for_update(no_key=True).get_or_create(pk=1)
    sequence.value += 1
    sequence.save(update_fields=["value"])
    change_seq = sequence.value

    previous = selectors.plan_for_week(week=week)
    plan = AllocationPlan.objects.create(
        week=week,
        version=previous.version + 1 if previous else 1,
        change_seq=change_seq,
        week_starts_at=week_starts_at,
        week_ends_at=week_ends_at,
        source_ref=source_ref,
        published_by_name=published_by_name,
        supersedes=previous,
        note=note,
    )

    carried: dict[tuple[Any, ...], list[AllocationWindow]] = {}
    if previous is not None:
        for window in AllocationWindow.objects.filter(week=week, withdrawal__isnull=True).order_by("id"):
            key = _window_key(
                pool_id=window.pool_id,
                team_id=window.team_id,
                gpu_count=window.gpu_count,
                start=window.start,
                end=window.end,
                tier=window.tier,
                request_ref=window.request_ref,
            )
            carried.setdefault(key, []).append(window)

    # The text as published, in the active language: archived records keep it as it was.
    texts = {e.ref: explanation_text(e.reasons, week_start=week_starts_at) for e in explanations}
    new_windows = []
    for engine_window in windows:
        pool, team = pools[engine_window.pool], teams[engine_window.ref]
        key = _window_key(
            pool_id=pool.pk,
            team_id=team.pk,
            gpu_count=engine_window.gpu_count,
            start=engine_window.start,
            end=engine_window.end,
            tier=engine_window.tier,
            request_ref=engine_window.ref if refs_are_requests else None,
        )
        if carried.get(key):
            carried[key].pop(0)  # the same window, still placed: keep it
            continue
        new_windows.append(
            AllocationWindow(
                plan=plan,
                week=week,
                cluster_id=pool.cluster_id,
                pool=pool,
                team=team,
                gpu_count=engine_window.gpu_count,
                start=engine_window.start,
                end=engine_window.end,
                tier=engine_window.tier,
                request_ref=engine_window.ref if refs_are_requests else None,
                explanation=texts.get(engine_window.ref, ""),
                created_seq=change_seq,
            )
        )
    AllocationWindow.objects.bulk_create(new_windows)
    WindowWithdrawal.objects.bulk_create(
        WindowWithdrawal(window=window, plan=plan, change_seq=change_seq)
        for leftovers in carried.values()
        for window in leftovers
    )
    PlanExplanation.objects.bulk_create(
        PlanExplanation(
            plan=plan,
            request_ref=explanation.ref,
            position=position,
            placed=explanation.placed,
            shortened=explanation.shortened,
            text=texts[explanation.ref],
            reasons=reasons_as_json(explanation.reasons),
        )
        for position, explanation in enumerate(explanations, start=1)
    )
    return plan


def _check_publishable(
    *,
    week_starts_at: datetime,
    week_ends_at: datetime,
    windows: Sequence[EngineWindow],
    explanations: Sequence[Explanation],
    pools: Mapping[str, GpuPool],
    teams: Mapping[int, Team],
) -> None:
    errors: list[str] = []
    if week_ends_at <= week_starts_at:
        errors.append(_("The week must end after it starts."))
    tiers = {choice.value for choice in WindowTier}
    for window in windows:
        if window.pool not in pools:
            errors.append(_("Window for request %(ref)s names unknown pool %(pool)s.") % {"ref": window.ref,
                                                                                           "pool": window.pool})
        if window.ref not in teams:
            errors.append(_("Window names request %(ref)s, which has no team.") % {"ref": window.ref})
        if window.tier not in tiers:
            errors.append(_("Window for request %(ref)s has unknown tier %(tier)s.") % {"ref": window.ref,
                                                                                         "tier": window.tier})
        if not (week_starts_at <= window.start < window.end <= week_ends_at):
            errors.append(_("Window for request %(ref)s lies outside the week.") % {"ref": window.ref})
    refs = [explanation.ref for explanation in explanations]
    if len(set(refs)) != len(refs):
        errors.append(_("A request is explained twice."))
    if errors:
        raise ValidationError(errors)


# --- scheduler clients ------------------------------------------------------------------------


@dataclass(frozen=True)
class IssuedToken:
    """A client and its token in clear: show the token once, it is not stored."""

    client: SchedulerClient
    token: str


def scheduler_client_create(*, cluster: Cluster, name: str, token: str | None = None) -> IssuedToken:
    """Register a scheduler of `cluster` and issue its token; only the token's hash is stored.

    `token` is for the demo's documented, deterministic tokens only; everything else lets
    the service draw 256 random bits. Raises ValidationError when the name is taken on the
    cluster or a given token does not look like one.
    """
    token = token or token_new(prefix=TOKEN_PREFIX)
    if not token.startswith(TOKEN_PREFIX) or len(token) < 32:
        raise ValidationError({"token": _("A scheduler token starts with %s and has 32 characters or more.")
                               % TOKEN_PREFIX})
    name = name.strip()
    if not name:
        raise ValidationError({"name": _("Give the scheduler a name.")})
    if SchedulerClient.objects.filter(cluster=cluster, name=name).exists():
        raise ValidationError({"name": _("Cluster %(cluster)s already has a scheduler named %(name)s.")
                               % {"cluster": cluster.slug, "name": name}})
    client = SchedulerClient.objects.create(
        cluster=cluster, name=name, token_prefix=token[:TOKEN_PREFIX_SHOWN], token_hash=token_hash(token)
    )
    return IssuedToken(client=client, token=token)


def scheduler_client_rotate(*, client: SchedulerClient, overlap: timedelta = timedelta(0)) -> IssuedToken:
    """Issue a new token for `client`; it works at once. Reactivates the client.

    With an `overlap`, the token it replaces keeps working until then, so the scheduler can be
    given the new one without a gap; without one, the old token stops at once. Only the token
    just replaced overlaps: one that was still in an earlier overlap stops now.
    """
    if overlap < timedelta(0):
        raise ValidationError({"overlap": _("The overlap cannot be negative.")})
    token = token_new(prefix=TOKEN_PREFIX)
    if overlap:
        client.previous_token_hash = client.token_hash
        client.previous_token_expires_at = timezone.now() + overlap
    else:
        client.previous_token_hash = None
        client.previous_token_expires_at = None
    client.token_prefix = token[:TOKEN_PREFIX_SHOWN]
    client.token_hash = token_hash(token)
    client.is_active = True
    client.save(update_fields=["token_prefix", "token_hash", "previous_token_hash", "previous_token_expires_at",
                               "is_active"])
    return IssuedToken(client=client, token=token)


def scheduler_client_seen(*, client: SchedulerClient, now: datetime | None = None) -> None:
    """Note that the client called; writes at most once per LAST_SEEN_RESOLUTION per client."""
    now = now or timezone.now()
    if client.last_seen_at is None or now - client.last_seen_at >= LAST_SEEN_RESOLUTION:
        SchedulerClient.objects.filter(pk=client.pk).update(last_seen_at=now)
        client.last_seen_at = now


# --- sync status ------------------------------------------------------------------------------


@write_transaction
def sync_status_record(*, client: SchedulerClient, statuses: Sequence[Mapping[str, Any]]) -> int:
    """Store each window's latest sync status as reported by `client`; all or nothing.

    Each status: window (id), state, nodes_requested, nodes_reserved, message. Every window
    must be a window of the client's cluster (ValidationError naming the position otherwise,
    nothing stored). A window's earlier status is replaced. Returns the number stored. Windows that
    have just become "failed" are announced with `signals.windows_sync_failed`, inside this transaction.
    """
    ids = [status["window"] for status in statuses]
    known = set(AllocationWindow.objects.filter(cluster_id=client.cluster_id, pk__in=ids).values_list("pk", flat=True))
    errors = {
        f"statuses.{index}.window": [_("No window %(id)s on cluster %(cluster)s.")
                                     % {"id": window_id, "cluster": client.cluster.slug}]
        for index, window_id in enumerate(ids)
        if window_id not in known
    }
    if len(set(ids)) != len(ids):
        errors["statuses"] = [_("A window appears twice.")]
    if errors:
        raise ValidationError(errors)
    states = {choice.value for choice in SyncState}
    unknown = [status["state"] for status in statuses if status["state"] not in states]
    if unknown:
        raise ValidationError({"statuses": [_("Unknown state %s.") % unknown[0]]})
    now = timezone.now()
    failed_before = set(
        WindowSyncStatus.objects.filter(window_id__in=ids, state=SyncState.FAILED).values_list("window_id", flat=True)
    )
    # One statement for the whole report, however many windows the cluster holds.
    WindowSyncStatus.objects.bulk_create(
        [
            WindowSyncStatus(
                window_id=status["window"],
                client_name=client.name,
                state=status["state"],
                nodes_requested=status["nodes_requested"],
                nodes_reserved=status["nodes_reserved"],
                message=status.get("message", ""),
                reported_at=now,
            )
            for status in statuses
        ],
        update_conflicts=True,
        unique_fields=["window"],
        update_fields=["client_name", "state", "nodes_requested", "nodes_reserved", "message", "reported_at"],
    )
    newly_failed = [
        status["window"]
        for status in statuses
        if status["state"] == SyncState.FAILED and status["window"] not in failed_before
    ]
    if newly_failed:
        signals.windows_sync_failed.send(sender=WindowSyncStatus, window_ids=newly_failed)
    return len(statuses)


# --- usage ------------------------------------------------------------------------------------


class IdempotencyConflict(Exception):
    """The idempotency key was used before with different data; nothing was changed."""

    def __init__(self, record: UsageRecord) -> None:
        super().__init__(f"idempotency key {record.idempotency_key!r} was used for different data")
        self.record = record


@dataclass(frozen=True)
class UsageResult:
    record: UsageRecord
    replayed: bool  # True when the key was seen before: nothing changed


USAGE_VALUE_FIELDS = (
    "period_start",
    "period_end",
    "gpu_hours_used",
    "mean_utilization_pct",
    "mean_queue_wait_minutes",
)


def _same_usage(record: UsageRecord, *, team: Team | None, window_id: int | None, values: Mapping[str, Any]) -> bool:
    if team is None or record.team_id != team.pk or record.window_id != window_id:
        return False
    for name in USAGE_VALUE_FIELDS:
        stored, given = getattr(record, name), values[name]
        if isinstance(stored, Decimal):
            if stored != Decimal(str(given)):
                return False
        elif stored != given:
            return False
    return True


@write_transaction
def measured_usage_record(
    *,
    client: SchedulerClient,
    team_slug: str,
    pool_slug: str,
    window_id: int | None,
    period_start: datetime,
    period_end: datetime,
    gpu_hours_used: Decimal,
    mean_utilization_pct: Decimal,
    mean_queue_wait_minutes: Decimal,
    idempotency_key: str,
    now: datetime | None = None,
) -> UsageResult:
    """Store what `client`'s scheduler reports a team used on one of its cluster's pools.

    Idempotent on (pool, idempotency_key): the same key with the same data returns the first
    record and changes nothing (`replayed`); with different data it raises
    IdempotencyConflict and changes nothing. A report that cannot be true raises
    ValidationError keyed by field and stores nothing: a pool or window of another cluster, a
    window of another team or pool or not overlapping the period, a team with neither an
    account on the cluster nor a window on the pool, a period that starts before the
    retention horizon (DOCKET_USAGE_MAX_AGE_DAYS) or ends in the future, more GPU-hours than
    the pool holds over the period, or more than it holds together with the pool's other
    reports (`_usage_fits_pool`, docs/adapters.md "Measured usage Docket refuses").

    The pool's row is locked (SELECT ... FOR NO KEY UPDATE: rows that refer to the pool are still
    written meanwhile) from the key's lookup to the insert, so concurrent reports of one pool are
    checked one after the other and cannot together overfill it. One transaction
    (core.locks.write_transaction).
    """
    now = now or timezone.now()
    cluster = client.cluster
    pool = GpuPool.objects.filter(cluster=cluster, slug=pool_slug).first()
    if pool is None:
        raise ValidationError({"pool": _("No pool %(pool)s on cluster %(cluster)s.")
                               % {"pool": pool_slug, "cluster": cluster.slug}})
    team = Team.objects.filter(slug=team_slug).first()
    values = {
        "period_start": period_start,
        "period_end": period_end,
        "gpu_hours_used": gpu_hours_used,
        "mean_utilization_pct": mean_utilization_pct,
        "mean_queue_wait_minutes": mean_queue_wait_minutes,
    }
    pool = GpuPool.objects.select_for_update(no_key=True).get(pk=pool.pk)
    existing = UsageRecord.objects.filter(pool=pool, idempotency_key=idempotency_key).first()
    if existing is not None:
        if _same_usage(existing, team=team, window_id=window_id, values=values):
            return UsageResult(record=existing, replayed=True)
        raise IdempotencyConflict(existing)

    window = _usage_check(cluster=cluster, pool=pool, team=team, team_slug=team_slug, window_id=window_id,
                          period_start=period_start, period_end=period_end, gpu_hours_used=gpu_hours_used,
                          now=now)
    assert team is not None, "_usage_check refuses an unknown team"
    try:
        with transaction.atomic():
            record = UsageRecord.objects.create(
                pool=pool,
                team=team,
                window=window,
                idempotency_key=idempotency_key,
                reported_by=client.name,
                **values,
            )
    except IntegrityError:
        # The same key won a race against us (only where the pool's lock is not taken, e.g.
        # SQLite): answer as it was answered.
        existing = UsageRecord.objects.filter(pool=pool, idempotency_key=idempotency_key).first()
        if existing is None:
            raise
        if _same_usage(existing, team=team, window_id=window_id, values=values):
            return UsageResult(record=existing, replayed=True)
        raise IdempotencyConflict(existing) from None
    return UsageResult(record=record, replayed=False)


def _seconds(span: timedelta) -> Decimal:
    """A duration in seconds, exactly (GPU-hours are compared as GPU-seconds, without rounding)."""
    return Decimal(span.days * 86400 + span.seconds) + Decimal(span.microseconds) / 1_000_000


def _gpu_hours(value: Decimal) -> Decimal:
    return value.quantize(Decimal("0.01"))


def _usage_check(
    *, cluster: Cluster, pool: GpuPool, team: Team | None, team_slug: str, window_id: int | None,
    period_start: datetime, period_end: datetime, gpu_hours_used: Decimal, now: datetime,
) -> AllocationWindow | None:
    """Validate a measured usage record (ValidationError keyed by field, all problems at once); returns its window."""
    errors: dict[str, list[str]] = {}
    if team is None:
        errors["team"] = [_("No team %s.") % team_slug]
    elif not (ClusterAccount.objects.filter(cluster=cluster, team=team).exists()
              or AllocationWindow.objects.filter(pool=pool, team=team).exists()):
        errors["team"] = [_("Team %(team)s has no account on cluster %(cluster)s and no window on pool %(pool)s.")
                          % {"team": team.slug, "cluster": cluster.slug, "pool": pool.slug}]
    horizon = now - timedelta(days=settings.DOCKET_USAGE_MAX_AGE_DAYS)
    if period_start < horizon:
        errors["period_start"] = [
            _("Usage is accepted for the last %(days)s days only: the period must start at %(horizon)s or later.")
            % {"days": settings.DOCKET_USAGE_MAX_AGE_DAYS, "horizon": horizon.isoformat()}
        ]
    if period_end <= period_start:
        errors["period_end"] = [_("The period must end after it starts.")]
    elif period_end > now + FUTURE_SKEW:
        errors["period_end"] = [_("The period ends in the future.")]
    elif gpu_hours_used * 3600 > pool.gpu_count * _seconds(period_end - period_start):
        errors["gpu_hours_used"] = [
            _("%(pool)s holds %(max)s GPU-hours over this period.")
            % {"pool": pool.slug, "max": _gpu_hours(pool.gpu_count * _seconds(period_end - period_start) / 3600)}
        ]
    if team is not None and "period_start" not in errors:
        hour = period_start.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
        limit = settings.DOCKET_USAGE_MAX_REPORTS_PER_HOUR
        if UsageRecord.objects.filter(team=team, pool=pool, period_start__gte=hour,
                                      period_start__lt=hour + timedelta(hours=1)).count() >= limit:
            errors["period_start"] = [
                _("Team %(team)s already has %(limit)s measured usage records on %(pool)s starting between %(start)s "
                  "and %(end)s: at most %(limit)s per team, pool and hour. Report longer periods.")
                % {"team": team.slug, "pool": pool.slug, "limit": limit, "start": hour.isoformat(),
                   "end": (hour + timedelta(hours=1)).isoformat()}
            ]
    window = None
    if window_id is not None:
        window = AllocationWindow.objects.filter(pk=window_id, cluster=cluster).first()
        if window is None:
            errors["window"] = [_("No window %(id)s on cluster %(cluster)s.") % {"id": window_id,
                                                                                 "cluster": cluster.slug}]
        elif window.pool_id != pool.pk or (team is not None and window.team_id != team.pk):
            errors["window"] = [_("Window %s belongs to another team or pool.") % window_id]
        elif not (window.start < period_end and period_start < window.end):
            errors["window"] = [_("Window %s does not overlap the period.") % window_id]
    if errors:
        raise ValidationError(errors)
    overfull = _usage_fits_pool(pool=pool, period_start=period_start, period_end=period_end,
                                gpu_hours_used=gpu_hours_used, horizon=horizon)
    if overfull is not None:
        raise ValidationError({"gpu_hours_used": [
            _("With the reports already stored for %(pool)s between %(start)s and %(end)s, this one makes "
              "%(total)s GPU-hours; the pool holds %(max)s over that span.")
            % {"pool": pool.slug, "start": overfull.start.isoformat(), "end": overfull.end.isoformat(),
               "total": _gpu_hours(overfull.gpu_hours), "max": _gpu_hours(overfull.capacity_gpu_hours)}
        ]})
    return window


def _usage_fits_pool(
    *, pool: GpuPool, period_start: datetime, period_end: datetime, gpu_hours_used: Decimal, horizon: datetime
) -> usage_fit.Overfull | None:
    """The worst span the new report would overfill together with the pool's stored reports, or None.

    Reads the reports chained to the new one by overlapping periods (allocations/usage_fit.py
    says why those are enough) and finds the worst span among them. Reports ending before the
    retention horizon are left out: that can only accept more, never refuse a true report.
    The chain is found by counting first (a count, the earliest start and the latest end of the
    reports overlapping a span, widened until it holds still), so a chain of more than
    USAGE_MAX_CHAINED reports is refused (ValidationError on period_start) before any is read.
    """
    lo, hi = period_start, period_end
    retained = UsageRecord.objects.filter(pool=pool, period_end__gt=horizon)
    for attempt in range(CLUSTER_WALK_STEPS + 1):
        records = retained
        if attempt < CLUSTER_WALK_STEPS:  # else: the whole retention window, at once
            records = records.filter(period_start__lt=hi, period_end__gt=lo)
        # Counted up to one past the cap only, so a long chain costs no more than a short one to refuse.
        if records.values("pk")[: USAGE_MAX_CHAINED + 1].count() > USAGE_MAX_CHAINED:
            raise ValidationError({"period_start": [
                _("This report overlaps a chain of more than %(limit)s reports stored for %(pool)s (between "
                  "%(start)s and %(end)s): such fragmented reporting is refused. Report periods on the hour grid.")
                % {"limit": USAGE_MAX_CHAINED, "pool": pool.slug, "start": lo.isoformat(), "end": hi.isoformat()}
            ]})
        found = records.aggregate(count=Count("pk"), lo=Min("period_start"), hi=Max("period_end"))
        count = found["count"]
        if not count:
            return None  # the report alone fits its period (checked before)
        new_lo, new_hi = min(lo, found["lo"]), max(hi, found["hi"])
        if (new_lo, new_hi) == (lo, hi):
            break
        lo, hi = new_lo, new_hi
    rows = records.values_list("period_start", "period_end", "gpu_hours_used")
    rows_us = [(usage_fit.us(start), usage_fit.us(end), hours) for start, end, hours in rows]
    chained = usage_fit.chained(rows_us, start=usage_fit.us(period_start), end=usage_fit.us(period_end))
    if not chained:
        return None
    return usage_fit.worst_span(chained, start=usage_fit.us(period_start), end=usage_fit.us(period_end),
                                gpu_hours=gpu_hours_used, gpus=pool.gpu_count)
