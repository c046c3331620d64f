"""The scheduler side's writes: its clients (tokens issued, rotated, seen) and the sync status they report."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.core.exceptions import ValidationError
from django.utils import timezone
from django.utils.translation import gettext as _

from allocations import signals
from allocations.models import (
    AllocationWindow,
    Cluster,
    SchedulerClient,
    SyncState,
    WindowSyncStatus,
)
from core.locks import write_transaction
from core.tokens import token_hash, token_new

# "Docket scheduler": lets the authentication class tell its tokens from other kinds.
TOKEN_PREFIX = "dks_"  # noqa: S105 (a prefix, not a secret)
TOKEN_PREFIX_SHOWN = 12  # characters of the token kept in clear, to tell tokens apart
LAST_SEEN_RESOLUTION = timedelta(minutes=1)  # write last_seen_at at most this often per client


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
