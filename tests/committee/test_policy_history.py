"""Policy parameters changed in the admin keep a history with who, when and why, shown at Rubric → Policy history."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from allocations.models import ClusterAccount, GpuPool, Team
from committee.models import CommitteeSeat
from committee.selectors import policy_history

pytestmark = pytest.mark.django_db

REASON = "Team A runs the ranking model for the whole company from January: the board asked for twice the share."


@pytest.fixture
def admin_client(world: Any) -> Client:
    root = get_user_model().objects.create_superuser(
        "root", "root@example.com", "pw", first_name="Ada", last_name="Admin"
    )
    client = Client()
    client.force_login(root)  # django-axes needs a request to authenticate; the sign-in form is tested elsewhere
    return client


def change_url(obj: Any) -> str:
    meta = obj._meta
    return reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[obj.pk])


def team_form(team: Team, **overrides: Any) -> dict[str, Any]:
    return {"name": team.name, "slug": team.slug, "fair_share_weight": team.fair_share_weight, **overrides}


def history_page(client: Client) -> str:
    response = client.get(reverse("committee:policy-history"))
    assert response.status_code == 200
    return response.content.decode()


def test_a_fair_share_weight_changed_in_the_admin_shows_in_its_history_with_the_reason_and_the_user(
    admin_client, world, client
):
    response = admin_client.post(change_url(world.team_a), team_form(world.team_a, fair_share_weight=4,
                                                                      change_reason=REASON))
    assert response.status_code == 302, response.content.decode()[:2000]
    world.team_a.refresh_from_db()
    assert world.team_a.fair_share_weight == 4

    latest = world.team_a.history.latest()
    assert (latest.history_change_reason, latest.history_user.username, latest.history_user_name) == (
        REASON, "root", "Ada Admin"
    )
    # Anyone signed in reads it, next to the rubric's history.
    client.force_login(world.member_b)
    assert reverse("committee:policy-history") in client.get(reverse("committee:rubric")).content.decode()
    page = history_page(client)
    assert "Team A" in page and "<del>2</del> → <ins>4</ins>" in page
    assert REASON in page and "Ada Admin" in page
    (change,) = [c for c in policy_history() if c.subject == "Team A" and c.action == "changed"]
    assert [(f.label, f.old, f.new) for f in change.changes] == [("fair-share weight", "2", "4")]


def test_without_a_reason_the_admin_refuses_the_change_and_nothing_is_recorded(admin_client, world):
    rows = world.team_a.history.count()
    response = admin_client.post(change_url(world.team_a), team_form(world.team_a, fair_share_weight=9,
                                                                      change_reason="   "))
    assert response.status_code == 200
    assert "Reason for this change" in response.content.decode()
    assert "This field is required." in response.content.decode()
    world.team_a.refresh_from_db()
    assert world.team_a.fair_share_weight == 2
    assert world.team_a.history.count() == rows


def test_a_pools_size_a_cluster_account_and_a_seat_keep_their_history(admin_client, world, client):
    pool = world.a100
    form = {
        "cluster": pool.cluster_id, "slug": pool.slug, "gpu_model": pool.gpu_model, "gpu_count": pool.gpu_count + 8,
        "gpus_per_node": pool.gpus_per_node, "burst_reserve_pct": 25, "standby_pct": pool.standby_pct,
        "scheduler_label": pool.scheduler_label,
        "change_reason": "Finance's new rate card; more burst room for the launch.",
    }
    assert admin_client.post(change_url(pool), form).status_code == 302
    account = ClusterAccount.objects.create(cluster=world.atlas, team=world.team_a, account="team-a")
    assert admin_client.post(change_url(account), {
        "cluster": world.atlas.pk, "team": world.team_a.pk, "account": "ml-ranking",
        "change_reason": "Renamed in Slurm.",
    }).status_code == 302
    seat = CommitteeSeat.objects.get(user=world.finance)
    assert admin_client.post(change_url(seat), {
        "user": world.finance.pk, "role": seat.role, "active_from": seat.active_from.isoformat(),
        "active_to": "2026-12-31", "source": seat.source,
        "change_reason": "Leaves the committee at the end of the year.",
    }).status_code == 302

    client.force_login(world.outsider)
    page = history_page(client)
    # The reserve is a governed parameter: the admin keeps it (tests/allocations/test_pool_reserves_admin.py).
    assert "atlas/a100" in page and "<ins>25</ins>" not in page and f"<ins>{pool.gpu_count + 8}</ins>" in page
    assert "Finance&#x27;s new rate card" in page or "Finance's new rate card" in page
    assert "<del>team-a</del> → <ins>ml-ranking</ins>" in page and "Renamed in Slurm." in page
    assert "<del>—</del> → <ins>2026-12-31</ins>" in page and "Leaves the committee" in page
    assert GpuPool.history.filter(history_change_reason__startswith="Finance").count() == 1


def test_the_policy_history_is_for_people_signed_in(world):
    response = Client().get(reverse("committee:policy-history"))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_the_policy_history_costs_the_same_queries_however_long(world, client):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.force_login(world.member_a)

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            history_page(client)
        return len(captured)

    few = queries()
    for weight in range(3, 30):
        world.team_b.fair_share_weight = weight
        world.team_b._change_reason = f"step {weight}"
        world.team_b.save()
    assert queries() == few
    assert history_page(client).count('class="policy-change"') > 27
