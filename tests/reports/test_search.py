"""Archive search: full-text on PostgreSQL, a word match elsewhere; results carry an escaped snippet."""

from __future__ import annotations

from django.urls import reverse

from reports import selectors
from tests.reports.conftest import edit, make_page


def test_finds_pages_by_current_text_with_a_highlighted_snippet(world):
    make_page(world, body="The committee granted **sixteen** GPUs to the ranking model.")
    make_page(world, slug="minutes", title="Minutes", body="Nothing about that here.")
    hits = selectors.page_search(viewer=world.member_a, query="ranking")
    assert [h.page.slug for h in hits] == ["charter"]
    assert "<mark>ranking</mark>" in hits[0].snippet


def test_every_word_must_match(world):
    make_page(world, body="GPU allocation rubric")
    assert selectors.page_search(viewer=world.member_a, query="rubric allocation")
    assert not selectors.page_search(viewer=world.member_a, query="rubric zebra")


def test_searches_the_current_revision_only(world):
    page = make_page(world, body="obsolete wording")
    edit(world, page, "fresh wording")
    assert not selectors.page_search(viewer=world.member_a, query="obsolete")
    assert selectors.page_search(viewer=world.member_a, query="fresh")


def test_title_matches_count(world):
    make_page(world, title="Quarterly charter", body="text")
    assert selectors.page_search(viewer=world.member_a, query="quarterly")


def test_snippets_are_escaped(world):
    make_page(world, body="<script>alert(1)</script> ranking <b>bold</b>")
    (hit,) = selectors.page_search(viewer=world.member_a, query="ranking")
    # SQLite's snippet shows the tags escaped; PostgreSQL's headline drops them. Neither lets one through.
    assert "<mark>ranking</mark>" in hit.snippet
    assert "<script" not in hit.snippet and "<b>" not in hit.snippet


def test_anonymous_gets_nothing(world):
    from django.contrib.auth.models import AnonymousUser

    make_page(world, body="ranking")
    assert selectors.page_search(viewer=AnonymousUser(), query="ranking") == []


def test_search_page_lists_results(client, world):
    make_page(world, body="The ranking model won.")
    client.force_login(world.member_b)
    body = client.get(reverse("reports:search"), {"q": "ranking"}).content.decode()
    assert "1 page matches" in body and "<mark>ranking</mark>" in body
    assert reverse("reports:page", args=["charter"]) in body


def test_empty_query_shows_the_form_only(client, world):
    client.force_login(world.member_b)
    response = client.get(reverse("reports:search"), {"q": ""})
    assert response.status_code == 200 and response.context["hits"] == []
