"""The published windows as the scheduler API serves them: snapshots, pages, the reference data and one
window's detail."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import (
    Case,
    F,
    Max,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    When,
)
from django.utils import timezone

from allocations.models import (
    AllocationPlan,
    AllocationWindow,
    Cluster,
    ClusterAccount,
    ElasticAction,
    ElasticActionKind,
    GpuPool,
    Team,
)
from allocations.selectors.plans import plan_for_week


@dataclass(frozen=True)
class WindowSnapshot:
    """A cluster's windows as of one point of the change sequence.

    `windows` (unordered, unfiltered by pool/team/time) holds the windows live at `cursor` in
    the scope asked for and, with `since`, the windows withdrawn after `since`; each row is
    annotated with `withdrawn_seq` (None when live). `versions` maps each week in scope to
    its current version as of `cursor`; `plan_version` is the version of the plan published
    last among them. Windows are never edited, so reading `windows` later, in other
    statements, still gives exactly this snapshot.
    """

    cluster: Cluster
    cursor: int
    plan_version: int | None
    versions: dict[str, int]
    windows: QuerySet[AllocationWindow]


class SnapshotUnavailable(ValueError):
    """`as_of` names a change that has not happened yet."""


def change_seq_latest() -> int:
    """The change sequence of the latest published plan (0 before any)."""
    return AllocationPlan.objects.aggregate(top=Max("change_seq"))["top"] or 0


def window_snapshot(
    *,
    cluster: Cluster,
    week: str | None = None,
    since: int | None = None,
    as_of: int | None = None,
    ends_after: datetime | None = None,
) -> WindowSnapshot:
    """The windows of `cluster` that the current plans hold, read as of one change.

    Scope: the windows of `week`, or, without it, those that end after `ends_after`
    (default: now). `as_of` pins the snapshot to an earlier change (the windows API's page
    links carry it, so the pages of one list never mix two plans); by default the latest.
    With `since`, only what changed after it: windows published after `since` that are still
    live, and windows live at `since` that a later version withdrew.

    One query for the plans and the cursor; the returned queryset is lazy.
    """
    plans = AllocationPlan.objects.all()
    if week is not None:
        plans = plans.filter(week=week)
    else:
        ends_after = ends_after or timezone.now()
        plans = plans.filter(week_ends_at__gt=ends_after)
    if as_of is not None:
        plans = plans.filter(change_seq__lte=as_of)
    rows = list(
        plans.annotate(top=Subquery(AllocationPlan.objects.order_by("-change_seq").values("change_seq")[:1]))
        .order_by("change_seq")
        .values_list("week", "version", "change_seq", "top")
    )
    top = rows[0][3] if rows else change_seq_latest()
    if as_of is not None and as_of > top:
        raise SnapshotUnavailable(f"as_of {as_of} is ahead of the latest change {top}")
    cursor = top if as_of is None else as_of
    versions = {plan_week: version for plan_week, version, _seq, _top in rows}  # ascending seq: last wins
    plan_version = rows[-1][1] if rows else None

    windows = AllocationWindow.objects.filter(cluster=cluster, created_seq__lte=cursor)
    windows = windows.filter(week=week) if week is not None else windows.filter(end__gt=ends_after)
    live = Q(withdrawal__isnull=True) | Q(withdrawal__change_seq__gt=cursor)
    if since is None:
        windows = windows.filter(live)
    else:
        added = live & Q(created_seq__gt=since)
        withdrawn = Q(created_seq__lte=since, withdrawal__change_seq__gt=since, withdrawal__change_seq__lte=cursor)
        windows = windows.filter(added | withdrawn)
    windows = windows.annotate(withdrawn_seq=Case(
        When(withdrawal__change_seq__lte=cursor, then=F("withdrawal__change_seq")), default=None
    ))
    return WindowSnapshot(
        cluster=cluster, cursor=cursor, plan_version=plan_version, versions=versions, windows=windows
    )


@dataclass(frozen=True)
class WindowPage:
    rows: list[tuple[Any, ...]]
    more_before: bool
    more_after: bool


def window_page(
    *, windows: QuerySet[Any], size: int, after: int | None = None, before: int | None = None
) -> WindowPage:
    """One page of `windows` (a values_list whose first column is the id), keyed on the id.

    Keyset, not offset: a window that ends between two page reads drops out without shifting
    the others, so no window is skipped. One query (it reads one row more than `size`).
    """
    if before is not None:
        rows = list(windows.filter(id__lt=before).order_by("-id")[: size + 1])
        return WindowPage(rows=rows[:size][::-1], more_before=len(rows) > size, more_after=bool(rows))
    if after is not None:
        windows = windows.filter(id__gt=after)
    rows = list(windows.order_by("id")[: size + 1])
    return WindowPage(rows=rows[:size], more_before=after is not None and bool(rows), more_after=len(rows) > size)


@dataclass(frozen=True)
class SchedulerReference:
    """What a window's JSON shows of its pool, team and account: read once per list."""

    pools: dict[int, tuple[str, str, str, int]]  # id -> (slug, gpu_model, scheduler_label, gpus_per_node)
    teams: dict[int, tuple[str, str | None]]  # id -> (slug, account on the cluster or None)
    # window id -> (GPUs offered to preemptible work, "idle" or "night_open"): the elastic policy's offers in force
    offers: dict[int, tuple[int, str]] = field(default_factory=dict)
    # team id -> (its fair-share weight, its department's slug and weight, or None and None): the account tree
    places: dict[int, tuple[int, str | None, int | None]] = field(default_factory=dict)

    def department_of(self, team_id: int) -> str | None:
        """The slug of the team's department, None for a team in none."""
        place = self.places.get(team_id)
        return place[1] if place is not None else None

    def fingerprint(self) -> str:
        """Changes whenever anything shown of a pool, team, account, department or a window's offer changes."""
        departments = sorted((pk, place[1]) for pk, place in self.places.items())
        payload = repr((sorted(self.pools.items()), sorted(self.teams.items()), sorted(self.offers.items()),
                        departments))
        return hashlib.sha256(payload.encode()).hexdigest()


