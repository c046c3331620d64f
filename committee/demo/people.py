"""The demo's clusters, pools and teams, and its people: each team's lead and developer, the committee of four."""

from __future__ import annotations

from datetime import timedelta
from functools import cache
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.utils import timezone

from allocations.models import (
    Cluster,
    GpuPool,
    SchedulerKind,
    Team,
)
from committee.models import (
    CommitteeSeat,
    MembershipRole,
    ReportingLine,
    SeatRole,
    TeamMembership,
)

DEMO_PASSWORD = "docket-demo"  # noqa: S105 (printed for the demo on purpose)

TEAMS = [
    # slug, name, fair-share weight
    ("search", "Search", 3),
    ("ads", "Ads", 3),
    ("recommendations", "Recommendations", 2),
    ("vision", "Vision", 2),
    ("speech", "Speech", 1),
    ("research", "Research", 1),
]

COMMITTEE = [
    # username, full name, seat, team they also belong to (to show the conflict-of-interest rule)
    ("chair", "Chris Chair", SeatRole.CHAIR, None),
    ("product", "Priya Product", SeatRole.PRODUCT_LEAD, None),
    ("tech", "Tomás Tech", SeatRole.TECH_LEAD, "research"),
    ("finance", "Fatima Finance", SeatRole.FINANCE, None),
]

# Who reports to whom, as the identity provider's manager claim would say (docs/conflicts.md): Research's lead reports
# to the product lead, so Docket finds her likely conflicted on Research's requests.
REPORTING_LINES = [("research-lead", "product")]


@cache
def _demo_password_hash(hasher: str) -> str:
    """The demo password hashed once for every demo account (by `hasher`, the first of PASSWORD_HASHERS): it is
    published, so one salt for all of them hides nothing, and each hash costs the production hasher a third of a
    second (16 accounts: 5 s of a seed)."""
    return make_password(DEMO_PASSWORD)


def _user(username: str, full_name: str) -> Any:
    user_model = get_user_model()
    user, created = user_model.objects.get_or_create(username=username)
    if created:
        first, _sep, last = full_name.partition(" ")
        user.first_name, user.last_name = first, last
        user.email = f"{username}@docket.example"
        user.password = _demo_password_hash(settings.PASSWORD_HASHERS[0])
        user.save()
    return user


def seed_resources() -> dict[str, GpuPool]:
    atlas, _ = Cluster.objects.get_or_create(
        slug="atlas", defaults={"name": "Atlas (Slurm)", "scheduler_kind": SchedulerKind.SLURM}
    )
    orion, _ = Cluster.objects.get_or_create(
        slug="orion", defaults={"name": "Orion (Kubernetes)", "scheduler_kind": SchedulerKind.KUEUE}
    )
    a100, _ = GpuPool.objects.get_or_create(
        cluster=atlas, slug="a100",
        defaults={"gpu_model": "A100", "gpu_count": 64, "gpus_per_node": 8, "scheduler_label": "a100"},
    )
    h100, _ = GpuPool.objects.get_or_create(
        cluster=orion, slug="h100",
        defaults={"gpu_model": "H100", "gpu_count": 32, "gpus_per_node": 8, "scheduler_label": "h100"},
    )
    for slug, name, weight in TEAMS:
        Team.objects.get_or_create(slug=slug, defaults={"name": name, "fair_share_weight": weight})
    return {"a100": a100, "h100": h100}


def seed_people() -> list[tuple[str, str]]:
    """Users, memberships and seats; returns (login, what they are) for the printout."""
    logins: list[tuple[str, str]] = []
    for slug, name, _weight in TEAMS:
        team = Team.objects.get(slug=slug)
        for suffix, role in (("lead", MembershipRole.LEAD), ("dev", MembershipRole.MEMBER)):
            username = f"{slug}-{suffix}"
            user = _user(username, f"{name} {suffix.title()}")
            TeamMembership.objects.get_or_create(user=user, team=team, defaults={"role": role})
            logins.append((username, f"{role.label} of {name}"))
    start = timezone.localdate() - timedelta(days=365)
    for username, full_name, seat, team_slug in COMMITTEE:
        user = _user(username, full_name)
        if seat == SeatRole.CHAIR and not user.is_superuser:
            # The demo's chair also runs the site: /admin/ (pools, accounts, single sign-on groups) opens for them.
            user.is_staff = user.is_superuser = True
            user.save(update_fields=["is_staff", "is_superuser"])
        CommitteeSeat.objects.get_or_create(user=user, role=seat, defaults={"active_from": start})
        what = f"committee: {seat.label}"
        if seat == SeatRole.CHAIR:
            what += ", and the demo's administrator (/admin/)"
        if team_slug:
            TeamMembership.objects.get_or_create(user=user, team=Team.objects.get(slug=team_slug))
            what += f" (also in {team_slug}: cannot score its requests)"
        logins.append((username, what))
    for person, manager in REPORTING_LINES:
        ReportingLine.objects.get_or_create(person=get_user_model().objects.get(username=person),
                                            defaults={"manager_username": manager})
    return logins
