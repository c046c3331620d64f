"""The scheduler side and the four past weeks: cluster accounts, a demo scheduler client per cluster, and each
past week through the committee's own path (filed, scored, decided, finalized, published) with the usage the
schedulers reported."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

from django.contrib.auth import get_user_model

from allocations import services as allocation_services
from allocations.models import (
    AllocationPlan,
    Cluster,
    ClusterAccount,
    ElasticAction,
    ElasticActionKind,
    GpuPool,
    SchedulerClient,
    Team,
    UsageRecord,
    WindowTier,
)
from committee import scoring, weeks
from committee.demo.dice import dice
from committee.models import (
    CommitteeSeat,
    GpuRequest,
    RequestStatus,
    ReviewCycle,
    Score,
    TeamMembership,
)
from committee.services import (
    cycle_close_intake,
    cycle_create,
    cycle_finalize,
    cycle_publish,
    request_decide,
)

# DEMO ONLY: publicly known scheduler tokens, printed by seed_demo so that `curl` works right after
# `make run`. Never run seed_demo on a real deployment: real tokens come from `manage.py scheduler_token`.
DEMO_SCHEDULER_TOKENS = {
    "atlas": "dks_DEMO-ONLY-atlas-token-publicly-known",
    "orion": "dks_DEMO-ONLY-orion-token-publicly-known",
}
HISTORY_WEEKS = 4
# A usual past week per pool: team, GPUs, hours, and the share of it the team used (ads: half).
HISTORY = {
    "a100": [("search", 32, 72, 0.93), ("ads", 16, 96, 0.50), ("recommendations", 16, 72, 0.96),
             ("vision", 8, 72, 0.97), ("speech", 8, 84, 0.92), ("research", 8, 96, 0.98)],
    "h100": [("search", 8, 96, 0.91), ("recommendations", 16, 72, 0.95), ("vision", 8, 72, 0.88),
             ("speech", 8, 72, 0.94)],
}


# The history weeks' requests are the HISTORY rows (granted in full), except these, which asked for more
# than they got, and these new ones, deferred: (weeks back, pool, team, GPUs asked, hours).
HISTORY_ASKED_MORE = {(3, "a100", "vision"): 24, (3, "a100", "research"): 24}
HISTORY_DEFERRED = [(2, "h100", "ads", 8, 48), (1, "h100", "research", 16, 72)]
# A run over three weeks (docs/multi-week-runs.md), filed last week: (weeks back, pool, team, GPUs, hours in its
# first week, weeks, the share of it used). Granted whole, it ends last week at Sunday midnight, holds this week
# from Monday 00:00 (confirmed on last week's use) and is committed for the week open for intake.
DEMO_RUN = (1, "h100", "ads", 4, 48, 3, 0.85)
# Last week Research's request on orion was granted as preemptible work (the engine placed it on the burst reserve)
# and, while Search's standard window sat idle for a day, ran on the free GPUs and on those the elastic policy lent
# from Search's: (weeks back, pool, borrower, lender, GPUs lent, the day of the lender's window (UTC) the lend held).
# Search's statement shows the credit for the lent hours Research used (docs/chargeback.md), and Research's fair share
# does not count its preemptible use (docs/rubric.md).
DEMO_LEND = (1, "h100", "research", "search", 6, 1)


def seed_scheduler_side(*, pools: dict[str, GpuPool], now: datetime) -> None:
    """Slurm accounts on atlas (account = team slug), a demo scheduler per cluster, and four past
    weeks of published windows with the usage the schedulers reported for them."""
    atlas = pools["a100"].cluster
    for team in Team.objects.all():
        ClusterAccount.objects.get_or_create(cluster=atlas, team=team, defaults={"account": team.slug})
    for cluster in Cluster.objects.filter(slug__in=DEMO_SCHEDULER_TOKENS):
        if not SchedulerClient.objects.filter(cluster=cluster, name="demo-sync").exists():
            allocation_services.scheduler_client_create(
                cluster=cluster, name="demo-sync", token=DEMO_SCHEDULER_TOKENS[cluster.slug]
            )
    for back in range(HISTORY_WEEKS, 0, -1):
        week = weeks.week_label(now.astimezone(weeks.committee_zone()).date() - timedelta(weeks=back))
        if not ReviewCycle.objects.filter(week=week).exists():
            _seed_history_week(week=week, back=back, pools=pools)


def _seed_history_week(*, week: str, back: int, pools: dict[str, GpuPool]) -> None:
    """A past week through the committee's own path: its requests filed (the HISTORY rows, granted in
    full, with HISTORY_ASKED_MORE and HISTORY_DEFERRED), intake closed, scored, decided, finalized (the
    archive writes the week's decision record), published (the engine places the grants); then the
    usage the schedulers reported for its windows, day by day."""
    cycle = cycle_create(week=week)
    chair = get_user_model().objects.get(username="chair")
    # (pool, team, GPUs asked, hours, GPUs granted or None for a deferred request)
    rows: list[tuple[str, str, int, int, int | None]] = [
        (pool, team, HISTORY_ASKED_MORE.get((back, pool, team), gpus), hours, gpus)
        for pool, specs in HISTORY.items() for team, gpus, hours, _share in specs
    ]
    lend_back, lend_pool, borrower = DEMO_LEND[:3]
    rows += [(pool, team, gpus, hours, gpus if (b, pool, team) == (lend_back, lend_pool, borrower) else None)
             for b, pool, team, gpus, hours in HISTORY_DEFERRED if b == back]
    run_back, run_pool, run_team, run_gpus, run_hours, run_weeks, _run_share = DEMO_RUN
    if back == run_back:
        rows.append((run_pool, run_team, run_gpus, run_hours, run_gpus))
    filed: list[tuple[GpuRequest, int | None]] = []
    for pool_slug, team_slug, asked, hours, granted in rows:
        team, pool = Team.objects.get(slug=team_slug), pools[pool_slug]
        lead = get_user_model().objects.get(username=f"{team_slug}-lead")
        is_run = back == run_back and (pool_slug, team_slug) == (run_pool, run_team)
        is_lend = back == lend_back and (pool_slug, team_slug) == (lend_pool, borrower)
        title = f"Weekly {pool.gpu_model} training ({team.name})"
        if is_run:
            title = f"Three-week pre-training ({team.name})"
        elif is_lend:
            title = f"Hyper-parameter sweep on idle GPUs ({team.name})"
        gpu_request = GpuRequest.objects.create(
            team=team, cycle=cycle, pool=pool, title=title,
            gpu_count=asked, min_gpu_count=max(1, asked // 3), duration_hours=hours,
            earliest_start=cycle.starts_at, latest_end=cycle.ends_at, status=RequestStatus.SUBMITTED,
            preemptible_ok=is_lend,
            run_weeks=run_weeks if is_run else 1,
            created_by=lead, submitted_by=lead, submitted_at=cycle.intake_closes_at - timedelta(days=1),
        )
        filed.append((gpu_request, granted))
    cycle = cycle_close_intake(cycle=cycle, actor=chair, now=cycle.intake_closes_at)
    members = [seat.user for seat in CommitteeSeat.objects.active().select_related("user").order_by("role")]
    Score.objects.bulk_create(
        Score(request=gpu_request, member=member, member_name=member.get_full_name(), criterion=criterion,
              value=max(1, min(10, 9 - position // 3 - (granted is None) * 3
                                + dice(week, member.username, gpu_request.title, criterion) % 3 - 1)))
        for position, (gpu_request, granted) in enumerate(filed)
        for member in members
        if not TeamMembership.objects.filter(user=member, team=gpu_request.team).exists()
        for criterion in scoring.MEMBER_SCORED
    )
    for gpu_request, granted in filed:
        pool_key = gpu_request.pool.key
        if granted is None:
            outcome, rationale = "defer", f"{pool_key} is full this week."
        elif gpu_request.preemptible_ok:
            outcome, rationale = "grant", f"As preemptible work: {pool_key}'s standard GPUs are taken this week."
        elif granted < gpu_request.gpu_count:
            outcome, rationale = "partial", f"{granted} of {gpu_request.gpu_count} GPUs: the pool is over-subscribed."
        else:
            outcome, rationale = "grant", "Fits this week."
        request_decide(actor=chair, gpu_request=gpu_request, outcome=outcome, rationale=rationale,
                       granted_gpu_count=granted if outcome == "partial" else None)
    cycle_finalize(cycle=cycle, actor=chair)
    plan = cycle_publish(actor=chair, cycle=cycle)
    shares = {(team, pool): share for pool, specs in HISTORY.items() for team, _gpus, _hours, share in specs}
    shares[(run_team, run_pool)] = DEMO_RUN[-1]
    shares[(borrower, lend_pool)] = 0.9
    for window in plan.windows.select_related("team", "pool", "pool__cluster"):
        share = shares[(window.team.slug, window.pool.slug)]
        day = window.start
        while day < window.end:
            until = min(window.end, day.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1))
            day_hours = Decimal((until - day).total_seconds()) / 3600
            wobble = Decimal(dice(week, window.team.slug, day) % 7 - 3) / 100  # ±3%: days differ
            used = (window.gpu_count * day_hours * (Decimal(share) + wobble)).quantize(Decimal("0.01"))
            UsageRecord.objects.create(
                pool=window.pool, team=window.team, window=window, period_start=day, period_end=until,
                gpu_hours_used=max(Decimal(0), min(used, window.gpu_count * day_hours)),
                mean_utilization_pct=min(Decimal(100), (Decimal(share) * 100 + wobble * 50).quantize(Decimal("0.1"))),
                mean_queue_wait_minutes=Decimal(5 + dice(window.team.slug, day) % 30),
                idempotency_key=f"demo:{week}:{window.team.slug}:{day:%Y-%m-%dT%H}",
                reported_by="demo-sync",
            )
            day = until
    if back == lend_back:
        _seed_lend(plan=plan)


def _seed_lend(*, plan: AllocationPlan) -> None:
    """DEMO_LEND in the week's plan: the elastic evaluation's record that the lender's window sat idle one day and lent
    GPUs (as `elastic_evaluate` writes it), the lender's usage that day down to what it ran, and the borrower's
    preemptible use that day up to the GPUs nobody held and the lent ones. Nothing when the engine placed no
    preemptible window for the borrower."""
    _back, pool_slug, borrower, lender, lent_gpus, day_index = DEMO_LEND
    own = plan.windows.filter(team__slug=lender, pool__slug=pool_slug, tier=WindowTier.STANDARD).first()
    borrowed = plan.windows.filter(team__slug=borrower, pool__slug=pool_slug, tier=WindowTier.PREEMPTIBLE).first()
    if own is None or borrowed is None:
        return
    start = own.start.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=day_index)
    end = start + timedelta(days=1)
    if not (own.start <= start and end <= own.end and borrowed.start <= start and end <= borrowed.end):
        return
    ElasticAction.objects.create(
        kind=ElasticActionKind.IDLE, pool=own.pool, window=own, team=own.team, gpus=lent_gpus,
        utilization_pct=Decimal("12.0"), span_start=start - timedelta(hours=4), span_end=start, policy_version=1,
        started_at=start, ended_at=end,
        explanation=f"{own.team.name}'s window ran at 12% for 4 hours: {lent_gpus} of its {own.gpu_count} GPUs "
                    f"offered to preemptible work.")
    UsageRecord.objects.filter(window=own, period_start=start).update(
        gpu_hours_used=(own.gpu_count - lent_gpus) * 24 * Decimal("0.9"), mean_utilization_pct=Decimal("45.0"))
    held = sum(w.gpu_count for w in plan.windows.filter(pool=own.pool, start__lte=start, end__gte=end)
               .exclude(tier=WindowTier.PREEMPTIBLE))
    per_hour = own.pool.gpu_count - held + lent_gpus
    UsageRecord.objects.filter(window=borrowed, period_start=start).update(
        gpu_hours_used=per_hour * 24, mean_utilization_pct=Decimal("100.0"))
