"""A published week always has its decision record, however long: asked for in the week's transaction, written
after it commits.

A record longer than an archive page holds continues on part pages linked from the week's page;
when the archive can tell it cannot write the record (an address it needs is taken), the finalize or publish is
refused and nothing is saved.
The long-record tests lower the page limit (reports.services.pages.MAX_BODY_CHARS) so that 40
requests need several pages; one test runs at the real limit with 600 requests.
"""

from __future__ import annotations

import shutil
import subprocess
from datetime import UTC, datetime

import pytest
import time_machine
from django.core.exceptions import ValidationError
from django.urls import reverse

from allocations.models import AllocationPlan, AllocationWindow
from committee import services as committee_services
from committee.models import CycleStatus, Decision, OutboxMessage, RequestEvent, ReviewCycle
from reports import records, selectors
from reports.models import ExportStatus, Page, PageKind, PageRevision, PdfExport
from reports.selectors import revision_latest
from reports.services import pages
from tests.conftest import build_world, committed, require
from tests.reports.big_week import big_week

PINNED = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
SMALL_PAGE = 8_000


@pytest.fixture
def world(db):
    """The usual world, built on a pinned clock that stays pinned for the whole test."""
    with time_machine.travel(PINNED, tick=False):
        yield build_world()


@pytest.fixture
def small_pages(monkeypatch):
    monkeypatch.setattr(pages, "MAX_BODY_CHARS", SMALL_PAGE)
    return SMALL_PAGE


def record_pages(world) -> list[Page]:
    """The week's page, then its parts in order."""
    week = world.cycle.week
    found = {p.slug: p for p in Page.objects.filter(kind=PageKind.DECISION_RECORD).select_related("latest_revision")}
    ordered = [found.pop(records.decision_record_slug(week))]
    part = 2
    while records.decision_record_part_slug(week, part) in found:
        ordered.append(found.pop(records.decision_record_part_slug(week, part)))
        part += 1
    assert not found, f"pages outside the record's sequence: {sorted(found)}"
    return ordered


def assert_reads_in_order(full: str, split_pages: list[Page]) -> None:
    """Every line of the one-page record appears in the pages, in the same order: nothing lost or reordered."""
    text = "\n".join(revision_latest(page=page).body for page in split_pages)
    position = 0
    for line in (line for line in full.split("\n") if line.strip()):
        found = text.find(line, position)
        assert found >= 0, f"missing or out of order: {line[:100]!r}"
        position = found + len(line)


def test_a_week_too_long_for_one_page_is_finalized_and_published_with_its_whole_record(world, small_pages, client):
    requests = big_week(world, requests=40)

    cycle = committed(committee_services.cycle_finalize, cycle=world.cycle, actor=world.chair)

    finalized = record_pages(world)
    assert cycle.status == CycleStatus.FINALIZED and len(finalized) > 2
    assert all(len(revision_latest(page=page).body) <= small_pages for page in finalized)
    data = revision_latest(page=finalized[0]).data
    assert len(data["ranking"]) == 40 and data["cycle"]["status"] == "finalized"
    assert_reads_in_order(records.decision_record_markdown(data), finalized)
    main = revision_latest(page=finalized[0]).body
    for number, page in enumerate(finalized[1:], start=2):
        assert f"[[{page.slug}|Part {number} of {len(finalized)}]]" in main
        assert revision_latest(page=page).data == {}  # the structured decision lives on the week's page

    plan = committed(committee_services.cycle_publish, actor=world.chair, cycle=cycle)

    published = record_pages(world)
    assert plan.version == 1 and AllocationWindow.objects.filter(plan=plan).count() == len(requests)
    assert all(len(revision_latest(page=page).body) <= small_pages for page in published)
    data = revision_latest(page=published[0]).data
    assert data["cycle"]["status"] == "published" and len(data["plan"]["windows"]) == len(requests)
    assert_reads_in_order(records.decision_record_markdown(data), published)
    assert all(revision_latest(page=page).summary == "Updated: plan version 1 published" for page in published)
    verified = selectors.archive_verify()
    assert verified.ok and PageRevision.objects.count() == verified.checked

    client.force_login(world.reviewer)
    response = client.get(published[0].get_absolute_url())
    assert response.status_code == 200
    assert f'href="{published[1].get_absolute_url()}"' in response.content.decode()
    part = client.get(published[-1].get_absolute_url()).content.decode()
    assert f"Part {len(published)} of {len(published)}" in part and "Published windows" in part


