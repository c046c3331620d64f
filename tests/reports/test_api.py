"""The archive API under /api/v1/archive/: read for everyone signed in, refused for anonymous, no writes."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from reports import selectors
from reports.models import PageRevision
from reports.selectors import revision_latest
from tests.reports.conftest import edit, make_page


@pytest.fixture
def api():
    return APIClient()


@pytest.fixture
def page(world):
    page = make_page(world, body="# Charter\n\nGPUs by rubric.")
    edit(world, page, "# Charter\n\nGPUs by the published rubric.", actor=world.reviewer, summary="Say published")
    page.refresh_from_db()
    return page


def urls(slug):
    base = "/api/v1/archive"
    return [f"{base}/pages/", f"{base}/pages/{slug}/", f"{base}/pages/{slug}/revisions/",
            f"{base}/pages/{slug}/revisions/1/", f"{base}/pages/{slug}/diff/?old=1&new=2", f"{base}/chain/"]


def test_anonymous_is_refused_everywhere(api, world, page):
    for url in urls(page.slug):
        assert api.get(url).status_code in (401, 403), url


@pytest.mark.parametrize("persona", ["member_a", "outsider", "chair"])
def test_everyone_signed_in_reads(api, world, page, persona):
    api.force_authenticate(getattr(world, persona))
    head = selectors.chain_head()
    for url in urls(page.slug):
        response = api.get(url)
        assert response.status_code == 200, url
        assert response["X-Archive-Chain-Head"] == f"{head.position}:{head.hash}"


@pytest.mark.parametrize("persona", ["member_a", "chair"])
def test_nothing_can_be_written_or_deleted(api, world, page, persona):
    api.force_authenticate(getattr(world, persona))
    for url in urls(page.slug):
        for method in ("post", "put", "patch", "delete"):
            assert getattr(api, method)(url, {}).status_code == 405, (method, url)
    assert PageRevision.objects.count() == 2


def test_page_list_and_kind_filter(api, world, page):
    api.force_authenticate(world.member_a)
    data = api.get("/api/v1/archive/pages/").json()
    (row,) = data["results"]
    assert row["slug"] == "charter" and row["latest_revision"]["number"] == 2
    assert row["latest_revision"]["hash"] == revision_latest(page=page).hash
    assert api.get("/api/v1/archive/pages/?kind=policy").json()["results"] == []
    assert api.get("/api/v1/archive/pages/?kind=nonsense").status_code == 400


def test_page_detail_has_body_html_and_data(api, world, page):
    api.force_authenticate(world.member_a)
    latest = api.get("/api/v1/archive/pages/charter/").json()["latest_revision"]
    assert latest["body"].endswith("published rubric.") and "<h1>Charter</h1>" in latest["html"]
    assert latest["data"] == {} and latest["author_name"] == "Reviewer"


def test_revision_list_and_detail(api, world, page):
    api.force_authenticate(world.member_a)
    numbers = [r["number"] for r in api.get("/api/v1/archive/pages/charter/revisions/").json()["results"]]
    assert numbers == [2, 1]
    first = api.get("/api/v1/archive/pages/charter/revisions/1/").json()
    assert first["body"] == "# Charter\n\nGPUs by rubric." and first["prev_hash"] == "0" * 64
    assert api.get("/api/v1/archive/pages/charter/revisions/7/").status_code == 404
    assert api.get("/api/v1/archive/pages/nope/").status_code == 404


def test_diff_between_two_revisions(api, world, page):
    api.force_authenticate(world.member_a)
    data = api.get("/api/v1/archive/pages/charter/diff/?old=2&new=1").json()
    assert (data["old"]["number"], data["new"]["number"], data["changed"]) == (1, 2, True)
    body = next(f for f in data["fields"] if f["name"] == "body")
    assert (body["added"], body["removed"]) == (1, 1)
    assert "+GPUs by the published rubric." in body["unified"]
    row = body["hunks"][0]["rows"][-1]
    assert row["kind"] == "replace" and {"text": "the published ", "changed": True} in row["right"]


def test_diff_needs_both_numbers(api, world, page):
    api.force_authenticate(world.member_a)
    assert api.get("/api/v1/archive/pages/charter/diff/?old=1").status_code == 400
    assert api.get("/api/v1/archive/pages/charter/diff/?old=1&new=x").status_code == 400


def test_chain_head(api, world, page):
    api.force_authenticate(world.member_a)
    assert api.get("/api/v1/archive/chain/").json() == {"position": 2, "hash": revision_latest(page=page).hash}


def test_page_list_query_count_does_not_grow_with_pages(api, world, django_assert_max_num_queries):
    for i in range(30):
        make_page(world, slug=f"page-{i}", title=f"Page {i}")
    api.force_authenticate(world.member_a)
    with django_assert_max_num_queries(6):
        response = api.get("/api/v1/archive/pages/")
    assert response.json()["count"] == 30
