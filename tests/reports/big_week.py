"""A week with many requests, built in bulk: every request scored by three members and granted.

Used by the tests that pin finalize's and publish's query counts and the record's size, and by
bench/finalize_queries.py. Pools are sized so that every grant is placed (a placed request adds a
window row to the record at publish). The caller pins the clock.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from allocations.models import Cluster, GpuPool, SchedulerKind, Team
from committee import services
from committee.models import (
    Decision,
    DecisionOutcome,
    GpuRequest,
    RequestStatus,
    Score,
)
from tests.committee.reviewing import CRITERIA, bulk_evidence, close

POOLS = 4
REQUESTS_PER_TEAM = POOLS  # a team files at most one request per pool and week
GPUS_PER_REQUEST = 8
RATIONALE = (
    "Granted: the forecast shows a clear revenue effect this quarter and no cheaper variant reaches the "
    "quality bar the product team asked for; revisit next week if usage stays below half."
)


def big_week(world: Any, *, requests: int) -> list[GpuRequest]:
    """File `requests` submitted requests over extra pools, close intake, score and grant them all."""
    cluster = Cluster.objects.create(slug="vast", name="Vast", scheduler_kind=SchedulerKind.SLURM)
    per_pool = -(-requests // POOLS)
    pools = [
        GpuPool.objects.create(
            # Twice what the pool's requests ask for at once: every grant is placed, whatever the ranking.
            cluster=cluster, slug=f"p{index}", gpu_model="H100", gpu_count=2 * max(per_pool, 1) * GPUS_PER_REQUEST,
            gpus_per_node=8, scheduler_label=f"p{index}",
        )
        for index in range(POOLS)
    ]
    teams = Team.objects.bulk_create(
        Team(name=f"Big team {i:04d}", slug=f"big-{i:04d}", fair_share_weight=1 + i % 3)
        for i in range(-(-requests // REQUESTS_PER_TEAM))
    )
    start = world.cycle.starts_at + timedelta(hours=8)
    submitted_at = world.cycle.starts_at - timedelta(days=3)
    rows = GpuRequest.objects.bulk_create(
        GpuRequest(
            team=teams[index // REQUESTS_PER_TEAM],
            cycle=world.cycle,
            pool=pools[index % POOLS],
            title=f"Training run {index:04d} of {teams[index // REQUESTS_PER_TEAM].name}",
            gpu_count=GPUS_PER_REQUEST,
            min_gpu_count=4,
            duration_hours=24 + 6 * (index % 7),
            earliest_start=start,
            latest_end=start + timedelta(hours=96),
            deadline=start + timedelta(days=index % 30),
            status=RequestStatus.SUBMITTED,
            created_by=world.lead_a,
            submitted_by=world.lead_a,
            submitted_at=submitted_at + timedelta(seconds=index),
        )
        for index in range(requests)
    )
    bulk_evidence(rows)
    close(world)
    members = (world.chair, world.reviewer, world.finance)
    Score.objects.bulk_create(  # from the request's position, not its id: the same ranking on every database
        Score(request=r, member=member, member_name=member.get_full_name(), criterion=criterion,
              value=(index * 7 + offset * 3 + len(criterion)) % 11)
        for index, r in enumerate(rows) for offset, member in enumerate(members) for criterion in CRITERIA
    )
    Decision.objects.bulk_create(
        Decision(request=r, cycle=world.cycle, outcome=DecisionOutcome.GRANT, requested_gpu_count=r.gpu_count,
                 granted_gpu_count=r.gpu_count, rationale=RATIONALE, decided_by=world.chair,
                 decided_by_name="Chair", decided_at=world.cycle.intake_closes_at, team_name=r.team.name,
                 request_title=r.title, cycle_week=world.cycle.week)
        for r in rows
    )
    services.cycle_ranking_changed(cycle=world.cycle)  # written past the services: move the ranking's version too
    return rows
