"""Archive search: full-text on PostgreSQL, a word match elsewhere; results carry an escaped snippet."""

from __future__ import annotations

from django.urls import reverse

from reports import selectors
from tests.committee.reviewing import decide, two_requests_in_review
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


MARKDOWN_SYNTAX = ("**", "__", "[[", "]]", "](", "|", "#", ">", "`", "<!--", "---")


def syntax_in(snippet: str) -> list[str]:
    """The Markdown a snippet shows, apart from the <mark> the search adds."""
    text = snippet.replace("<mark>", "").replace("</mark>", "")
    return [s for s in MARKDOWN_SYNTAX if s in text]


def test_a_snippet_is_the_text_a_reader_sees_with_the_match_marked(world):
    make_page(world, body="# Charter\n\n> The committee granted **sixteen** GPUs to the [ranking model](https://x.example)"
                          " after `review`, see [[minutes|the minutes]].\n\n| Team | Ranking |\n|---|---|\n"
                          "| A | first |\n")
    (hit,) = selectors.page_search(viewer=world.member_a, query="ranking")
    assert "<mark>ranking</mark> model after review, see the minutes." in hit.snippet
    assert "granted sixteen GPUs" in hit.snippet
    assert not syntax_in(hit.snippet), hit.snippet


def test_a_hit_in_a_decision_records_table_shows_the_row_as_text(week):
    hits = selectors.page_search(viewer=week.member_b, query="distilled")
    (hit,) = [h for h in hits if h.page.kind == "decision_record"]
    assert "<mark>distilled</mark> variant covers most of it" in hit.snippet
    # The request's title has a "|" of its own ("Vision model | v2"); nothing else of the table's syntax shows.
    assert "Request: Vision model | v2" in hit.snippet
    assert syntax_in(hit.snippet.replace("Vision model | v2", "")) == [], hit.snippet


def test_a_snippet_is_cut_around_the_match_of_a_long_page(world):
    body = "\n\n".join(f"Paragraph {i} says nothing in particular about anything at all." for i in range(400))
    make_page(world, body=body + "\n\nThe zebra paragraph.\n\n" + body)
    (hit,) = selectors.page_search(viewer=world.member_a, query="zebra")
    assert "The <mark>zebra</mark> paragraph." in hit.snippet and len(hit.snippet) < 400


def test_requests_are_found_by_title_and_team_among_those_the_viewer_reads(world):
    world.team_b.name = "Perception"
    world.team_b.save()
    a, b = two_requests_in_review(world)
    assert [h.request for h in selectors.request_search(viewer=world.member_a, query="ranker")] == [a]
    assert [h.request for h in selectors.request_search(viewer=world.chair, query="perception")] == [b]
    # Team B does not learn of team A's request, by its title or its team's name.
    assert selectors.request_search(viewer=world.member_b, query="ranker") == []
    assert [h.request for h in selectors.request_search(viewer=world.member_b, query="vision")] == [b]
    assert selectors.request_search(viewer=world.outsider, query="ranker") == []
    # Undecided, there is no rationale to show: the hit is its title and team alone.
    assert selectors.request_search(viewer=world.member_a, query="ranker")[0].snippet == ""


def test_a_rationale_is_searchable_only_where_the_decision_is_readable(world):
    a, _b = two_requests_in_review(world)
    decide(world, a, outcome="defer", rationale="The **churn** model pays for itself.")
    # Before the week is finalized only the committee reads decisions.
    assert selectors.request_search(viewer=world.lead_a, query="churn") == []
    (hit,) = selectors.request_search(viewer=world.reviewer, query="churn")
    assert hit.request == a and "The <mark>churn</mark> model pays for itself." in hit.snippet


def test_a_team_finds_its_decided_request_by_the_rationale(week):
    (hit,) = selectors.request_search(viewer=week.member_b, query="distilled")
    assert hit.request == week.requests[1] and "<mark>distilled</mark>" in hit.snippet
    assert selectors.request_search(viewer=week.member_a, query="distilled") == []


def test_the_search_page_lists_pages_and_requests(client, world):
    a, _b = two_requests_in_review(world)
    make_page(world, body="Why the **ranker** retrain came first.")
    client.force_login(world.member_a)
    body = client.get(reverse("reports:search"), {"q": "ranker"}).content.decode()
    assert "1 page matches" in body and "1 request matches" in body
    assert reverse("committee:request-detail", args=[a.pk]) in body
    assert "Why the <mark>ranker</mark> retrain came first." in body


def _emergency(world):
    from committee import services
    from committee.services.emergency import emergency_request_file

    services.cycle_create(week="2026-W49")  # the week the pinned clock runs in
    return emergency_request_file(actor=world.lead_a, team=world.team_a, pool=world.a100, title="Fraud model hotfix",
                                  gpu_count=8, duration_hours=6, justification="A chargeback wave hit on Tuesday.")


def test_the_word_emergency_finds_the_emergencies_the_viewer_reads(world):
    emergency = _emergency(world)
    two_requests_in_review(world)
    for viewer in (world.member_a, world.chair):
        (hit,) = selectors.request_search(viewer=viewer, query="emergency")
        assert (hit.request, hit.emergency) == (emergency.request, emergency)
        assert hit.snippet == "A chargeback wave hit on Tuesday."  # its justification, no word of it marked
    assert [h.emergency for h in selectors.request_search(viewer=world.chair, query="emergencies ranker")] == []
    assert selectors.request_search(viewer=world.member_b, query="emergency") == []


def test_an_emergency_is_found_by_its_justification(world):
    emergency = _emergency(world)
    (hit,) = selectors.request_search(viewer=world.lead_a, query="chargeback")
    assert hit.emergency == emergency and "A <mark>chargeback</mark> wave hit on Tuesday." in hit.snippet
    assert selectors.request_search(viewer=world.member_b, query="chargeback") == []


def test_the_search_page_finds_an_emergency_in_either_language(client, world):
    emergency = _emergency(world)
    client.force_login(world.member_a)
    for language, query, label in (("en", "emergency", "Emergency"), ("zh-hans", "紧急", "紧急申请")):
        client.post("/i18n/setlang/", {"language": language, "next": "/"})
        body = client.get(reverse("reports:search"), {"q": query}).content.decode()
        link = reverse("committee:emergency-detail", args=[emergency.pk])
        assert f'<a href="{link}"><strong>Fraud model hotfix</strong></a> <small><strong>{label}</strong>' in body
