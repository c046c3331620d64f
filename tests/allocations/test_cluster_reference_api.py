"""GET /api/v1/clusters/<slug>/: the pools and team accounts a usage collector names its reports with."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient

from allocations.models import ClusterAccount, Department, GpuPool, Team
from tests.allocations.plans import bearer, token_for
from tests.conftest import World


@pytest.fixture
def api(world: World) -> APIClient:
    client = APIClient()
    client.credentials(**bearer(token_for(world.atlas, "slurm-usage")))
    return client


def test_the_cluster_lists_its_pools_and_the_accounts_of_its_teams_only_with_their_departments(
    world: World, api: APIClient
) -> None:
    GpuPool.objects.create(cluster=world.atlas, slug="h100", gpu_model="H100", gpu_count=16, scheduler_label="h100")
    ClusterAccount.objects.create(cluster=world.atlas, team=world.team_a, account="team-a-acct")
    ClusterAccount.objects.create(cluster=world.orion, team=world.team_b, account="team-b-on-orion")
    lone = Team.objects.create(name="Lone", slug="lone", fair_share_weight=5)
    ClusterAccount.objects.create(cluster=world.atlas, team=lone, account="lone-acct")
    research = Department.objects.create(name="Research", slug="research", fair_share_weight=3)
    Team.objects.filter(pk=world.team_a.pk).update(department=research, fair_share_weight=2)
    Team.objects.filter(pk=world.team_b.pk).update(department=research)

    response = api.get("/api/v1/clusters/atlas/")

    assert response.status_code == 200, response.content
    assert response.json() == {
        "cluster": "atlas",
        "pools": [{"slug": "a100", "gpu_model": "A100", "scheduler_label": "a100", "gpus_per_node": 8},
                  {"slug": "h100", "gpu_model": "H100", "scheduler_label": "h100", "gpus_per_node": 8}],
        # Team B has an account on orion only: atlas's scheduler does not see it.
        # Each with what the syncs build the scheduler's account tree from (docs/scheduler-api.md).
        "accounts": [{"team": "lone", "account": "lone-acct", "fair_share_weight": 5, "department": None,
                      "department_weight": None},
                     {"team": "team-a", "account": "team-a-acct", "fair_share_weight": 2, "department": "research",
                      "department_weight": 3}],
        # The org chart, every team in a department whether or not it has an account here.
        "departments": [{"slug": "research", "fair_share_weight": 3,
                         "teams": [{"team": "team-a", "fair_share_weight": 2},
                                   {"team": "team-b", "fair_share_weight": 1}]}],
    }


def test_another_clusters_token_is_told_there_is_no_such_cluster(world: World) -> None:
    client = APIClient()
    client.credentials(**bearer(token_for(world.orion, "kueue")))
    assert client.get("/api/v1/clusters/atlas/").status_code == 404
    assert APIClient().get("/api/v1/clusters/atlas/").status_code == 401


@pytest.mark.parametrize("teams", [1, 50])
def test_the_reference_costs_the_same_queries_for_1_or_50_teams(world: World, api: APIClient, teams: int,
                                                                 django_assert_num_queries: Any) -> None:
    for index in range(teams):
        team = Team.objects.create(name=f"T{index}", slug=f"t{index}")
        ClusterAccount.objects.create(cluster=world.atlas, team=team, account=f"t{index}-acct")
    api.get("/api/v1/clusters/atlas/")  # the token's first use also records when it was seen
    # The token, the pools, the teams with their accounts, the elastic offers (the shared scheduler reference).
    with django_assert_num_queries(4):
        response = api.get("/api/v1/clusters/atlas/")
    assert len(response.json()["accounts"]) == teams
