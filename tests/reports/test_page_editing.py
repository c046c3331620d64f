"""Editing a page: a live preview through the same sanitizer, and a generated page's block shown, not edited."""

from __future__ import annotations

import pytest
from django.urls import reverse

from reports import records
from reports.models import Page, PageKind
from reports.selectors import revision_latest
from tests.reports.conftest import make_page

pytestmark = pytest.mark.usefixtures("db")


def test_the_preview_renders_markdown_through_the_sanitizer(client, world):
    make_page(world, slug="rubric", title="Rubric", body="x")
    client.force_login(world.reviewer)
    response = client.post(reverse("reports:preview"), {
        "body": "**Bold** and [[rubric]] and [[minutes]] <script>alert(1)</script>"
                "<img src=x onerror=alert(2)> [x](javascript:alert(3))",
    })
    assert response.status_code == 200
    html = response.content.decode()
    assert "<strong>Bold</strong>" in html
    assert '<a class="wikilink" href="/archive/rubric/"' in html
    assert 'class="wikilink missing"' in html and 'title="page does not exist yet"' in html
    assert "<script" not in html and "alert(1)" not in html and "onerror" not in html and "javascript:" not in html


def test_only_the_committee_previews_and_a_text_over_the_limit_is_refused(client, world, settings):
    client.force_login(world.member_a)
    assert client.post(reverse("reports:preview"), {"body": "hello"}).status_code == 403
    client.force_login(world.chair)
    from reports.services.pages import MAX_BODY_CHARS

    response = client.post(reverse("reports:preview"), {"body": "x" * (MAX_BODY_CHARS + 1)})
    assert response.status_code == 400 and "too long" in response.content.decode()
    assert client.get(reverse("reports:preview")).status_code == 405


def test_the_edit_form_previews_as_you_type(client, world):
    page = make_page(world)
    client.force_login(world.chair)
    body = client.get(reverse("reports:page-edit", args=[page.slug])).content.decode()
    assert f'hx-post="{reverse("reports:preview")}"' in body and 'from:closest form' in body


@pytest.fixture
def record(world) -> Page:
    """A generated page as the generators write it: the block, then the committee's notes placeholder."""
    from reports import services

    generated = "## Decisions\n\n| Request | Decision |\n|---|---|\n| Ranker | Grant |"
    body = records.merge_generated(None, generated, "_Notes go here._")
    return services.page_create_system(slug="decision-record-2026-w50", kind=PageKind.DECISION_RECORD,
                                       source_key="cycle:2026-W50", title="Decision record 2026-W50", body=body,
                                       data={"week": "2026-W50"}, summary="Generated")


def test_a_generated_page_shows_its_block_read_only_and_edits_only_the_notes(client, world, record):
    client.force_login(world.reviewer)
    response = client.get(reverse("reports:page-edit", args=[record.slug]))
    body = response.content.decode()
    textarea = body[body.index('<textarea name="body"'):]
    textarea = textarea[: textarea.index("</textarea>")]
    assert "_Notes go here._" in textarea
    assert records.GENERATED_START not in body and "docket:generated" not in body  # no markers anywhere
    assert "| Ranker |" not in textarea
    block = body[body.index('id="generated-block"'):]
    assert "Generated record (read-only)" in block and "<td>Ranker</td>" in block
    assert response.context["form"]["body_above"].value() == ""


def test_saving_the_notes_keeps_the_generated_block_intact(client, world, record):
    split = records.generated_split(revision_latest(page=record).body)
    assert split is not None
    block = split.block
    client.force_login(world.reviewer)
    response = client.post(reverse("reports:page-edit", args=[record.slug]), {
        "title": record.title, "body": "The tech lead abstained.", "body_above": "", "summary": "Abstention",
        "base_revision_id": record.latest_revision_id,
    })
    assert response.status_code == 302
    record.refresh_from_db()
    latest = revision_latest(page=record)
    assert latest.number == 2 and latest.body == f"{block}\n\nThe tech lead abstained.\n"
    assert latest.data == {"week": "2026-W50"}
    # The generators find their block where they left it: a regeneration keeps the notes.
    merged = records.merge_generated(latest.body, "## Decisions\n\nRegenerated.", "_Notes go here._")
    assert "Regenerated." in merged and "The tech lead abstained." in merged and "| Ranker |" not in merged


def test_a_pasted_or_altered_block_in_the_notes_does_not_replace_the_generated_one(client, world, record):
    split = records.generated_split(revision_latest(page=record).body)
    assert split is not None
    block = split.block
    forged = f"{records.GENERATED_START}\n| Ranker | Reject |\n{records.GENERATED_END}\n\nMy note."
    client.force_login(world.reviewer)
    client.post(reverse("reports:page-edit", args=[record.slug]), {
        "title": record.title, "body": forged, "body_above": "Above.", "summary": "Forge",
        "base_revision_id": record.latest_revision_id,
    })
    record.refresh_from_db()
    latest = revision_latest(page=record).body
    assert latest == f"Above.\n\n{block}\n\nMy note.\n"
    assert "Reject" not in latest and latest.count(records.GENERATED_START) == 1


def test_saving_the_notes_unchanged_is_refused_and_changes_nothing(client, world, record):
    client.force_login(world.reviewer)
    response = client.post(reverse("reports:page-edit", args=[record.slug]), {
        "title": record.title, "body": "_Notes go here._", "body_above": "", "summary": "Nothing",
        "base_revision_id": record.latest_revision_id,
    })
    assert response.status_code == 400 and "Nothing changed" in response.content.decode()
    assert record.revisions.count() == 1


def test_a_generated_revision_saved_meanwhile_is_an_edit_conflict_that_keeps_the_notes(client, world, record):
    from reports import services

    loaded = record.latest_revision_id
    services.page_append_system(page=record, title=record.title, data={"week": "2026-W50"}, summary="Regenerated",
                                body_from=lambda old: records.merge_generated(old, "## Decisions\n\nNew.", "_N_"))
    client.force_login(world.reviewer)
    response = client.post(reverse("reports:page-edit", args=[record.slug]), {
        "title": record.title, "body": "My late note.", "body_above": "", "summary": "Late",
        "base_revision_id": loaded,
    })
    assert response.status_code == 409
    body = response.content.decode()
    assert "My late note." in body and "Edit conflict" in body
    assert record.revisions.count() == 2
