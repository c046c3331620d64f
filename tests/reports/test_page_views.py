"""The archive's pages in the browser's terms: what each persona gets, and the edit, history, diff and restore flows."""

from __future__ import annotations

import pytest
from django.urls import reverse

from reports.models import PageRevision
from tests.reports.conftest import edit, make_page


@pytest.fixture
def page(world):
    page = make_page(world, body="# Charter\n\nWe allocate GPUs by rubric.\n\nSee [[minutes]].")
    edit(world, page, "# Charter\n\nWe allocate GPUs by the published rubric.\n\nSee [[minutes]].",
         actor=world.reviewer, summary="Say published")
    page.refresh_from_db()
    return page


def read_urls(page):
    return [
        reverse("reports:index"),
        reverse("reports:search") + "?q=rubric",
        reverse("reports:chain"),
        reverse("reports:page", args=[page.slug]),
        reverse("reports:history", args=[page.slug]),
        reverse("reports:compare", args=[page.slug]) + "?old=1&new=2",
        reverse("reports:revision", args=[page.slug, 1]),
    ]


def test_anonymous_visitors_are_sent_to_sign_in_everywhere(client, world, page):
    urls = [*read_urls(page), reverse("reports:page-edit", args=[page.slug]), reverse("reports:page-create")]
    for url in urls:
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/accounts/login/"), url
    for url in (reverse("reports:revision-restore", args=[page.slug, 1]),
                reverse("reports:revision-pdf", args=[page.slug, 1])):
        assert client.post(url).status_code == 302
    assert PageRevision.objects.count() == 2


@pytest.mark.parametrize("persona", ["member_a", "outsider", "chair", "finance"])
def test_everyone_signed_in_reads_every_page(client, world, page, persona):
    client.force_login(getattr(world, persona))
    for url in read_urls(page):
        response = client.get(url)
        assert response.status_code == 200, url
        assert response.context["chain_head"].hash in response.content.decode(), url


@pytest.mark.parametrize("persona", ["member_a", "lead_a", "outsider"])
def test_team_members_cannot_edit_create_or_restore(client, world, page, persona):
    client.force_login(getattr(world, persona))
    assert client.get(reverse("reports:page-edit", args=[page.slug])).status_code == 403
    assert client.get(reverse("reports:page-create")).status_code == 403
    post = {"title": "x", "body": "hijack", "summary": "x", "base_revision_id": page.latest_revision_id}
    assert client.post(reverse("reports:page-edit", args=[page.slug]), post).status_code == 403
    assert client.post(reverse("reports:page-create"), {**post, "slug": "hijack"}).status_code == 403
    restore = {"base_revision_id": page.latest_revision_id}
    assert client.post(reverse("reports:revision-restore", args=[page.slug, 1]), restore).status_code == 403
    assert PageRevision.objects.count() == 2
    body = client.get(reverse("reports:page", args=[page.slug])).content.decode()
    assert reverse("reports:page-edit", args=[page.slug]) not in body


def test_nothing_offers_to_delete(client, world, page):
    client.force_login(world.chair)
    for url in read_urls(page):
        assert "delete" not in client.get(url).content.decode().lower(), url


def test_page_shows_rendered_text_meta_and_links(client, world, page):
    client.force_login(world.member_a)
    body = client.get(reverse("reports:page", args=[page.slug])).content.decode()
    assert "<h1>Charter</h1>" in body and "published rubric" in body
    assert 'href="/archive/minutes/"' in body
    assert "Reviewer" in body and "Say published" in body
    assert reverse("reports:revision", args=[page.slug, 2]) in body


def test_backlinks_list_pages_that_link_here(client, world, page):
    minutes = make_page(world, slug="minutes", title="Minutes", body="Notes")
    client.force_login(world.member_a)
    body = client.get(reverse("reports:page", args=[minutes.slug])).content.decode()
    assert "Pages linking here" in body and reverse("reports:page", args=[page.slug]) in body


