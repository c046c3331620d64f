"""A believable demo: two clusters, six teams, a committee of four and a week of requests.

Every step looks rows up by their natural key before creating them, so running the seed twice
changes nothing. Later steps (scores, decisions, published plans, usage history) are added as
the features they show are built.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from allocations import selectors as allocation_selectors
from allocations import services as allocation_services
from allocations.elastic import evaluate as elastic_evaluate
from allocations.elastic import services as elastic_services
from allocations.models import (
    AllocationWindow,
    Cluster,
    ClusterAccount,
    GpuPool,
    SchedulerClient,
    SchedulerKind,
    Team,
    UsageRecord,
)
from committee import scoring, selectors, signals, weeks
from committee.models import (
    Alternative,
    CommitteeSeat,
    CycleStatus,
    Decision,
    DecisionOutcome,
    EmergencyRequest,
    GpuRequest,
    ImpactForecast,
    MembershipRole,
    Notification,
    RequestEvent,
    RequestStatus,
    ReviewCycle,
    Score,
    SeatRole,
    TeamMembership,
    UsageReport,
)
from committee.services import (
    cycle_close_intake,
    cycle_create,
    cycle_finalize,
    cycle_publish,
    request_decide,
    score_record,
)
from committee.services.discussion import request_question_answer, request_question_ask
from committee.services.emergency import emergency_request_decide, emergency_request_file
from committee.services.review import alternative_gpus

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


@dataclass
class DemoRequest:
    team: str
    pool: str
    title: str
    gpus: int
    min_gpus: int
    hours: int
    start_h: int  # hours after the week starts
    end_h: int
    impact: tuple[str, int, str, str, str]  # kind, value, unit, confidence, narrative
    # Last week's usage as the team states it: granted, used, utilization %, notes. The history weeks' usage
    # records (seed_scheduler_side) are what the schedulers measured; the stated figures sit close to them,
    # except Ads on A100 (a gap over 10%, flagged) and Ads on H100 (no H100 time: not measured).
    usage: tuple[int, int, int, str]
    alternatives: list[tuple[str, int, str, int | None, bool]] = field(default_factory=list)
    preemptible: bool = False
    baseline: int | None = None
    deadline_h: int | None = None
    slip: str = ""
    status: str = RequestStatus.SUBMITTED


REQUESTS = [
    DemoRequest(
        "search", "a100", "Ranking model retrain (BERT-large cross-encoder)", 32, 16, 72, 0, 120,
        ("revenue", 180000, "USD/week", "high", "Fresh ranker lifts search conversion 1.2% in the last A/B test."),
        (2304, 2150, 93, "Ran the full schedule; two restarts after node failures."),
        [("Distilled 6-layer student ranker", 690, "NDCG@10 −0.4%", 2800, True)],
    ),
    DemoRequest(
        "ads", "a100", "CTR model weekly refresh", 16, 8, 48, 24, 144,
        ("revenue", 95000, "USD/week", "medium", "Stale CTR models lose about 0.8% of ad revenue per week."),
        # Stated well above what the schedulers measured (about half): the review flags the gap.
        (1536, 960, 62, "Lost Tuesday to the broken feature pipeline; the rest of the week ran."),
        [("Mixed-precision (bf16) training", 580, "AUC −0.001", 2100, True)],
    ),
    DemoRequest(
        "recommendations", "a100", "Two-tower retrain with 128-d embeddings", 24, 16, 60, 0, 168,
        ("retention", 2, "% fewer 30-day churners", "medium", "Fresher embeddings keep cold-start users engaged."),
        (1152, 1100, 95, ""),
        [("Keep 256-d embeddings (last quarter's setup)", 2400, "Recall@50 +0.2%", 9600, True)],
        baseline=2400,
    ),
    DemoRequest(
        "vision", "a100", "Product image classifier for the holiday launch", 16, 12, 36, 0, 72,
        ("revenue", 250000, "USD over the season", "high", "Visual search headlines the holiday catalog."),
        (576, 560, 96, ""),
        [("Fine-tune only the last two blocks", 380, "top-1 −2.5%", 1500, False)],
        deadline_h=60, slip="The holiday catalog launches without visual search.",
    ),
    DemoRequest(
        "speech", "a100", "ASR fine-tune on new accents", 8, 4, 96, 0, 168,
        ("retention", 1, "% fewer abandoned voice sessions", "medium", "Accent errors drive voice-search abandonment."),
        (504, 465, 91, ""),
        [("Adapter layers instead of full fine-tune", 400, "WER +0.3 points", 1600, True)],
        preemptible=True,
    ),
    DemoRequest(
        "research", "a100", "Pretraining ablations (optimizer study)", 32, 8, 120, 0, 168,
        ("other", 0, "publications", "low", "Exploratory: informs next quarter's pretraining recipe."),
        (768, 750, 97, ""),
        [("Run the ablation grid at 1/4 model scale", 960, "conclusions may not transfer", 3800, True)],
        preemptible=True,
    ),
    DemoRequest(
        "search", "h100", "LLM query rewriter fine-tune", 16, 8, 48, 0, 120,
        ("revenue", 120000, "USD/week", "medium", "Rewrites fix 6% of zero-result queries."),
        (768, 700, 91, ""),
        [("LoRA fine-tune of the 8B model", 310, "rewrite acceptance −1%", 1200, True)],
    ),
    DemoRequest(
        "ads", "h100", "Creative generation model evaluation", 8, 8, 24, 48, 168,
        ("revenue", 40000, "USD/week", "low", "Evaluate before the Q1 creative-automation pilot."),
        (0, 0, 0, "No H100 time last week."),
        [],
    ),
    DemoRequest(
        "recommendations", "h100", "Sequence recommender (transformer) training", 16, 8, 72, 0, 168,
        ("retention", 3, "% more weekly active users", "medium", "Session-aware recommendations for the home feed."),
        (1152, 1090, 94, ""),
        [("fp8 training on H100", 750, "NDCG −0.1%", 3000, True)],
    ),
    DemoRequest(
        "vision", "h100", "Diffusion model for product backgrounds", 24, 16, 48, 24, 168,
        ("revenue", 60000, "USD/week", "medium", "Generated backgrounds raise click-through on marketplace listings."),
        (576, 505, 88, ""),
        [("Distilled 4-step sampler", 520, "FID +1.8", 2000, True)],
        deadline_h=150, slip="Marketplace refresh slips to January.",
    ),
    DemoRequest(
        "speech", "h100", "Text-to-speech voice model", 8, 4, 72, 0, 168,
        ("other", 4, "new voices", "medium", "Voices requested by the accessibility team."),
        (504, 470, 93, ""),
        [],
        preemptible=True,
    ),
    DemoRequest(
        "research", "h100", "Long-context attention study", 32, 16, 96, 0, 168,
        ("other", 0, "publications", "low", "Still scoping: numbers are rough."),
        (0, 0, 0, ""),
        [("Run at 32k context instead of 128k", 900, "less conclusive", 3600, True)],
        status=RequestStatus.DRAFT,
    ),
]

WITHDRAWN = [
    DemoRequest(
        "speech", "a100", "Old ASR evaluation rerun", 8, 8, 12, 0, 48,
        ("other", 0, "n/a", "low", "Superseded by the accent fine-tune."),
        (0, 0, 0, ""),
        status=RequestStatus.WITHDRAWN,
    ),
    DemoRequest(
        "ads", "a100", "CTR model refresh (first draft)", 32, 16, 48, 24, 144,
        ("revenue", 95000, "USD/week", "medium", "Refiled at half the size."),
        (1536, 760, 41, ""),
        status=RequestStatus.WITHDRAWN,
    ),
]


def _user(username: str, full_name: str) -> Any:
    user_model = get_user_model()
    user, created = user_model.objects.get_or_create(username=username)
    if created:
        first, _sep, last = full_name.partition(" ")
        user.first_name, user.last_name = first, last
        user.email = f"{username}@docket.example"
        user.set_password(DEMO_PASSWORD)
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
    return logins


def _demo_request(*, spec: DemoRequest, cycle: ReviewCycle, pools: dict[str, GpuPool], at: datetime) -> GpuRequest:
    team = Team.objects.get(slug=spec.team)
    existing = GpuRequest.objects.filter(team=team, cycle=cycle, pool=pools[spec.pool], title=spec.title).first()
    if existing:
        return existing
    author = get_user_model().objects.get(username=f"{spec.team}-lead")
    submitted = spec.status != RequestStatus.DRAFT
    gpu_request = GpuRequest.objects.create(
        team=team,
        cycle=cycle,
        pool=pools[spec.pool],
        title=spec.title,
        gpu_count=spec.gpus,
        min_gpu_count=spec.min_gpus,
        duration_hours=spec.hours,
        earliest_start=cycle.starts_at + timedelta(hours=spec.start_h),
        latest_end=cycle.starts_at + timedelta(hours=spec.end_h),
        preemptible_ok=spec.preemptible,
        baseline_gpu_hours=spec.baseline,
        deadline=cycle.starts_at + timedelta(hours=spec.deadline_h) if spec.deadline_h is not None else None,
        slip_consequence=spec.slip,
        status=spec.status,
        created_by=author,
        submitted_by=author if submitted else None,
        submitted_at=at if submitted else None,
    )
    granted, used, utilization, notes = spec.usage
    UsageReport.objects.create(
        request=gpu_request,
        gpu_hours_granted=granted,
        gpu_hours_used=used,
        mean_utilization_pct=utilization,
        notes=notes,
    )
    kind, value, unit, confidence, narrative = spec.impact
    ImpactForecast.objects.create(
        request=gpu_request,
        kind=kind,
        estimated_value=Decimal(value),
        value_unit=unit,
        confidence=confidence,
        narrative=narrative,
    )
    for description, gpu_hours, quality, cost, feasible in spec.alternatives:
        Alternative.objects.create(
            request=gpu_request,
            description=description,
            gpu_hours=gpu_hours,
            quality_change=quality,
            cost_estimate=Decimal(cost) if cost is not None else None,
            feasible=feasible,
        )
    RequestEvent.objects.create(request=gpu_request, at=at, actor_name=author.get_full_name(), action="created")
    if submitted:
        RequestEvent.objects.create(request=gpu_request, at=at, actor_name=author.get_full_name(), action="submitted")
    if spec.status == RequestStatus.WITHDRAWN:
        RequestEvent.objects.create(request=gpu_request, at=at, actor_name=author.get_full_name(), action="withdrawn")
    return gpu_request


def seed_intake_cycle(*, pools: dict[str, GpuPool], now: datetime) -> ReviewCycle:
    """Next week's cycle, open for intake, with its requests."""
    cycle = cycle_create(week=weeks.next_week_label(now))
    if cycle.intake_closes_at <= now:
        # Seeding after Friday's close: keep the demo usable by leaving intake open until tomorrow.
        ReviewCycle.objects.filter(pk=cycle.pk).update(intake_closes_at=now + timedelta(days=1))
        cycle.refresh_from_db()
    for offset, spec in enumerate(REQUESTS + WITHDRAWN):
        if (spec.team, spec.pool) == NOT_FILED_YET:
            continue
        _demo_request(spec=spec, cycle=cycle, pools=pools, at=now - timedelta(hours=48 - offset))
    return cycle


