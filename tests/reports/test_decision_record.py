"""The decision record: generated when the chair finalizes a week, updated when its plan is published."""

from __future__ import annotations

from datetime import timedelta

from django.urls import reverse

from committee import services as committee_services
from reports import selectors, services
from reports.models import Page, PageKind, PageRevision
from reports.selectors import revision_latest
from tests.reports.conftest import RATIONALES, note_write


def record(world):
    return Page.objects.select_related("latest_revision").get(source_key=f"cycle:{world.cycle.week}")


def publish(world, capture, **extra):
    with capture(execute=True):
        return committee_services.cycle_publish(actor=world.chair, cycle=world.cycle, **extra)


def test_finalize_archives_the_record(week):
    page = record(week)
    revision = revision_latest(page=page)
    assert page.kind == PageKind.DECISION_RECORD and page.slug == f"decision-record-{week.cycle.week.lower()}"
    assert (revision.number, revision.author_name) == (1, services.SYSTEM_AUTHOR)
    assert revision.summary == f"Generated: week {week.cycle.week} finalized"
    assert selectors.archive_verify().ok


def test_record_data_has_rubric_participants_every_score_and_each_decision(week):
    data = revision_latest(page=record(week)).data
    assert data["rubric"]["version"] == 1
    assert [c["weight_pct"] for c in data["rubric"]["criteria"]] == [40, 30, 20, 10]
    assert {p["name"] for p in data["participants"]} == {"Chair", "Reviewer", "Finance"}
    assert all(p["scored"] == 3 for p in data["participants"])
    first, second, third = data["ranking"]
    assert (first["rank"], first["title"], first["decision"]) == (1, "Ranker retrain", "grant")
    assert first["scores"]["business_impact"] == 9.0 and first["scores"]["urgency"] == 9.0
    assert set(first["scores"]) == {"business_impact", "feasibility", "urgency", "fairness"}
    assert first["total"] is not None and first["total"] > second["total"] > third["total"]
    assert (second["decision"], second["granted_gpu_count"]) == ("partial", 8)
    assert [r["rationale"] for r in data["ranking"]] == list(RATIONALES.values())
    assert data["plan"] is None


def test_record_text_shows_ranking_rationale_and_links(week, client):
    first = week.requests[0]
    body = revision_latest(page=record(week)).body
    for rationale in RATIONALES.values():
        assert rationale in body
    assert f"[[request:{first.pk}|Ranker retrain]]" in body and "[[policy-change-v1|version 1]]" in body
    assert f"| [[request:{first.pk}\\|Ranker retrain]] |" in body  # in the ranking table
    client.force_login(week.member_a)
    html = client.get(reverse("reports:page", args=[record(week).slug])).content.decode()
    assert html.count(f'href="/requests/{first.pk}/"') == 2  # the ranking table and the decision's details
    assert 'href="/archive/policy-change-v1/"' in html
    assert "Vision model | v2" in html and "Speech *fine-tune*" in html  # titles shown as typed
    assert "Not published yet" in html
    assert 'class="plotly-chart"' in html  # the record's charts, drawn in the browser


def test_the_rubric_version_gets_its_policy_page(week):
    policy = Page.objects.get(source_key="policy-change:1")  # the version of the rules the week's rubric is
    assert policy.slug == "policy-change-v1" and policy.kind == PageKind.POLICY and policy.title == "Policy version 1"
    assert "Version 1 of the committee's rules" in revision_latest(page=policy).body


def test_publish_adds_the_windows_as_a_new_revision(week, django_capture_on_commit_callbacks):
    plan = publish(week, django_capture_on_commit_callbacks)
    page = record(week)
    revision = revision_latest(page=page)
    assert revision.number == 2 and revision.summary == "Updated: plan version 1 published"
    windows = revision.data["plan"]["windows"]
    assert {w["request_id"] for w in windows} == {week.requests[0].pk, week.requests[1].pk}
    assert revision.data["plan"]["version"] == plan.version == 1
    assert "## Published windows" in revision.body and "first published version" in revision.body
    assert "Not published yet" not in revision.body


