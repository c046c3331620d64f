"""Saving, restoring and creating archive pages through the services."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from reports import chain, selectors, services
from reports.models import ArchiveChain, PageRevision
from reports.selectors import revision_latest
from tests.reports.conftest import edit, make_page


def test_create_makes_revision_one_with_author_copied_as_text(world):
    page = make_page(world)
    revision = revision_latest(page=page)
    assert (revision.number, revision.position, revision.author_name, revision.author_username) == (
        1, 1, "Chair", "chair")
    assert revision.summary == "First version" and revision.prev_hash == "0" * 64
    assert ArchiveChain.objects.get().head_hash == revision.hash


def test_every_save_is_a_new_full_snapshot(world):
    page = make_page(world, body="one")
    edit(world, page, "one\ntwo", actor=world.reviewer, summary="Add two")
    edit(world, page, "one\ntwo\nthree", actor=world.tech, summary="Add three")
    revisions = list(PageRevision.objects.filter(page=page).order_by("number"))
    assert [r.body for r in revisions] == ["one", "one\ntwo", "one\ntwo\nthree"]
    assert [r.author_name for r in revisions] == ["Chair", "Reviewer", "Tech"]
    assert [r.prev_hash for r in revisions[1:]] == [r.hash for r in revisions[:-1]]
    page.refresh_from_db()
    assert revision_latest(page=page) == revisions[-1]


def test_the_chain_runs_across_pages(world):
    charter = make_page(world)
    minutes = make_page(world, slug="minutes-2026-01", title="Minutes")
    assert revision_latest(page=minutes).position == revision_latest(page=charter).position + 1
    assert revision_latest(page=minutes).prev_hash == revision_latest(page=charter).hash
    assert selectors.archive_verify().ok


def test_stored_hash_matches_the_recomputed_payload(world):
    page = make_page(world)
    revision = PageRevision.objects.select_related("page").get(pk=revision_latest(page=page).pk)
    assert chain.link_hash(revision.prev_hash, chain.payload_of(revision)) == revision.hash


def test_edit_summary_is_required(world):
    page = make_page(world)
    with pytest.raises(ValidationError) as error:
        services.page_revision_save(actor=world.chair, page=page, base_revision_id=page.latest_revision_id,
                                    title="Charter", body="new", summary="   ")
    assert "summary" in error.value.message_dict
    assert PageRevision.objects.count() == 1


def test_saving_unchanged_text_is_refused(world):
    page = make_page(world)
    with pytest.raises(ValidationError):
        edit(world, page, revision_latest(page=page).body)


@pytest.mark.parametrize("persona", ["lead_a", "member_b", "outsider"])
def test_only_committee_members_edit(world, persona):
    page = make_page(world)
    with pytest.raises(PermissionDenied):
        edit(world, page, "hijacked", actor=getattr(world, persona))
    with pytest.raises(PermissionDenied):
        make_page(world, slug="other", actor=getattr(world, persona))
    assert PageRevision.objects.count() == 1


def test_a_stale_base_revision_is_a_conflict_and_writes_nothing(world):
    page = make_page(world, body="one")
    stale_base = page.latest_revision_id
    edit(world, page, "one\nreviewer", actor=world.reviewer)
    with pytest.raises(services.EditConflict) as conflict:
        services.page_revision_save(actor=world.tech, page=page, base_revision_id=stale_base, title="Charter",
                                    body="one\ntech", summary="Tech's edit")
    assert conflict.value.latest.body == "one\nreviewer"
    assert PageRevision.objects.filter(page=page).count() == 2


def test_restore_copies_an_old_revision_as_a_new_one(world):
    page = make_page(world, body="original")
    edit(world, page, "vandalised")
    page.refresh_from_db()
    restored = services.page_revision_restore(actor=world.reviewer, page=page, number=1,
                                              base_revision_id=page.latest_revision_id, summary="undo")
    assert (restored.number, restored.body, restored.restored_from) == (3, "original", 1)
    assert restored.summary == "Restored revision 1: undo"
    assert PageRevision.objects.filter(page=page).count() == 3
    assert selectors.archive_verify().ok


def test_restoring_the_current_content_is_refused(world):
    page = make_page(world, body="same")
    with pytest.raises(ValidationError):
        services.page_revision_restore(actor=world.chair, page=page, number=1,
                                       base_revision_id=page.latest_revision_id)


def test_restore_with_a_stale_view_is_a_conflict(world):
    page = make_page(world, body="a")
    first = page.latest_revision_id
    edit(world, page, "b")
    edit(world, page, "c")
    with pytest.raises(services.EditConflict):
        services.page_revision_restore(actor=world.chair, page=page, number=1, base_revision_id=first)


@pytest.mark.parametrize("slug", ["new", "search", "Has Space", "", "exports", "a/b", "decision-record-2026-w01",
                                  "rubric-v9"])
def test_bad_or_reserved_addresses_are_refused(world, slug):
    with pytest.raises(ValidationError):
        make_page(world, slug=slug)


def test_an_address_is_taken_once(world):
    make_page(world)
    with pytest.raises(ValidationError):
        make_page(world)


def test_structured_data_is_carried_over_by_text_edits(world):
    page = services.page_create_system(slug="decision-record-x", kind="decision_record", source_key="cycle:x",
                                       title="Record", body="text", data={"ranking": [{"rank": 1}]},
                                       summary="Generated")
    revision = edit(world, page, "text with a note")
    assert revision.data == {"ranking": [{"rank": 1}]}


def test_system_append_is_idempotent(world):
    page = services.page_create_system(slug="rubric-v1", kind="policy", source_key="rubric:1", title="Rubric",
                                       body="w", data={"w": 1}, summary="Generated")
    assert services.page_append_system(page=page, title="Rubric", body_from=lambda old: "w", data={"w": 1},
                                       summary="again") is None
    revision = services.page_append_system(page=page, title="Rubric", body_from=lambda old: f"{old}2", data={"w": 1},
                                           summary="changed")
    assert revision is not None and revision.body == "w2"
    assert revision.author_name == services.SYSTEM_AUTHOR