# The committee's questions to teams in the open week (committee member, team, request title, question, the
# answer by the team's lead or None while it is open): the review and the request pages show both states.
QUESTIONS = [
    ("product", "vision", "Product image classifier for the holiday launch",
     "Does the holiday launch still hold if the training ends on Thursday instead of Wednesday?",
     "Yes: the catalog freezes on Friday morning; Thursday evening is the latest that still makes it."),
    ("finance", "ads", "CTR model weekly refresh",
     "You state 1,536 GPU-hours granted and 960 used last week, and the scheduler measured about half of that. "
     "Which figure is right?", None),
]


def seed_questions(*, cycle: ReviewCycle) -> None:
    """One question answered and one still open, asked and answered through the discussion services (the teams
    and the committee get their notifications). Idempotent: a question already asked is not asked again."""
    users = get_user_model().objects
    for member, team_slug, title, body, answer in QUESTIONS:
        gpu_request = GpuRequest.objects.filter(cycle=cycle, team__slug=team_slug, title=title,
                                                status=RequestStatus.SUBMITTED).first()
        if gpu_request is None or gpu_request.questions.filter(body=body).exists():
            continue
        question = request_question_ask(actor=users.get(username=member), gpu_request=gpu_request, body=body)
        if answer is not None:
            request_question_answer(actor=users.get(username=f"{team_slug}-lead"), question=question, answer=answer)