def test_a_correction_records_what_changed(week, django_capture_on_commit_callbacks):
    publish(week, django_capture_on_commit_callbacks)
    publish(week, django_capture_on_commit_callbacks, reason="Recomputed after a node failure.")
    revision = revision_latest(page=record(week))
    changes = revision.data["plan_changes"]
    assert revision.number == 3 and changes["from_version"] == 1
    assert "Compared with version 1" in revision.body and "Recomputed after a node failure" in revision.body


def test_sync_is_idempotent(week):
    assert services.decision_record_sync(cycle=week.cycle) is None
    assert PageRevision.objects.filter(page=record(week)).count() == 1


def test_committee_notes_survive_the_update_at_publish(week, client, django_capture_on_commit_callbacks):
    page = record(week)
    note_write(client, page, "The tech lead abstained on team B's requests.", as_user=week.tech)
    publish(week, django_capture_on_commit_callbacks)
    latest = revision_latest(page=record(week))
    assert latest.number == 3 and "The tech lead abstained" in latest.body and "## Published windows" in latest.body


def test_rubric_change_writes_a_policy_page(week, django_capture_on_commit_callbacks):
    weights = {"business_impact": 35, "feasibility": 30, "urgency": 20, "fairness": 15}
    pages = Page.objects.count()
    with django_capture_on_commit_callbacks(execute=True):
        rubric = committee_services.rubric_change(actor=week.chair, weights=weights, reason="Fairness mattered more.")
    assert Page.objects.count() == pages + 1  # one change, one page: the store's
    page = Page.objects.get(source_key=f"policy-change:{rubric.number}")
    data = revision_latest(page=page).data
    assert page.title == f"Policy version {rubric.number}"
    impact = next(p for p in data["parameters"] if p["key"] == "rubric.business_impact")
    assert (impact["previous_value"], impact["value"]) == ("40", "35")
    assert "Fairness mattered more." in revision_latest(page=page).body


def test_finalize_and_publish_in_one_transaction_record_the_committed_state_once(world,
                                                                                  django_capture_on_commit_callbacks):
    from django.db import transaction

    from committee.models import OutboxMessage
    from tests.committee.reviewing import close, decide, score
    from tests.factories import file_request

    gpu_request = file_request(world, title="Ranker retrain")
    close(world)
    for member in (world.chair, world.reviewer):
        score(member, gpu_request, 8, 8, 8)
    decide(world, gpu_request)
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        cycle = committee_services.cycle_finalize(cycle=world.cycle, actor=world.chair)
        committee_services.cycle_publish(actor=world.chair, cycle=cycle)
        assert not Page.objects.filter(source_key=f"cycle:{world.cycle.week}").exists()  # not before commit
    page = Page.objects.get(source_key=f"cycle:{world.cycle.week}")
    # Each transition asked for the record; after commit the first write records the committed (published) week and
    # the second finds it up to date: one revision, both messages done.
    assert [r.data["cycle"]["status"] for r in page.revisions.order_by("number")] == ["published"]
    data = revision_latest(page=page).data
    assert data["cycle"]["status"] == "published" and data["plan"]["version"] == 1
    assert OutboxMessage.objects.filter(key__startswith="decision-record:", done_at__isnull=False).count() == 2