def test_the_published_record_gets_its_pdf_with_every_part(
    world, small_pages, client, django_capture_on_commit_callbacks
):
    require(shutil.which("pdftotext") is not None, "pdftotext (apt-get install poppler-utils)")
    big_week(world, requests=40)
    cycle = committed(committee_services.cycle_finalize, cycle=world.cycle, actor=world.chair)
    committed(committee_services.cycle_publish, actor=world.chair, cycle=cycle)
    published = record_pages(world)
    revision = revision_latest(page=published[0])
    client.force_login(world.chair)

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("reports:revision-pdf", args=[revision.page.slug, revision.number]))

    export = PdfExport.objects.get(revision=revision)
    assert response.status_code == 302
    assert OutboxMessage.objects.filter(task_name="reports.render_pdf_export").count() == 1
    assert export.status == ExportStatus.DONE and export.size_bytes > 0
    download = client.get(reverse("reports:export-download", args=[export.pk]))
    pdf = b"".join(download.streaming_content) if download.streaming else download.content
    text = " ".join(subprocess.run(["pdftotext", "-", "-"], input=pdf, capture_output=True, check=True)
                    .stdout.decode().split())
    assert "Training run 0000 of Big team 0000" in text and "Training run 0039 of Big team 0009" in text
    assert published[-1].title in text and "This is the first published version of the plan." in text


def test_a_week_of_600_requests_at_the_real_page_limit(world):
    big_week(world, requests=600)

    cycle = committed(committee_services.cycle_finalize, cycle=world.cycle, actor=world.chair)
    committed(committee_services.cycle_publish, actor=world.chair, cycle=cycle)

    published = record_pages(world)
    assert len(published) > 1 and pages.MAX_BODY_CHARS == 200_000
    assert all(len(revision_latest(page=page).body) <= 200_000 for page in published)
    data = revision_latest(page=published[0]).data
    assert len(data["plan"]["windows"]) == 600
    assert_reads_in_order(records.decision_record_markdown(data), published)
    assert selectors.archive_verify().ok


def _taken(slug: str) -> Page:
    """A page that holds an address the record needs (an old import, say): the archive cannot write there."""
    return Page.objects.create(slug=slug, kind=PageKind.FREE, title="Imported page")


def test_finalize_is_refused_and_nothing_saved_when_the_record_cannot_be_written(world):
    big_week(world, requests=3)
    _taken(records.decision_record_slug(world.cycle.week))

    with pytest.raises(ValidationError) as refused:
        committed(committee_services.cycle_finalize, cycle=world.cycle, actor=world.chair)

    assert refused.value.messages == [
        f"Week {world.cycle.week} is not finalized and nothing was saved: its decision record could not be written "
        f"to the archive. The archive address “decision-record-{world.cycle.week.lower()}” is taken by another "
        f"page, so “Decision record {world.cycle.week}” cannot be written there; an operator has to move that "
        "page first."
    ]
    assert ReviewCycle.objects.get(pk=world.cycle.pk).status == CycleStatus.IN_REVIEW
    assert not Decision.objects.filter(priority_rank__isnull=False).exists()
    assert not RequestEvent.objects.filter(action="decided").exists()
    assert not PageRevision.objects.exists()


def test_publish_is_refused_and_nothing_saved_when_the_record_cannot_be_written(world, small_pages, client):
    big_week(world, requests=18)  # a size at which publishing's windows take the record onto one page more
    cycle = committed(committee_services.cycle_finalize, cycle=world.cycle, actor=world.chair)
    parts = len(record_pages(world))
    revisions = PageRevision.objects.count()
    outbox = OutboxMessage.objects.count()
    # Publishing adds the windows: the record needs one page more than at finalize, and that address is taken.
    _taken(records.decision_record_part_slug(world.cycle.week, parts + 1))
    client.force_login(world.chair)

    response = committed(client.post, reverse("committee:cycle-publish", args=[cycle.week]), {"confirm": "1"},
                         follow=True)

    assert response.status_code == 200
    assert (f"Week {cycle.week} is not published and nothing was saved: its decision record could not be written "
            "to the archive.") in response.content.decode()
    assert ReviewCycle.objects.get(pk=cycle.pk).status == CycleStatus.FINALIZED
    assert not AllocationPlan.objects.exists() and not AllocationWindow.objects.exists()
    assert not RequestEvent.objects.filter(action="published").exists()
    assert (PageRevision.objects.count(), OutboxMessage.objects.count()) == (revisions, outbox)
    assert selectors.archive_verify().ok