def test_committee_member_edits_through_the_form(client, world, page):
    client.force_login(world.finance)
    form = client.get(reverse("reports:page-edit", args=[page.slug]))
    assert form.status_code == 200
    assert form.context["form"].initial["base_revision_id"] == page.latest_revision_id
    response = client.post(reverse("reports:page-edit", args=[page.slug]), {
        "title": "Charter", "body": "# Charter\n\nNew text.", "summary": "Rewrite",
        "base_revision_id": page.latest_revision_id})
    assert response.status_code == 302 and response["Location"] == reverse("reports:page", args=[page.slug])
    latest = PageRevision.objects.filter(page=page).order_by("-number")[0]
    assert (latest.number, latest.author_name, latest.summary) == (3, "Finance", "Rewrite")


def test_missing_summary_keeps_the_text_and_saves_nothing(client, world, page):
    client.force_login(world.chair)
    response = client.post(reverse("reports:page-edit", args=[page.slug]), {
        "title": "Charter", "body": "Unsaved words", "summary": "", "base_revision_id": page.latest_revision_id})
    assert response.status_code == 400
    assert "Unsaved words" in response.content.decode()
    assert response.context["form"].errors["summary"]
    assert PageRevision.objects.count() == 2


def test_history_lists_every_revision_newest_first(client, world, page):
    client.force_login(world.member_b)
    response = client.get(reverse("reports:history", args=[page.slug]))
    assert [r.number for r in response.context["revisions"]] == [2, 1]
    body = response.content.decode()
    assert "Say published" in body and "First version" in body


def test_compare_shows_both_sides_side_by_side(client, world, page):
    client.force_login(world.member_b)
    response = client.get(reverse("reports:compare", args=[page.slug]) + "?old=2&new=1")
    assert response.context["old"].number == 1 and response.context["new"].number == 2
    body = response.content.decode()
    assert '<tr class="replace">' in body
    assert "<ins>the published </ins>" in body


def test_compare_without_numbers_redirects_to_the_last_change(client, world, page):
    client.force_login(world.member_b)
    response = client.get(reverse("reports:compare", args=[page.slug]))
    assert response.status_code == 302 and response["Location"].endswith("?old=1&new=2")


@pytest.mark.parametrize("old", ["１", "1.0", "1E+0", "0_1"])
def test_compare_takes_revision_numbers_in_digits_only(client, world, page, old):
    client.force_login(world.member_b)
    response = client.get(reverse("reports:compare", args=[page.slug]), {"old": old, "new": "2"})
    assert response.status_code == 302 and response["Location"].endswith("?old=1&new=2")  # as without numbers


def test_restore_refuses_a_base_revision_not_in_digits(client, world, page):
    client.force_login(world.chair)
    response = client.post(reverse("reports:revision-restore", args=[page.slug, 1]),
                           {"base_revision_id": "２", "summary": "Back"}, follow=True)
    assert "The restore form was incomplete; nothing changed." in response.content.decode()
    assert PageRevision.objects.filter(page=page).count() == 2


def test_unknown_page_or_revision_is_404(client, world, page):
    client.force_login(world.member_b)
    assert client.get(reverse("reports:page", args=["nope"])).status_code == 404
    assert client.get(reverse("reports:revision", args=[page.slug, 9])).status_code == 404
    assert client.get(reverse("reports:compare", args=[page.slug]) + "?old=1&new=9").status_code == 404


def test_permalink_shows_the_old_revision_and_offers_restore_to_the_committee(client, world, page):
    client.force_login(world.chair)
    response = client.get(reverse("reports:revision", args=[page.slug, 1]))
    body = response.content.decode()
    assert "We allocate GPUs by rubric." in body and "You are reading revision 1" in body
    assert reverse("reports:revision-restore", args=[page.slug, 1]) in body
    client.force_login(world.member_a)
    body = client.get(reverse("reports:revision", args=[page.slug, 1])).content.decode()
    assert reverse("reports:revision-restore", args=[page.slug, 1]) not in body