# Search has not filed on H100 in the open week yet: the README's first step (search-lead files a request) has a
# pool to file on.
NOT_FILED_YET = ("search", "h100")


@transaction.atomic
def seed_demo(*, now: datetime | None = None) -> list[tuple[str, str]]:
    now = now or timezone.now()
    pools = seed_resources()
    logins = seed_people()
    seed_scheduler_side(pools=pools, now=now)
    intake = seed_intake_cycle(pools=pools, now=now)
    seed_questions(cycle=intake)
    seed_reviewed_week(pools=pools, now=now)
    seed_published_week(now=now)
    seed_emergency(pools=pools, now=now)
    seed_dashboard_history(pools=pools, now=now)
    seed_idle_grant(now=now)
    seed_history_read(weeks_in_play={weeks.current_week_label(now), intake.week}, now=now)
    signals.demo_seeded.send(sender=None, now=now, logins=logins)
    return logins


def seed_history_read(*, weeks_in_play: set[str], now: datetime) -> None:
    """The demo's people have read what its past weeks told them: a fresh demo's inbox holds the notices about
    the week in force and the week open for intake, not one "intake closed" per seeded week. The notifications
    are recorded once the seeding commits, so this runs then too, after them."""

    def mark_read() -> None:
        unread = Notification.objects.filter(read_at__isnull=True, params__has_key="week")
        unread.exclude(params__week__in=sorted(weeks_in_play)).update(read_at=now)

    transaction.on_commit(mark_read)