def test_the_chair_reads_the_record_being_written_after_finalize_and_publish_then_written(world, client):
    big_week(world, requests=3)
    client.force_login(world.chair)
    review = reverse("committee:review-cycle", args=[world.cycle.week])

    # The page the chair is sent to is drawn before the outbox's task runs (as with a broker): the record waits.
    finalized = committed(client.post, reverse("committee:cycle-finalize", args=[world.cycle.week]),
                          {"confirm": "1"}, follow=True).content.decode()
    finalized_later = client.get(review).content.decode()
    published = committed(client.post, reverse("committee:cycle-publish", args=[world.cycle.week]),
                          {"confirm": "1"}, follow=True).content.decode()
    published_later = client.get(review).content.decode()

    assert (f"Week {world.cycle.week} is finalized: the decisions are final, and the archive is writing its decision "
            "record (its progress is shown below).") in finalized
    assert "The archive is writing the week's decision record (1 change waiting)." in finalized
    assert (f"Week {world.cycle.week} is published: plan version 1 with 3 new windows; the archive is adding them to "
            "the week&#x27;s decision record") in published
    assert "(1 change waiting)" in published
    for later in (finalized_later, published_later):
        assert "The week's decision record is written: it holds every change of the week." in later
        assert "changes waiting" not in later and "change waiting" not in later
    assert revision_latest(page=Page.objects.get(source_key=f"cycle:{world.cycle.week}")).data["plan"]["version"] == 1


def test_the_api_answers_409_with_the_reason_when_the_record_cannot_be_written(world):
    from rest_framework.test import APIClient

    big_week(world, requests=3)
    committed(committee_services.cycle_finalize, cycle=world.cycle, actor=world.chair)
    Page.objects.filter(source_key=f"cycle:{world.cycle.week}").update(source_key=None)  # an old import holds it
    api = APIClient()
    api.force_login(world.chair)

    response = api.post(f"/api/v1/cycles/{world.cycle.week}/publish/", {}, format="json")

    assert response.status_code == 409
    assert "is not published and nothing was saved" in response.json()["non_field_errors"][0]
    assert not AllocationPlan.objects.exists()
    assert ReviewCycle.objects.get(pk=world.cycle.pk).status == CycleStatus.FINALIZED


def test_a_record_that_needs_fewer_pages_marks_the_parts_it_no_longer_uses(world, monkeypatch):
    big_week(world, requests=40)
    monkeypatch.setattr(pages, "MAX_BODY_CHARS", SMALL_PAGE)
    cycle = committed(committee_services.cycle_finalize, cycle=world.cycle, actor=world.chair)
    split = record_pages(world)
    assert len(split) > 2
    assert services_sync(cycle) is None  # nothing changed: no page gets a revision
    revisions = PageRevision.objects.count()

    monkeypatch.setattr(pages, "MAX_BODY_CHARS", 2 * SMALL_PAGE)
    regenerated = services_sync(cycle)

    now = record_pages(world)
    used = [p for p in now if "(no longer used)" not in p.title]
    assert regenerated is not None and 1 < len(used) < len(split)
    assert_reads_in_order(records.decision_record_markdown(regenerated.data), used)
    for page in now[len(used):]:
        assert "This part is no longer used" in revision_latest(page=page).body
        assert page.revisions.count() == 2  # the old part stays in its history
    assert PageRevision.objects.count() == revisions + len(now)
    assert selectors.archive_verify().ok


def services_sync(cycle):
    from reports.services import decision_record_sync

    return decision_record_sync(cycle=ReviewCycle.objects.get(pk=cycle.pk))


def test_the_command_writes_the_record_a_week_lost_and_then_finds_it_up_to_date(world, small_pages):
    from io import StringIO

    from django.core.management import call_command

    big_week(world, requests=40)
    # What the old after-commit write left behind: the week finalized, its record never written.
    ReviewCycle.objects.filter(pk=world.cycle.pk).update(
        status=CycleStatus.FINALIZED, finalized_at=PINNED, finalized_by_name="Chair"
    )
    assert not Page.objects.filter(kind=PageKind.DECISION_RECORD).exists()
    slug = records.decision_record_slug(world.cycle.week)

    first, second = StringIO(), StringIO()
    call_command("sync_decision_records", stdout=first)
    call_command("sync_decision_records", "--week", world.cycle.week, stdout=second)

    assert first.getvalue() == f"{world.cycle.week}: {slug} revision 1 written\n"
    assert second.getvalue() == f"{world.cycle.week}: {slug} is up to date\n"
    recovered = record_pages(world)
    assert len(recovered) > 1 and len(revision_latest(page=recovered[0]).data["ranking"]) == 40
    assert selectors.archive_verify().ok


def test_the_archive_index_lists_the_week_once_and_its_page_links_the_parts(world, small_pages, client):
    big_week(world, requests=40)
    committed(committee_services.cycle_finalize, cycle=world.cycle, actor=world.chair)
    split = record_pages(world)
    client.force_login(world.member_a)

    index = client.get(reverse("reports:index")).content.decode()
    week_page = client.get(split[0].get_absolute_url()).content.decode()

    assert f'href="{split[0].get_absolute_url()}"' in index
    assert not any(f'href="{part.get_absolute_url()}"' in index for part in split[1:])
    assert all(f'href="{part.get_absolute_url()}"' in week_page for part in split[1:])