def test_restore_from_the_permalink(client, world, page):
    client.force_login(world.tech)
    response = client.post(reverse("reports:revision-restore", args=[page.slug, 1]),
                           {"base_revision_id": page.latest_revision_id, "summary": "back to the original"})
    assert response.status_code == 302
    latest = PageRevision.objects.filter(page=page).order_by("-number")[0]
    assert (latest.number, latest.restored_from) == (3, 1)
    assert latest.body == PageRevision.objects.get(page=page, number=1).body


def test_restore_after_someone_else_saved_is_refused_and_shows_the_difference(client, world, page):
    seen = page.latest_revision_id
    edit(world, page, "someone else's text", actor=world.reviewer)
    client.force_login(world.tech)
    response = client.post(reverse("reports:revision-restore", args=[page.slug, 1]), {"base_revision_id": seen},
                           follow=True)
    assert "nothing was restored" in response.content.decode()
    assert PageRevision.objects.filter(page=page).count() == 3


def test_committee_member_creates_a_free_page(client, world):
    client.force_login(world.chair)
    response = client.post(reverse("reports:page-create"), {
        "slug": "minutes-2026-01-12", "title": "Minutes 12 January", "body": "Present: all.", "summary": "Minutes"})
    assert response.status_code == 302
    assert response["Location"] == reverse("reports:page", args=["minutes-2026-01-12"])


def test_create_refuses_a_taken_address(client, world, page):
    client.force_login(world.chair)
    response = client.post(reverse("reports:page-create"), {
        "slug": page.slug, "title": "Again", "body": "", "summary": "x"})
    assert response.status_code == 400 and response.context["form"].errors["slug"]


def test_archive_nav_item_is_shown_to_signed_in_people(client, world):
    client.force_login(world.member_a)
    body = client.get(reverse("reports:index")).content.decode()
    assert f'href="{reverse("reports:index")}"' in body and ">Archive<" in body


def test_index_and_history_queries_do_not_grow_with_rows(client, world, django_assert_max_num_queries):
    page = make_page(world, slug="busy", title="Busy", body="0")
    for i in range(1, 30):
        edit(world, page, str(i))
    for i in range(20):
        make_page(world, slug=f"page-{i}", title=f"Page {i}")
    client.force_login(world.member_a)
    with django_assert_max_num_queries(10):
        assert client.get(reverse("reports:index")).status_code == 200
    with django_assert_max_num_queries(10):
        response = client.get(reverse("reports:history", args=["busy"]))
    assert len(response.context["revisions"]) == 30


def test_a_link_to_a_missing_page_is_marked_and_leads_to_creating_it(client, world, page):
    make_page(world, slug="rubric", title="Rubric", body="x")
    edit(world, page, "See [[minutes]] and [[rubric|the rubric]].", summary="Links")
    client.force_login(world.member_a)
    body = client.get(reverse("reports:page", args=[page.slug])).content.decode()
    assert ('<a class="wikilink missing" href="/archive/minutes/" title="page does not exist yet"' in body)
    assert '<a class="wikilink" href="/archive/rubric/"' in body
    # Following it: a 404 that says the page is not written yet; only the committee is offered to write it.
    missing = client.get("/archive/minutes/")
    assert missing.status_code == 404 and "This page does not exist yet" in missing.content.decode()
    assert reverse("reports:page-create") not in missing.content.decode()
    client.force_login(world.reviewer)
    missing = client.get("/archive/minutes/").content.decode()
    create = f'href="{reverse("reports:page-create")}?slug=minutes"'
    assert create in missing
    form = client.get(reverse("reports:page-create"), {"slug": "minutes"})
    assert form.context["form"]["slug"].value() == "minutes"
