from __future__ import annotations

import csv
import io
from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db.models import Sum
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from allocations.models import (
    AllocationPlan,
    AllocationWindow,
    Cluster,
    ClusterAccount,
    GpuPool,
    SchedulerClient,
    Team,
    UsageRecord,
    WindowSyncStatus,
)
from committee import weeks
from committee.demo import DEMO_SCHEDULER_TOKENS
from committee.models import (
    CommitteeSeat,
    CycleStatus,
    Decision,
    FairShareSnapshot,
    GpuRequest,
    Notification,
    QuestionStatus,
    RequestQuestion,
    RequestStatus,
    ReviewCycle,
    Score,
)
from committee.quarters import quarter_of
from committee.selectors import rubric_for_week
from governed.models import PolicyChange
from policy import selectors as policy_selectors
from policy.models import Proposal
from reports.dashboards import monthly
from reports.executive import selectors as executive_selectors
from reports.models import BufferFund, BufferSpend, DeferredPurchase
from tests.clock import FIXED_NOW
from tests.links_crawl import crawl

MODELS = (Cluster, GpuPool, Team, CommitteeSeat, GpuRequest, ReviewCycle, PolicyChange, Score, Decision,
          FairShareSnapshot, RequestQuestion, AllocationPlan, AllocationWindow, UsageRecord, SchedulerClient,
          ClusterAccount, Proposal, BufferFund, BufferSpend, DeferredPurchase)


def _counts():
    return {model.__name__: model.objects.count() for model in (*MODELS, get_user_model())}