def test_the_record_lists_the_weeks_agent_actions_once_the_week_has_them(week, clock, client,
                                                                        django_capture_on_commit_callbacks):
    """The elastic agents' actions acted in the week (Monday 00:00 included, the next Monday 00:00 not), in the order
    they acted, with their measurement; a revision written mid-week says the rest comes once the week has ended; the
    weekly clock's first hour after the end writes the rest once, and an action an agent reports days late once more."""
    from django.utils import timezone, translation
    from rest_framework.test import APIClient

    from reports.records.decision import decision_record_markdown
    from reports.records.language import decision_record_relabelled
    from tests.allocations.plans import bearer, token_for

    cycle = week.cycle
    assert "agent_actions" not in revision_latest(page=record(week)).data  # finalized before the week began
    agent = APIClient()
    agent.credentials(**bearer(token_for(week.atlas, "elastic-agent")))

    def post(key: str, kind: str, at, **extra) -> None:
        body = {"idempotency_key": key, "kind": kind, "pool": "a100", "window": None, "team": "team-a", "gpus": 6,
                "acted_at": at.isoformat(), "utilization_pct": "12.5", "span_minutes": 5,
                "measured_by": "prometheus", "policy_version": 1, "applied": "sacctmgr -i modify qos …", **extra}
        response = agent.post("/api/v1/elastic/actions/", body, format="json")
        assert response.status_code == 201, response.json()

    clock.move_to(cycle.starts_at + timedelta(days=2))
    post("before", "lend", cycle.starts_at - timedelta(minutes=1))  # the week before: not this record's
    post("monday", "lend", cycle.starts_at)
    post("promote", "promote", cycle.starts_at + timedelta(hours=30), utilization_pct="91", queue_wait_minutes="42",
         span_minutes=10, team="team-b")
    mid_week = services.decision_record_sync(cycle=cycle)
    assert mid_week is not None
    actions = mid_week.data["agent_actions"]
    assert [(a["kind"], a["team"], a["gpus"]) for a in actions] == [("lend", "Team A", 6), ("promote", "Team B", 6)]
    assert mid_week.data["agent_actions_partial"] is True and "agent_actions_more" not in mid_week.data
    assert "## The elastic agents' actions" in mid_week.body
    assert ("| Lent to preemptible work | atlas/a100 | Team A | — | 6 | 12.5% utilization over 5 min (prometheus) "
            "| v1 |") in mid_week.body
    assert "91.0% utilization, 42.0 min queue wait over 10 min (prometheus)" in mid_week.body
    assert "The week had not ended when this revision was written" in mid_week.body
    assert services.decision_record_sync(cycle=cycle) is None  # nothing new: no revision

    clock.move_to(cycle.ends_at + timedelta(minutes=1))
    post("last-minute", "reclaim", cycle.ends_at - timedelta(minutes=1))
    post("next-monday", "lend", cycle.ends_at)  # the next week's

    def tick(after) -> str:  # the clock's first tick `after` past the week's end; what its record job said
        clock.move_to(cycle.ends_at + after)
        with django_capture_on_commit_callbacks(execute=True):
            runs = committee_services.clock_tick(now=timezone.now())
        return next(run.result for run in runs if run.job == "record_agent_actions")

    assert tick(timedelta(minutes=30)) == f"records asked for: {cycle.week}"
    after = revision_latest(page=record(week))
    assert after.summary == "Updated — the elastic agents' actions of the ended week"
    assert [a["kind"] for a in after.data["agent_actions"]] == ["lend", "promote", "reclaim"]
    assert "agent_actions_partial" not in after.data and "had not ended" not in after.body
    assert tick(timedelta(hours=1, minutes=30)) == "no record lacks its agents' actions"  # the next hour: nothing new
    # An agent cut off from Docket since Sunday reports its last action on Tuesday: one revision more, then none.
    clock.move_to(cycle.ends_at + timedelta(days=1, hours=9))
    post("cut-off", "lend", cycle.ends_at - timedelta(hours=2), team="team-b")
    assert tick(timedelta(days=1, hours=9, minutes=30)) == f"records asked for: {cycle.week}"
    late = revision_latest(page=record(week))
    assert late.number == after.number + 1
    assert [a["kind"] for a in late.data["agent_actions"]] == ["lend", "promote", "lend", "reclaim"]
    assert tick(timedelta(days=1, hours=10, minutes=30)) == "no record lacks its agents' actions"
    assert revision_latest(page=record(week)).number == late.number
    after = late
    assert services.decision_record_sync(cycle=cycle) is None
    # A reader in Chinese reads the kinds in Chinese, from the codes stored beside them.
    with translation.override("zh-hans"):
        relabelled = decision_record_relabelled(after.data)
        body = decision_record_markdown(relabelled)
    assert relabelled["agent_actions"][0]["kind_label"] == "已借给可抢占任务"
    assert "## 弹性代理的操作" in body and "| 已借给可抢占任务 |" in body and "利用率 12.5%" in body