# --- allocations: accounts, scheduler clients, four weeks of history, the published week --------

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
    rows += [(pool, team, gpus, hours, None) for b, pool, team, gpus, hours in HISTORY_DEFERRED if b == back]
    filed: list[tuple[GpuRequest, int | None]] = []
    for pool_slug, team_slug, asked, hours, granted in rows:
        team, pool = Team.objects.get(slug=team_slug), pools[pool_slug]
        lead = get_user_model().objects.get(username=f"{team_slug}-lead")
        gpu_request = GpuRequest.objects.create(
            team=team, cycle=cycle, pool=pool, title=f"Weekly {pool.gpu_model} training ({team.name})",
            gpu_count=asked, min_gpu_count=max(1, asked // 3), duration_hours=hours,
            earliest_start=cycle.starts_at, latest_end=cycle.ends_at, status=RequestStatus.SUBMITTED,
            created_by=lead, submitted_by=lead, submitted_at=cycle.intake_closes_at - timedelta(days=1),
        )
        filed.append((gpu_request, granted))
    cycle = cycle_close_intake(cycle=cycle, actor=chair, now=cycle.intake_closes_at)
    members = [seat.user for seat in CommitteeSeat.objects.active().select_related("user").order_by("role")]
    Score.objects.bulk_create(
        Score(request=gpu_request, member=member, member_name=member.get_full_name(), criterion=criterion,
              value=max(1, min(10, 9 - position // 3 - (granted is None) * 3
                                + _dice(week, member.username, gpu_request.title, criterion) % 3 - 1)))
        for position, (gpu_request, granted) in enumerate(filed)
        for member in members
        if not TeamMembership.objects.filter(user=member, team=gpu_request.team).exists()
        for criterion in scoring.MEMBER_SCORED
    )
    for gpu_request, granted in filed:
        pool_key = gpu_request.pool.key
        if granted is None:
            outcome, rationale = "defer", f"{pool_key} is full this week."
        elif granted < gpu_request.gpu_count:
            outcome, rationale = "partial", f"{granted} of {gpu_request.gpu_count} GPUs: the pool is over-subscribed."
        else:
            outcome, rationale = "grant", "Fits this week."
        request_decide(actor=chair, gpu_request=gpu_request, outcome=outcome, rationale=rationale,
                       granted_gpu_count=granted if outcome == "partial" else None)
    cycle_finalize(cycle=cycle, actor=chair)
    plan = cycle_publish(actor=chair, cycle=cycle)
    shares = {(team, pool): share for pool, specs in HISTORY.items() for team, _gpus, _hours, share in specs}
    for window in plan.windows.select_related("team", "pool", "pool__cluster"):
        share = shares[(window.team.slug, window.pool.slug)]
        day = window.start
        while day < window.end:
            until = min(window.end, day.replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1))
            day_hours = Decimal((until - day).total_seconds()) / 3600
            wobble = Decimal(_dice(week, window.team.slug, day) % 7 - 3) / 100  # ±3%: days differ
            used = (window.gpu_count * day_hours * (Decimal(share) + wobble)).quantize(Decimal("0.01"))
            UsageRecord.objects.create(
                pool=window.pool, team=window.team, window=window, period_start=day, period_end=until,
                gpu_hours_used=max(Decimal(0), min(used, window.gpu_count * day_hours)),
                mean_utilization_pct=min(Decimal(100), (Decimal(share) * 100 + wobble * 50).quantize(Decimal("0.1"))),
                mean_queue_wait_minutes=Decimal(5 + _dice(window.team.slug, day) % 30),
                idempotency_key=f"demo:{week}:{window.team.slug}:{day:%Y-%m-%dT%H}",
                reported_by="demo-sync",
            )
            day = until


