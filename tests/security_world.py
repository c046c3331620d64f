"""One populated Docket for the security tests (permission matrix, API fuzzing), built once per module.

`estate()` is a module-scoped fixture body: it builds the `world` personas and everything a URL
of the app can point at, inside one transaction that is rolled back when the module ends. Each
test runs in a savepoint within it (pytest-django's `db`), so a test that writes changes nothing
for the next one.

Roles, as the permission matrix names them:

    anon        nobody signed in
    team_a      member_a, a member of team A
    team_b      member_b, a member of team B
    committee   reviewer, the product lead's seat (no team)
    chair       the chair
    sched_a     the scheduler token of cluster atlas (team A's windows live there)
    sched_b     the scheduler token of cluster orion
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from django.apps import apps
from django.conf import settings
from django.core.management.color import no_style
from django.db import connection, transaction
from django.test import Client, TestCase, override_settings
from django.utils import timezone

from allocations import services as allocation_services
from allocations.models import AllocationWindow
from committee import services, weeks
from committee.models import CycleStatus
from committee.services.emergency import emergency_request_file
from committee.services.fastlane import fast_lane_request_file
from reports import services as report_services
from reports.models import ExportStatus, ExportStep, Page, PageKind, PdfExport
from reports.selectors import revision_latest
from tests.committee.reviewing import decide, score
from tests.conftest import World, build_world
from tests.factories import file_request

ROLES = ("anon", "team_a", "team_b", "committee", "chair", "sched_a", "sched_b")
PEOPLE = {"team_a": "member_a", "team_b": "member_b", "committee": "reviewer", "chair": "chair"}


def _in_cycle(world: World, cycle: Any) -> World:
    return dataclasses.replace(world, cycle=cycle)


def _cycle(week: str) -> Any:
    """A cycle open for intake until tomorrow, whatever its week (so requests can be filed into it now)."""
    now = timezone.now()
    cycle = services.cycle_create(
        week=week, intake_closes_at=now + timedelta(days=1), review_at=now + timedelta(days=2)
    )
    assert cycle.status == CycleStatus.OPEN
    return cycle


def build_estate(pdf_root: Path) -> SimpleNamespace:
    """The world, its tokens, a published week, a week in review, the open week and the archive."""
    w = build_world()
    now = timezone.now()
    current = weeks.current_week_label(now)
    previous = weeks.week_label((now - timedelta(days=7)).date())

    # Last week: team A's request on atlas and team B's on orion, scored, granted, finalized, published.
    published = _cycle(previous)
    in_published = _in_cycle(w, published)
    pub_a = file_request(in_published, title="Ranker retrain", gpu_count=16, min_gpu_count=8)
    pub_b = file_request(in_published, team=w.team_b, pool=w.h100, title="Vision model", gpu_count=8, min_gpu_count=4)
    services.cycle_close_intake(cycle=published, actor=w.chair)
    for member in (w.chair, w.reviewer, w.finance):
        score(member, pub_a, 8, 7, 6)
    for member in (w.chair, w.reviewer, w.finance):
        score(member, pub_b, 6, 6, 6)
    decide(in_published, pub_a, rationale="Strongest case of the week.")
    decide(in_published, pub_b, rationale="Fits the orion pool.")
    with TestCase.captureOnCommitCallbacks(execute=True):
        services.cycle_finalize(cycle=published, actor=w.chair)
    with TestCase.captureOnCommitCallbacks(execute=True):
        plan = services.cycle_publish(actor=w.chair, cycle=published)
    published.refresh_from_db()
    # Team B appeals its outcome (the appeal window is open: the week was published just now).
    appeal_b = services.appeal_file(actor=w.member_b, gpu_request=pub_b, statement="Eight GPUs are too few.")
    window_a = AllocationWindow.objects.filter(plan__week=plan.week, cluster=w.atlas).order_by("pk").first()
    window_b = AllocationWindow.objects.filter(plan__week=plan.week, cluster=w.orion).order_by("pk").first()
    assert window_a is not None and window_b is not None, "the published week has a window on each cluster"

    # This week: team A's and team B's requests in review.
    review = _cycle(current)
    in_review = _in_cycle(w, review)
    review_a = file_request(in_review, title="Ads ranking refresh")
    review_b = file_request(in_review, team=w.team_b, pool=w.h100, title="Speech fine-tune", gpu_count=8,
                            min_gpu_count=4)
    services.cycle_close_intake(cycle=review, actor=w.chair)
    review.refresh_from_db()
    for member in (w.chair, w.finance):  # a quorum, so the committee can decide; the reviewer has not scored
        score(member, review_a, 7, 6, 5)
    # The chair's question to team A about its request in review, still open.
    question_a = services.request_question_ask(actor=w.chair, gpu_request=review_a, body="Would 8 GPUs do?")
    # Team A's emergency in the running week, waiting for its two approvals.
    emergency_a = emergency_request_file(actor=w.lead_a, team=w.team_a, pool=w.a100, title="Hotfix", gpu_count=4,
                                         duration_hours=2, justification="A fraud wave, now.")

    # Next week (the world's cycle), open for intake: team A's draft and submitted requests, team B's draft.
    draft_a = file_request(w, submit=False, title="Embedding backfill")
    submitted_a = file_request(w, pool=w.h100, title="Search eval sweep", gpu_count=8, min_gpu_count=4)
    draft_b = file_request(w, team=w.team_b, submit=False, pool=w.h100, title="Vision ablation", gpu_count=8,
                           min_gpu_count=4)
    # Team A's fast-lane request of the running week (no pool holds a fast-lane reserve: refused, told why).
    fast_lane_a = fast_lane_request_file(actor=w.lead_a, team=w.team_a, pool=w.a100, title="Quick eval", gpu_count=4,
                                         duration_hours=2)

    # The archive: last week's decision record (written by the receivers), and a charter with two revisions.
    record = Page.objects.get(kind=PageKind.DECISION_RECORD, source_key=f"cycle:{published.week}")
    charter = report_services.page_create(actor=w.chair, slug="charter", title="Charter",
                                          body="# Charter\n\nWe allocate GPUs by rubric.", summary="First version")
    report_services.page_revision_save(actor=w.reviewer, page=charter, base_revision_id=charter.latest_revision_id,
                                       title="Charter", body="# Charter\n\nWe allocate GPUs by the published rubric.",
                                       summary="Wording")
    charter.refresh_from_db()
    record.refresh_from_db()
    revision = revision_latest(page=record)
    file_name = f"{record.slug}-r{revision.number}.pdf"
    pdf_root.mkdir(parents=True, exist_ok=True)
    (pdf_root / file_name).write_bytes(b"%PDF-1.4\n% matrix fixture\n%%EOF\n")
    export = PdfExport.objects.create(revision=revision, status=ExportStatus.DONE, step=ExportStep.DONE,
                                      progress_pct=100, file_name=file_name, size_bytes=30,
                                      requested_by_name="Chair", finished_at=now)

    from policy import services as policy_services

    proposal = policy_services.proposal_submit(
        actor=w.member_a, title="Matrix proposal", reason="Idle reserve", expected_effect="More GPUs",
        changes={"pool.a100.burst_reserve_pct": "15"})

    with override_settings(DOCKET_WEBHOOK_PRIVATE_ADDRESSES=True):  # hooks.example.org does not resolve here
        webhook_a, _secret = services.webhook_subscription_create(actor=w.lead_a, team=w.team_a,
                                                                  url="https://hooks.example.org/team-a")

    tokens = {role: services.personal_token_create(user=getattr(w, person), name="security tests")[1]
              for role, person in PEOPLE.items()}
    tokens["sched_a"] = allocation_services.scheduler_client_create(cluster=w.atlas, name="slurm-atlas").token
    tokens["sched_b"] = allocation_services.scheduler_client_create(cluster=w.orion, name="kueue-orion").token

    return SimpleNamespace(
        world=w, tokens=tokens, published=published, plan=plan, window_a=window_a, window_b=window_b,
        review=review, pub_a=pub_a, pub_b=pub_b, review_a=review_a, review_b=review_b, open=w.cycle,
        draft_a=draft_a, submitted_a=submitted_a, draft_b=draft_b, record=record, charter=charter, export=export,
        emergency_a=emergency_a, question_a=question_a, webhook_a=webhook_a, fast_lane_a=fast_lane_a,
        pdf_root=pdf_root, appeal_b=appeal_b, proposal=proposal,
    )


def restart_ids() -> None:
    """Ids start from 1 again in empty tables, whatever ran before in this process.

    Earlier tests leave no rows but move the id sequences on; the fuzzer generates small ids, so
    with fresh sequences it meets the same objects on every run, in any order of the suite.
    """
    models = [m for m in apps.get_models() if m._meta.managed and not m._meta.proxy]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            for sql in connection.ops.sequence_reset_sql(no_style(), models):  # to max(id) + 1
                cursor.execute(sql)
        elif connection.vendor == "sqlite":
            for model in models:
                if not model._default_manager.exists():
                    cursor.execute("DELETE FROM sqlite_sequence WHERE name = %s", [model._meta.db_table])


def estate(django_db_blocker: Any, pdf_root: Path) -> Iterator[SimpleNamespace]:
    """Build the estate in a transaction that outlives the module's tests and is rolled back after them.

    Each person signs in once here (`sessions`, for `client_for`): a test's own savepoint rolls back whatever it
    does to its session (signs out, stores a message), so the next test finds the session as it was."""
    with django_db_blocker.unblock(), override_settings(DOCKET_PDF_ROOT=pdf_root), transaction.atomic():
        restart_ids()
        built = build_estate(pdf_root)
        built.sessions = {role: _session_of(getattr(built.world, person)) for role, person in PEOPLE.items()}
        yield built
        transaction.set_rollback(True)


def _session_of(user: Any) -> str:
    client = Client()
    client.force_login(user)
    return client.cookies[settings.SESSION_COOKIE_NAME].value


def client_for(estate: SimpleNamespace, role: str, *, api: bool) -> Client:
    """A test client acting as `role`: people send the session they signed in with once (pages) or their personal
    token (API); schedulers always send their bearer token."""
    client = Client()
    if role.startswith("sched_"):
        client.defaults["HTTP_AUTHORIZATION"] = f"Bearer {estate.tokens[role]}"
    elif role in PEOPLE:
        if api:
            client.defaults["HTTP_AUTHORIZATION"] = f"Token {estate.tokens[role]}"
        else:
            client.cookies[settings.SESSION_COOKIE_NAME] = estate.sessions[role]
    return client