def scheduler_reference(*, cluster: Cluster) -> SchedulerReference:
    """The cluster's pools and every team with its account on the cluster, its weight and department. Two queries."""
    pools = {
        pk: (slug, model, label, per_node)
        for pk, slug, model, label, per_node in GpuPool.objects.filter(cluster=cluster)
        .order_by()  # the default ordering would join the cluster table for nothing
        .values_list("pk", "slug", "gpu_model", "scheduler_label", "gpus_per_node")
    }
    account = ClusterAccount.objects.filter(cluster=cluster, team=OuterRef("pk")).order_by().values("account")[:1]
    rows = list(
        Team.objects.annotate(acct=Subquery(account))
        .order_by()
        .values_list("pk", "slug", "acct", "fair_share_weight", "department__slug", "department__fair_share_weight")
    )
    teams = {pk: (slug, acct) for pk, slug, acct, *_tree in rows}
    places: dict[int, tuple[int, str | None, int | None]] = {
        pk: (weight, dept, dept_weight) for pk, _slug, _acct, weight, dept, dept_weight in rows
    }
    return SchedulerReference(pools=pools, teams=teams, offers=window_offers(cluster=cluster), places=places)


def scheduler_departments(reference: SchedulerReference) -> list[dict[str, Any]]:
    """The org chart as the syncs build a scheduler's tree from it: each department with its weight and its teams
    (slug and weight), every team whether or not it has an account on the cluster. No query."""
    departments: dict[str, dict[str, Any]] = {}
    for pk, (weight, dept, dept_weight) in reference.places.items():
        if dept is None:
            continue
        entry = departments.setdefault(dept, {"slug": dept, "fair_share_weight": dept_weight, "teams": []})
        entry["teams"].append({"team": reference.teams[pk][0], "fair_share_weight": weight})
    for entry in departments.values():
        entry["teams"].sort(key=lambda team: team["team"])
    return [departments[slug] for slug in sorted(departments)]


def window_offers(*, cluster: Cluster) -> dict[int, tuple[int, str]]:
    """Window id -> (GPUs, reason) the elastic policy offers to preemptible work now, on the cluster. One query.

    Offers come from the lending actions in force (IDLE with GPUs, NIGHT_OPEN); the evaluation never gives
    one window both, and should two be in force the larger counts.
    """
    offers: dict[int, tuple[int, str]] = {}
    rows = (
        ElasticAction.objects.filter(
            pool__cluster=cluster, ended_at__isnull=True, window__isnull=False, gpus__gt=0,
            kind__in=[ElasticActionKind.IDLE, ElasticActionKind.NIGHT_OPEN],
        )
        .order_by("id")
        .values_list("window_id", "gpus", "kind")
    )
    for window_id, gpus, kind in rows:
        if window_id not in offers or offers[window_id][0] < gpus:
            offers[window_id] = (gpus, kind)
    return offers


def window_detail(*, cluster: Cluster, window_id: int) -> tuple[QuerySet[AllocationWindow], dict[str, int]] | None:
    """One window of `cluster` (a one-row queryset annotated with `withdrawn_seq`) and its week's version."""
    window = AllocationWindow.objects.filter(cluster=cluster, pk=window_id).values_list("week", flat=True).first()
    if window is None:
        return None
    plan = plan_for_week(week=window)
    versions = {window: plan.version} if plan else {}
    rows = AllocationWindow.objects.filter(pk=window_id).annotate(withdrawn_seq=F("withdrawal__change_seq"))
    return rows, versions