def _dice(*parts: object) -> int:
    """A number fixed by its inputs (unlike hash(), the same in every process): the demo never changes."""
    return zlib.crc32(repr(parts).encode())


def seed_published_week(*, now: datetime) -> None:
    """Publish the current week once it is finalized, so its windows are active now."""
    cycle = ReviewCycle.objects.filter(week=weeks.current_week_label(now)).first()
    if cycle is None or cycle.status != CycleStatus.FINALIZED:
        return
    chair = get_user_model().objects.get(username="chair")
    plan = cycle_publish(actor=chair, cycle=cycle)
    # What the Slurm sync on atlas reported after its first pass: all held but one node short.
    sync = SchedulerClient.objects.get(cluster__slug="atlas", name="demo-sync")
    statuses = []
    for index, window in enumerate(plan.windows.filter(cluster=sync.cluster).select_related("pool").order_by("id")):
        nodes = -(-window.gpu_count // window.pool.gpus_per_node)
        short = index == 1 and nodes > 1
        statuses.append({
            "window": window.pk,
            "state": "short" if short else "in_sync",
            "nodes_requested": nodes,
            "nodes_reserved": nodes - 1 if short else nodes,
            "message": f"short by 1 node: gpu07 is drained (reserved {nodes - 1} of {nodes})" if short
            else f"reserved {window.gpu_count} GPUs on {nodes} nodes ({nodes * window.pool.gpus_per_node} GPUs)",
        })
    allocation_services.sync_status_record(client=sync, statuses=statuses)


IDLE_DEMO_UTILIZATION = [Decimal("12.0"), Decimal("8.0"), Decimal("15.0"), Decimal("10.0")]


def seed_idle_grant(*, now: datetime) -> None:
    """A granted window on atlas that the demo scheduler measured idle for the last four hours, and the elastic
    evaluation that flags it and offers its unused GPUs (docs/elastic.md). Once: nothing when the demo has run."""
    if UsageRecord.objects.filter(idempotency_key__startswith="demo-idle:").exists():
        return
    span_end = elastic_evaluate.span_end_of(now)
    span_start = span_end - timedelta(hours=len(IDLE_DEMO_UTILIZATION))
    window = (
        AllocationWindow.objects.filter(
            cluster__slug="atlas", tier__in=elastic_evaluate.GRANTED_TIERS, start__lte=span_start, end__gt=now,
            withdrawal__isnull=True,
        )
        .select_related("pool", "team")
        .order_by("id")
        .first()
    )
    if window is None:
        return  # no grant has been running long enough at this moment of the week
    for hour, utilization in enumerate(IDLE_DEMO_UTILIZATION):
        start = span_start + timedelta(hours=hour)
        UsageRecord.objects.create(
            pool=window.pool, team=window.team, window=window, period_start=start,
            period_end=start + timedelta(hours=1),
            gpu_hours_used=(window.gpu_count * utilization / 100).quantize(Decimal("0.01")),
            mean_utilization_pct=utilization, mean_queue_wait_minutes=Decimal(0),
            idempotency_key=f"demo-idle:{window.pk}:{start:%Y-%m-%dT%H}", reported_by="demo-sync",
        )
    elastic_services.elastic_evaluate(now=now)


EMERGENCY_TITLE = "Hotfix: fraud-detection model for a live attack"
EMERGENCY_JUSTIFICATION = (
    "A card-testing attack started this morning; the current model misses the new pattern. A retrain on "
    "today's labels needs 8 GPUs for 6 hours, now: every hour costs about USD 40,000 in chargebacks."
)


def seed_emergency(*, pools: dict[str, GpuPool], now: datetime) -> None:
    """An out-of-cycle emergency in the running week: Ads files it, the product lead and the chair approve
    (the chair wakes the cold standby), and it is placed at once as the week's next plan version.
    Idempotent: seeded once."""
    if EmergencyRequest.objects.filter(request__title=EMERGENCY_TITLE).exists():
        return
    current = ReviewCycle.objects.filter(week=weeks.current_week_label(now), status=CycleStatus.PUBLISHED).first()
    if current is None or (current.ends_at - now) < timedelta(hours=8):
        return  # nothing published to place it beside, or too little of the week left for the demo
    users = get_user_model().objects
    emergency = emergency_request_file(
        actor=users.get(username="ads-lead"), team=Team.objects.get(slug="ads"), pool=pools["a100"],
        title=EMERGENCY_TITLE, gpu_count=8, min_gpu_count=4, duration_hours=6,
        justification=EMERGENCY_JUSTIFICATION, now=now,
    )
    emergency_request_decide(actor=users.get(username="product"), emergency=emergency, approve=True,
                             note="Chargebacks outweigh a day of anyone's training.", now=now)
    emergency_request_decide(actor=users.get(username="chair"), emergency=emergency, approve=True,
                             use_standby=True, note="Approved; use the standby if the burst reserve is short.",
                             now=now)


# --- the committee: the current week scored, decided and finalized -------------------------------

# The request the demo's committee grants its cheaper alternative (fp8 training: 750 GPU-hours, not 1,152).
ALTERNATIVE_GRANTED = "Sequence recommender (transformer) training"
# How a member reads an impact forecast before adjusting for the narrative: by its confidence.
IMPACT_BY_CONFIDENCE = {"high": 8, "medium": 6, "low": 3}


def seed_reviewed_week(*, pools: dict[str, GpuPool], now: datetime) -> ReviewCycle:
    """The current week's cycle as the committee left it after last Monday's review.

    Its requests were filed before intake closed, every member scored them (close to the
    suggestions, a point either way; nobody scores their own team's), the chair recorded a
    decision for each ranked request in rank order until each pool was full, and finalized.
    Publishing is `seed_published_week`'s step. Idempotent: a finalized cycle is left alone.
    """
    cycle = cycle_create(week=weeks.current_week_label(now))
    if cycle.status in (CycleStatus.FINALIZED, CycleStatus.PUBLISHED):
        return cycle
    filed_at = cycle.intake_closes_at - timedelta(days=2)
    specs = [spec for spec in REQUESTS if spec.status == RequestStatus.SUBMITTED]
    for offset, spec in enumerate(specs):
        _demo_request(spec=spec, cycle=cycle, pools=pools, at=filed_at + timedelta(hours=offset))
    chair = get_user_model().objects.get(username="chair")
    if cycle.status == CycleStatus.OPEN:
        cycle = cycle_close_intake(cycle=cycle, actor=chair, now=min(now, cycle.intake_closes_at))
    members = [seat.user for seat in CommitteeSeat.objects.active().select_related("user").order_by("role")]
    for row in selectors.cycle_ranking(cycle=cycle):
        _score_as_the_committee(row=row, members=members)
    _decide_in_rank_order(cycle=cycle, chair=chair)
    return cycle_finalize(cycle=cycle, actor=chair)


def _score_as_the_committee(*, row: selectors.ReviewRow, members: list[Any]) -> None:
    gpu_request = row.request
    forecast = gpu_request.impact_forecast
    base = {
        scoring.BUSINESS_IMPACT: IMPACT_BY_CONFIDENCE[forecast.confidence],
        scoring.FEASIBILITY: row.suggestions[scoring.FEASIBILITY].value,
        scoring.URGENCY: row.suggestions[scoring.URGENCY].value,
    }
    for member in members:
        if TeamMembership.objects.filter(user=member, team=gpu_request.team).exists():
            continue  # conflict of interest: the tech lead does not score Research
        for criterion, value in base.items():
            nudge = _dice(member.username, gpu_request.title, criterion) % 3 - 1
            score_record(actor=member, gpu_request=gpu_request, criterion=criterion,
                         value=max(0, min(10, value + nudge)))


def _decide_in_rank_order(*, cycle: ReviewCycle, chair: Any) -> None:
    """Grant in rank order while a pool has standard GPU-hours left (preemptible work may use the burst
    reserve), give what fits above the request's minimum as a partial grant, defer the rest; reject
    low-impact requests that also rank in the bottom half. Recommendations' sequence recommender is
    granted its cheaper alternative instead (the seed's bidding model: the cheaper variant first, the
    full model later), when that fits."""
    capacity = {p.pk: allocation_selectors.pool_week_capacity(pool=p, hours=cycle.hours)
                for p in GpuPool.objects.select_related("cluster")}
    standard = {pk: c.standard_gpu_hours for pk, c in capacity.items()}
    burst = {pk: c.burst_gpu_hours for pk, c in capacity.items()}
    rows = [row for row in selectors.cycle_ranking(cycle=cycle) if row.result.rank is not None]
    alternative_granted = Decision.objects.filter(cycle=cycle, outcome=DecisionOutcome.ALTERNATIVE).exists()
    for row in rows:
        r, rank, total = row.request, row.result.rank, row.result.total
        assert rank is not None, "rows holds only ranked requests"
        left = standard[r.pool_id] + (burst[r.pool_id] if r.preemptible_ok else 0)
        impact = row.result.criterion(scoring.BUSINESS_IMPACT).score or Decimal(0)
        where = r.pool.key
        fits_gpus = min(r.gpu_count, left // r.duration_hours)
        cheaper = (
            _cheaper_alternative_that_fits(gpu_request=r, gpu_hours_left=left)
            if r.title == ALTERNATIVE_GRANTED and not alternative_granted else None
        )
        alternative = None
        if impact < 4 and rank > len(rows) // 2:
            outcome, granted = "reject", None
            rationale = (f"Ranked #{rank} ({total}). Business impact {impact} of 10 on an exploratory forecast; "
                         f"resubmit with a concrete result the work unlocks.")
        elif cheaper is not None:
            alternative, alternative_granted = cheaper, True
            outcome, granted = "alternative", alternative_gpus(gpu_request=r, alternative_gpu_hours=cheaper.gpu_hours)
            rationale = (f"Ranked #{rank} ({total}). {where} is contended: run the cheaper alternative first "
                         f"({cheaper.description}, {cheaper.gpu_hours:,} GPU-hours instead of "
                         f"{r.requested_gpu_hours:,}) and refile the full model next week if it falls short.")
        elif fits_gpus >= r.gpu_count:
            outcome, granted = "grant", r.gpu_count
            # Say what was decided, not where it lands: the GPU-hours left are no promise of a window (the
            # engine places it at publish, and the request page shows the difference if there is one).
            rationale = f"Ranked #{rank} ({total}). Granted in full, in rank order on {where}."
        elif fits_gpus >= r.min_gpu_count:
            outcome, granted = "partial", fits_gpus
            rationale = (f"Ranked #{rank} ({total}). {where} is over-subscribed: {fits_gpus} of {r.gpu_count} GPUs, "
                         f"at least the {r.min_gpu_count} the work runs on.")
        else:
            outcome, granted = "defer", None
            rationale = (f"Ranked #{rank} ({total}). {where} is full with higher-ranked work; "
                         f"first in line next week if it is refiled.")
        if granted:
            used = granted * r.duration_hours
            from_standard = min(used, standard[r.pool_id])
            standard[r.pool_id] -= from_standard
            burst[r.pool_id] -= used - from_standard
        request_decide(actor=chair, gpu_request=r, outcome=outcome, rationale=rationale,
                       granted_gpu_count=granted if outcome == "partial" else None,
                       alternative=alternative.pk if alternative else None)


def _cheaper_alternative_that_fits(*, gpu_request: GpuRequest, gpu_hours_left: int) -> Alternative | None:
    for alternative in gpu_request.alternatives.all():
        gpus = alternative_gpus(gpu_request=gpu_request, alternative_gpu_hours=alternative.gpu_hours)
        if (alternative.feasible and alternative.gpu_hours < gpu_request.requested_gpu_hours
                and gpus * gpu_request.duration_hours <= gpu_hours_left):
            return alternative
    return None


# --- the dashboards: pool costs, the committee's previous weeks, usage reported before Docket ------

POOL_COSTS = {"a100": Decimal("2.40"), "h100": Decimal("4.10")}  # per GPU-hour, for the monthly review
# The history weeks' requests are the HISTORY rows (granted in full), except these, which asked for more
# than they got, and these new ones, deferred: (weeks back, pool, team, GPUs asked, hours).
HISTORY_ASKED_MORE = {(3, "a100", "vision"): 24, (3, "a100", "research"): 24}
HISTORY_DEFERRED = [(2, "h100", "ads", 8, 48), (1, "h100", "research", 16, 72)]
# Before Docket allocated them, the schedulers reported usage for months (the monthly review's baseline).
# Ads trained on H100 then; it moved to A100 with Docket. Queues were shorter.
BEFORE_DOCKET_WEEKS = range(HISTORY_WEEKS + 1, HISTORY_WEEKS + 17)
BEFORE_DOCKET_ADS = ("ads", 16, 96, 0.50)


def seed_dashboard_history(*, pools: dict[str, GpuPool], now: datetime) -> None:
    """What the dashboards and the monthly review show: a cost per GPU-hour on each pool, the review cycles of
    the four history weeks (their requests and decisions, some asking for more than the pool had), and daily
    usage of the sixteen weeks before them. The history weeks' cycles are `_seed_history_week`'s.
    Idempotent: each week is seeded once."""
    for slug, cost in POOL_COSTS.items():
        GpuPool.objects.filter(pk=pools[slug].pk, cost_per_gpu_hour=0).update(cost_per_gpu_hour=cost)
    today = now.astimezone(weeks.committee_zone()).date()
    teams = {team.slug: team for team in Team.objects.all()}
    for back in BEFORE_DOCKET_WEEKS:
        week = weeks.week_label(today - timedelta(weeks=back))
        if not UsageRecord.objects.filter(idempotency_key__startswith=f"demo-before:{week}:").exists():
            _seed_usage_before_docket(week=week, pools=pools, teams=teams)


def _seed_usage_before_docket(*, week: str, pools: dict[str, GpuPool], teams: dict[str, Team]) -> None:
    start, _end = weeks.week_bounds(week)
    rows = [(pool, *spec) for pool, specs in HISTORY.items() for spec in specs if (pool, spec[0]) != ("a100", "ads")]
    rows.append(("h100", *BEFORE_DOCKET_ADS))
    records = []
    for day_index in range(7):
        day = start + timedelta(days=day_index)
        until = day + timedelta(days=1)
        for pool_slug, team_slug, gpus, hours, share in rows:
            wobble = Decimal(_dice(week, team_slug, pool_slug, day_index) % 7 - 3) / 100
            used = (Decimal(gpus * hours) / 7 * (Decimal(share) + wobble)).quantize(Decimal("0.01"))
            records.append(UsageRecord(
                pool=pools[pool_slug], team=teams[team_slug], period_start=day, period_end=until,
                gpu_hours_used=max(Decimal(0), used),
                mean_utilization_pct=min(Decimal(100), (Decimal(share) * 100 + wobble * 50).quantize(Decimal("0.1"))),
                mean_queue_wait_minutes=Decimal(6 + _dice(team_slug, pool_slug, day) % 8),
                idempotency_key=f"demo-before:{week}:{team_slug}:{pool_slug}:{day_index}",
                reported_by="demo-sync",
            ))
    UsageRecord.objects.bulk_create(records)