class TestTheSeededDemo:
    """What one seed_demo leaves in the database (the class's tests share it: `seeded_demo`, tests/conftest.py): the
    review's side, the schedulers' (accounts, demo scheduler tokens, four weeks of windows and usage) and the policy
    lab's. One class, so that the demo is seeded once for all of them."""

    def test_seed_demo_builds_the_demo_and_prints_logins(self, seeded_demo, db):
        out = seeded_demo.out
        assert "search-lead" in out and "chair" in out and "docket-demo" in out
        assert sorted(Team.objects.values_list("slug", flat=True)) == sorted(
            ["search", "ads", "recommendations", "vision", "speech", "research"]
        )
        assert {(p.gpu_model, p.gpu_count) for p in GpuPool.objects.all()} == {("A100", 64), ("H100", 32)}
        assert CommitteeSeat.objects.count() == 4
        cycle = ReviewCycle.objects.get(status="open")
        submitted = GpuRequest.objects.filter(cycle=cycle, status=RequestStatus.SUBMITTED)
        assert submitted.count() >= 10
        for gpu_request in submitted:
            assert gpu_request.usage_report and gpu_request.impact_forecast
        # The cases a committee meets: an efficiency lever, a distilled variant at ~30%, an urgent launch.
        assert GpuRequest.objects.filter(baseline_gpu_hours__isnull=False).exists()
        assert GpuRequest.objects.filter(deadline__isnull=False).exists()
        assert rubric_for_week(week=cycle.week).number == 1  # the open cycle is scored with the charter's rubric

    def test_seed_demo_leaves_the_current_week_scored_decided_and_finalized(self, seeded_demo, db):
        from django.utils import timezone

        cycle = ReviewCycle.objects.get(week=weeks.current_week_label(timezone.now()))
        assert cycle.status in (CycleStatus.FINALIZED, CycleStatus.PUBLISHED)  # publishing is a later step
        assert cycle.finalized_by_name == "Chris Chair" and rubric_for_week(week=cycle.week).number == 1
        requests = GpuRequest.objects.filter(cycle=cycle, is_emergency=False, is_fast_lane=False)
        assert requests.count() >= 10 and set(requests.values_list("status", flat=True)) == {RequestStatus.DECIDED}
        decisions = Decision.objects.filter(cycle=cycle, request__is_emergency=False, request__is_fast_lane=False)
        assert decisions.count() == requests.count()
        assert all(d.rationale and d.priority_rank for d in decisions)
        assert decisions.filter(outcome="grant").exists() and decisions.exclude(outcome="grant").exists()
        # Everyone scored everything except their own team's: the tech lead is in Research.
        scores = Score.objects.filter(request__cycle=cycle)
        assert scores.filter(member__username="tech", request__team__slug="research").count() == 0
        assert scores.filter(member__username="tech").count() == 3 * (requests.count() - 1)
        assert FairShareSnapshot.objects.filter(cycle=cycle).count() == Team.objects.count()

    def test_seed_demo_shows_an_idle_grant_flagged_and_offered(self, seeded_demo, db):
        from allocations.models import ElasticAction

        [action] = ElasticAction.objects.filter(kind="idle", ended_at__isnull=True)
        assert action.window is not None and action.window.cluster.slug == "atlas" and action.ended_at is None
        assert action.utilization_pct == Decimal("11.3") and action.gpus == action.window.gpu_count * 887 // 1000
        assert "granted but idle" in action.explanation

    def test_seed_demo_has_three_departments_with_budgets_one_near_its_limit_and_a_request_over_it(
        self, seeded_demo, db
    ):
        from committee.quarters import quarter_of
        from committee.selectors import department_budgets, request_budget_map

        quarter = quarter_of(timezone.now())
        budgets = {b.slug: b for b in department_budgets(quarter=quarter)}
        assert sorted(budgets) == ["consumer", "labs", "perception"]
        assert not Team.objects.filter(department__isnull=True).exists()
        assert all(b.has_budget and b.spent > 0 for b in budgets.values())
        assert budgets["consumer"].alert_pct == 80 and budgets["labs"].alert_pct is None
        cycle = ReviewCycle.objects.filter(requests__isnull=False).distinct().latest("starts_at")  # next week's
        requests = list(cycle.requests.select_related("team", "pool"))
        flagged = [b for b in request_budget_map(requests=requests, quarter=quarter_of(cycle.starts_at),
                                                 week=cycle.week).values()
                   if b.exceeds]
        assert flagged and {b.budget.slug for b in flagged} == {"consumer"}

    def test_seed_demo_lent_gpus_last_week_credited_on_the_statement_and_free_for_fairness(self, seeded_demo, db):
        from allocations.models import ElasticAction, UsageRecord
        from committee.selectors import fair_share_live
        from reports.statements.selectors import statement_for_month

        # Search's standard window on orion sat idle a day last week and lent 6 GPUs; Research's preemptible work ran
        # on them: 6 × 24 GPU-hours credited at orion's price, on the statement of the window's month.
        [lend] = ElasticAction.objects.filter(kind="idle", ended_at__isnull=False)
        window = lend.window
        assert window is not None and (window.team.slug, window.pool.key, lend.gpus) == ("search", "orion/h100", 6)
        statement = statement_for_month(month=timezone.localtime(window.start).strftime("%Y-%m"))
        [line] = [line for line in statement.lines if line.window_id == window.pk]
        assert line.lent_gpu_hours == Decimal("144.00") and line.credit == 144 * line.price_per_gpu_hour > 0
        assert statement.credit >= line.credit
        # Research's preemptible use (on lent and free GPUs) costs it no fairness: without it, the same score.
        preemptible = UsageRecord.objects.filter(team__slug="research", window__tier="preemptible")
        assert preemptible.exists()
        research = window.team.__class__.objects.get(slug="research").pk
        before = fair_share_live(as_of=timezone.now())[research].score
        preemptible.delete()
        assert fair_share_live(as_of=timezone.now())[research].score == before

    def test_seed_demo_shows_a_question_answered_and_one_still_open(self, seeded_demo, db):
        questions = RequestQuestion.objects.filter(request__cycle__status=CycleStatus.OPEN).order_by("asked_at", "pk")
        assert [(q.request.team.slug, q.status, q.asked_by_name, q.answered_by_name) for q in questions] == [
            ("vision", QuestionStatus.ANSWERED, "Priya Product", "Vision Lead"),
            ("ads", QuestionStatus.OPEN, "Fatima Finance", ""),
        ]
        assert "Thursday evening" in questions[0].answer

    def test_seed_demo_shows_an_extension_approved_and_a_release_that_fed_the_waitlist(self, seeded_demo, db, client):
        from allocations import selectors as allocation_selectors
        from allocations.models import AllocationPlan
        from committee.demo.running_week import RELEASE_REASON
        from committee.models import EmergencyRequest, LifecycleEvent

        [extension] = EmergencyRequest.objects.filter(extends__isnull=False)
        assert extension.status == "placed" and extension.approvals.filter(approve=True).count() == 2
        assert LifecycleEvent.objects.filter(type="grant.extended", request_ref=extension.extends_id).count() == 1
        client.force_login(get_user_model().objects.get(username="chair"))
        assert "The final evaluation needs a few more hours" in client.get(
            f"/emergencies/{extension.pk}/").content.decode()
        # Ads gave half of its running CTR window back; Search's ranker, shortened by it and not started at Wednesday
        # 10:00, got the GPUs in the next plan version (the waitlist), and its team can read why.
        [event] = LifecycleEvent.objects.filter(type="window.released")
        assert event.request_ref is not None
        released = GpuRequest.objects.get(pk=event.request_ref)
        assert released.title == "CTR model weekly refresh" and event.data["released_gpu_count"] == 8
        plan = AllocationPlan.objects.get(week=event.data["week"], version=event.data["plan_version"])
        assert "the waitlist placed again" in plan.note and RELEASE_REASON in plan.note
        ranker = GpuRequest.objects.get(cycle__week=plan.week, title__startswith="Ranking model retrain")

        def held(version):
            version_plan = AllocationPlan.objects.get(week=plan.week, version=version)
            return [w.gpu_count for w in allocation_selectors.plan_window_list(plan=version_plan)
                    if w.request_ref == ranker.pk]

        assert held(plan.version - 1) == [30] and held(plan.version) == [34] == [ranker.gpu_count]
        assert ranker.events.filter(action="published").exists()

    def test_seed_demo_marks_conflicts_found_from_the_organisation_and_archives_a_waiver(self, seeded_demo, db):
        from committee import selectors
        from committee.models import ConflictWaiver
        from committee.outbox import outbox_relay
        from reports.models import Page
        from reports.selectors import revision_latest

        intake = ReviewCycle.objects.get(status=CycleStatus.OPEN)
        requests = GpuRequest.objects.filter(cycle=intake).select_related("team")
        found = {(c.member_name, r.team.slug, c.text) for r in requests
                 for c in selectors.found_conflicts_map(requests=[r])[r.pk].conflicts}
        assert ("Tomás Tech", "recommendations", "same department as Research (Labs)") in found
        assert ("Priya Product", "research", "Research Lead (lead of Research) reports to Priya Product") in found
        # The week in force: the chair waived the product lead's conflict before the committee scored, archived.
        waiver = ConflictWaiver.objects.get(request__cycle__week=weeks.current_week_label(timezone.now()))
        assert (waiver.member_name, waiver.request.team.slug, waiver.waived_by_name) == (
            "Priya Product", "research", "Chris Chair")
        outbox_relay()
        record = revision_latest(page=Page.objects.get(source_key=f"cycle:{waiver.request.cycle.week}"))
        assert [w["member"] for w in record.data["waivers"]] == ["Priya Product"]
        assert "## Conflicts waived" in record.body

    def test_seed_demo_leaves_a_pool_for_the_readmes_first_step_and_the_chair_in_the_admin(self, seeded_demo, db,
                                                                                          client):
        cycle = ReviewCycle.objects.get(status=CycleStatus.OPEN)
        search = GpuRequest.objects.filter(cycle=cycle, team__slug="search").exclude(status=RequestStatus.WITHDRAWN)
        assert list(search.values_list("pool__slug", flat=True)) == ["a100"]  # H100 is free to file on
        chair = get_user_model().objects.get(username="chair")
        assert chair.is_staff and chair.is_superuser
        client.force_login(chair)
        assert client.get("/admin/").status_code == 200

    def test_demo_tokens_read_the_demo_windows(self, seeded_demo, db):
        out = seeded_demo.out
        assert DEMO_SCHEDULER_TOKENS["atlas"] in out and "DEMO ONLY" in out and "curl" in out
        last_week = weeks.week_label(FIXED_NOW.date() - timedelta(days=7))
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Bearer {DEMO_SCHEDULER_TOKENS['atlas']}")
        response = api.get("/api/v1/windows/", {"cluster": "atlas", "week": last_week})
        assert response.status_code == 200
        results = response.json()["results"]
        assert results and all(w["account"] == w["team"] for w in results)  # slurm account = team slug on atlas
        assert api.get("/api/v1/windows/", {"cluster": "orion"}).status_code == 404
        current = ReviewCycle.objects.filter(week=weeks.current_week_label(FIXED_NOW)).first()
        if current is not None:  # the review side seeds this week finalized: it is published, active now
            assert current.status == "published"
            live = api.get("/api/v1/windows/", {"cluster": "atlas", "active_at": FIXED_NOW.isoformat()})
            assert live.json()["count"] > 0
            assert WindowSyncStatus.objects.filter(state="short").count() == 1  # one node short, beside its window

    def test_four_weeks_of_usage_with_one_team_using_half(self, seeded_demo, db):
        history = [weeks.week_label(FIXED_NOW.date() - timedelta(weeks=back)) for back in range(1, 5)]
        # Each past week went through the review: published by its cycle, the engine's windows for its requests.
        plans = AllocationPlan.objects.filter(week__in=history)
        assert plans.count() == 4 and all(p.source_ref.startswith("review-cycle:") for p in plans)
        assert not AllocationWindow.objects.filter(week__in=history, request_ref__isnull=True).exists()
        for team in ("ads", "search"):
            granted = sum(w.gpu_hours for w in AllocationWindow.objects.filter(team__slug=team, pool__slug="a100",
                                                                               week__in=history))
            used = UsageRecord.objects.filter(team__slug=team, pool__slug="a100").aggregate(
                h=Sum("gpu_hours_used"))["h"]
            ratio = Decimal(used) / Decimal(granted)
            assert (Decimal("0.4") < ratio < Decimal("0.6")) == (team == "ads")
        assert UsageRecord.objects.values("period_start__date").distinct().count() >= 4 * 3

    def test_demo_seeds_the_burst_reserve_proposal_and_a_second_one(self, seeded_demo, db):
        burst = Proposal.objects.get(title="A100 burst reserve 20% → 15%")
        assert [(c.key, c.old_value, c.new_value) for c in burst.changes.all()] == [
            ("pool.a100.burst_reserve_pct", "20", "15")]
        assert burst.figures.count() == 3 and burst.comments.count() == 2
        assert sorted(burst.votes.values_list("choice", flat=True)) == ["against", "support"]
        assert len({v.voter_id for v in burst.votes.all()}) == 2
        board = policy_selectors.proposal_board(now=timezone.now())
        assert len(board.open) == 2 and board.adopted == []

    def test_the_dashboards_show_four_weeks_of_history_and_the_monthly_review_flags_something(self, seeded_demo, db,
                                                                                          client):
        client.force_login(get_user_model().objects.get(username="chair"))
        rows = list(csv.DictReader(io.StringIO(
            client.get(reverse("reports:dashboard-csv", args=["granted-used"])).content.decode())))
        used = "Used A100-eq GPU-h"
        past = sorted({row["Week"] for row in rows if row[used] and Decimal(row[used]) > 0})
        assert len(past) >= 4
        for key in ("utilization", "queue-wait", "demand-capacity", "fair-share", "scores"):
            table = list(csv.DictReader(io.StringIO(
                client.get(reverse("reports:dashboard-csv", args=[key])).content.decode())))
            assert table, key
        demand = list(csv.DictReader(io.StringIO(
            client.get(reverse("reports:dashboard-csv", args=["demand-capacity"])).content.decode())))
        assert sum(1 for row in demand if Decimal(row["Requested A100-eq GPU-h"]) > 0) >= 5  # 4 past weeks, this, next
        review = monthly.monthly_review(month=monthly.month_list(now=timezone.now())[0], now=timezone.now())
        assert review.flagged
        page = client.get(reverse("reports:monthly-review")).content.decode()
        assert "Open the parameter review" in page

    def test_seed_demo_inbox_holds_the_weeks_in_play_not_every_seeded_week(self, seeded_demo, db, client):
        # The notifications are recorded once the seeding's transactions commit, as in `make run` (the class's seed
        # runs what its commits start).
        now_week = weeks.current_week_label(timezone.now())
        intake_week = ReviewCycle.objects.get(status=CycleStatus.OPEN).week
        unread = Notification.objects.filter(recipient__username="product", read_at__isnull=True)
        assert {n.params.get("week") for n in unread.exclude(kind="budget_alert")} == {now_week, intake_week}
        # Consumer Products, near its limit, has passed 80 % of its quarter's budget: the committee was told, once.
        assert [n.key for n in unread.filter(kind="budget_alert")] == [
            f"budget:consumer:{quarter_of(timezone.now())}:80"]
        assert Notification.objects.filter(recipient__username="product", read_at__isnull=False).count() >= 4
        client.force_login(get_user_model().objects.get(username="product"))
        page = client.get("/inbox/").content.decode()
        assert f"{unread.count()} unread notifications." in page

    def test_seed_demo_opens_the_running_quarters_buffer_fund_and_sets_queue_wait_targets(self, seeded_demo, db):
        fund = BufferFund.objects.get(quarter=quarter_of(FIXED_NOW))
        state = executive_selectors.fund_state(fund)
        (spend,) = executive_selectors.buffer_spend_list(fund=fund)
        assert spend.emergency is not None and spend.emergency_title == spend.emergency.request.title
        # The buffer is the demo departments' buffer lines, 5% of each budget; the spend took at most two fifths of it.
        assert len(state.lines) == 3 and state.buffer == sum(line.buffer for line in state.lines) > 0
        assert state.buffer == state.budgets_total * 5 / 100 and 0 < spend.amount <= state.buffer * 2 / 5
        assert state.balance == state.buffer - spend.amount and state.deferred > 0
        targets = dict(GpuPool.objects.values_list("slug", "queue_wait_target_minutes"))
        assert targets == {"a100": 15, "h100": 45}

    def test_no_link_a_team_member_sees_answers_404_or_403(self, seeded_demo, db):
        client = Client()
        client.force_login(get_user_model().objects.get(username="search-dev"))
        unreadable_pages: dict[str, list[str]] = {}
        seen, found_on = crawl(client, "/", unreadable_pages)
        dead = {url: f"{status} (linked from {found_on[url]})" for url, status in seen.items()
                if status in (403, 404)}
        assert not dead, f"{len(dead)} of {len(seen)} links a team member follows are dead ends: {dead}"
        assert not unreadable_pages, f"pages that do not read well: {unreadable_pages}"

    def test_seed_demo_again_with_debug_on_needs_no_flag_and_changes_nothing(self, seeded_demo, db, settings, capsys):
        settings.DEBUG = True  # as `make run` seeds: no --i-know-this-is-not-production
        first = _counts()
        call_command("seed_demo")
        assert "Demo data ready." in capsys.readouterr().out
        assert _counts() == first

    def test_seed_demo_past_weeks_went_through_finalize_and_publish_and_the_demo_shows_an_alternative_and_an_emergency(
        self, seeded_demo, db
    ):
        from django.utils import timezone

        from allocations.models import AllocationPlan, AllocationWindow, PlanExplanation
        from committee.models import EmergencyRequest
        from committee.outbox import outbox_relay
        from reports.models import Page

        current = weeks.current_week_label(timezone.now())
        past = list(ReviewCycle.objects.filter(week__lt=current).order_by("week"))
        assert len(past) == 4
        # The fixture's seed never commits; the relay job does what its commit would have started (no broker here).
        outbox_relay()
        for cycle in past:
            assert cycle.status == CycleStatus.PUBLISHED and cycle.finalized_by_name == "Chris Chair"
            # The archive wrote the week's decision record, as a real finalize and publish do.
            page = Page.objects.get(source_key=f"cycle:{cycle.week}")
            assert page.revisions.count() >= 1
            # The engine placed its grants: version 1 came from the cycle, every grant is explained.
            plan = AllocationPlan.objects.get(week=cycle.week, version=1)
            assert plan.source_ref == f"review-cycle:{cycle.pk}"
            granted = set(Decision.objects.filter(cycle=cycle, outcome__in=["grant", "partial"])
                          .values_list("request_id", flat=True))
            assert granted and set(PlanExplanation.objects.filter(plan=plan).values_list("request_ref", flat=True)) \
                == granted
            assert not AllocationWindow.objects.filter(week=cycle.week, request_ref__isnull=True).exists()
        # One grant of the cheaper alternative this week, placed with its GPU-hours over the request's duration.
        (alternative,) = Decision.objects.filter(outcome="alternative")
        assert alternative.cycle_week == current
        request = alternative.request
        assert alternative.alternative_gpu_hours is not None
        assert alternative.granted_gpu_count == -(-alternative.alternative_gpu_hours // request.duration_hours)
        windows = AllocationWindow.objects.filter(request_ref=request.pk, withdrawal__isnull=True)
        assert [w.gpu_count for w in windows] == [alternative.granted_gpu_count]
        # One emergency, approved by two and placed as the running week's next plan version.
        (emergency,) = EmergencyRequest.objects.filter(extends__isnull=True)
        assert emergency.status == "placed" and emergency.approvals.filter(approve=True).count() == 2
        assert emergency.plan is not None and (emergency.plan.week, emergency.plan.version) == (current, 2)
        assert AllocationWindow.objects.get(request_ref=emergency.request_id).tier == "preemptible"
        assert emergency.review_cycle is not None and emergency.review_cycle.status == CycleStatus.OPEN


def test_seed_demo_refuses_with_debug_off_unless_told_and_creates_nothing(db, settings):
    settings.DEBUG = False
    before = _counts()
    with pytest.raises(CommandError, match="Refusing to seed the demo with DEBUG off") as refused:
        call_command("seed_demo")
    assert "--i-know-this-is-not-production" in str(refused.value) and "DEBUG=1" in str(refused.value)
    assert _counts() == before


@pytest.mark.parametrize("at", ["2026-12-06T15:00:00", "2026-12-06T23:59:30", "2026-12-04T18:00:30"],
                         ids=["sunday-afternoon", "sunday-23:59:30", "friday-after-the-close"])
def test_next_weeks_intake_is_open_whenever_the_demo_is_seeded_and_never_past_its_review(db, at):
    # `make run` seeds at the machine's clock. After Friday's close the demo reopens intake until tomorrow, but on a
    # Sunday afternoon tomorrow is past Monday 09:00's review, which the database refused: `make run` failed.
    from datetime import datetime

    import time_machine
    from django.db import transaction

    from committee.demo.people import seed_people, seed_resources
    from committee.demo.requests import seed_intake_cycle

    now = datetime.fromisoformat(at).replace(tzinfo=weeks.committee_zone())
    with time_machine.travel(now, tick=False), transaction.atomic():
        pools = seed_resources()
        seed_people()
        cycle = seed_intake_cycle(pools=pools, now=now)
        assert cycle.week == weeks.next_week_label(now)
        assert cycle.intake_open and now < cycle.intake_closes_at <= cycle.review_at
        assert cycle.requests.exists()
