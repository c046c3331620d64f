"""403 and 404 are pages of the site: navigation, the reason in plain words, where to go next; /api/ stays JSON."""

from __future__ import annotations

import pytest
from django.http import HttpRequest, HttpResponse
from django.test import Client, override_settings
from django.urls import path, reverse

from config import urls as site_urls

pytestmark = pytest.mark.usefixtures("db")


def _boom(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("secret detail of a bug")


# The site's URLs plus a page whose view is a bug: how a 500 looks.
urlpatterns = [path("boom/", _boom), *site_urls.urlpatterns]
handler500 = site_urls.handler500


def nav_links(body: str) -> bool:
    """base.html's navigation for someone signed in: the portal, the archive and the sign-out button."""
    return all(part in body for part in (
        f'href="{reverse("committee:portal")}"', f'href="{reverse("reports:index")}"', f'action="{reverse("logout")}"'
    ))


@override_settings(DEBUG=False)
def test_a_team_member_on_the_monthly_review_is_told_it_needs_a_committee_seat(client, world):
    client.force_login(world.member_a)
    response = client.get(reverse("reports:monthly-review"))
    assert response.status_code == 403
    body = response.content.decode()
    assert nav_links(body)
    assert "The monthly review and capacity planning are the committee&#x27;s pages." in body
    assert "It needs: a seat on the committee." in body
    assert "You are signed in as member_a, without a committee seat." in body
    # Where the team member can go instead: the dashboards open to everyone, and their windows.
    assert f'href="{reverse("reports:dashboards")}"' in body
    assert f'href="{reverse("allocations:windows")}"' in body
    assert client.get(reverse("reports:dashboards")).status_code == 200


@override_settings(DEBUG=False)
def test_a_committee_member_on_a_chair_page_is_told_it_is_the_chairs(client, world):
    client.force_login(world.reviewer)
    response = client.get(reverse("committee:cycle-close-intake", args=[world.cycle.week]))
    assert response.status_code == 403
    body = response.content.decode()
    assert nav_links(body)
    assert "Only the chair can do this." in body and "It needs: the chair&#x27;s seat." in body
    assert "a committee member" in body
    assert f'href="{reverse("committee:review")}"' in body


@override_settings(DEBUG=False)
def test_a_refusal_without_a_named_role_still_gives_its_reason_and_the_way_home(client, world):
    client.force_login(world.outsider)
    response = client.get(reverse("committee:request-create"))
    assert response.status_code == 403
    body = response.content.decode()
    assert nav_links(body) and "You are not a member of any team." in body
    assert "It needs:" not in body
    assert f'href="{reverse("home")}"' in body


@override_settings(DEBUG=False)
def test_an_unknown_address_is_the_404_page_with_navigation_and_search(client, world):
    client.force_login(world.member_a)
    response = client.get("/no-such-page/at/all/")
    assert response.status_code == 404
    body = response.content.decode()
    assert nav_links(body)
    assert "Docket has no page at this address." in body and "/no-such-page/at/all/" in body
    assert f'action="{reverse("reports:search")}"' in body and f'href="{reverse("home")}"' in body
    # Nothing of Django's debug page: neither the URL patterns tried nor the settings.
    assert "URLconf" not in body and "api/v1/" not in body


@override_settings(DEBUG=False)
def test_a_404_with_a_message_for_people_shows_it_and_hides_model_names(client, world):
    client.force_login(world.member_a)
    body = client.get(reverse("reports:history", args=["no-such-page"])).content.decode()
    assert "No archive page at this address." in body
    response = client.get(reverse("reports:export", args=[999999]))
    assert response.status_code == 404
    assert "matches the given query" not in response.content.decode()


@override_settings(DEBUG=False)
def test_anonymous_visitors_get_the_404_page_without_the_search(client, world):
    response = client.get("/no-such-page/")
    assert response.status_code == 404
    body = response.content.decode()
    assert "Docket has no page at this address." in body and 'role="search"' not in body


@override_settings(DEBUG=False)
@pytest.mark.parametrize("url", ["/api/v1/no-such-endpoint/", "/api/v1/cycles/2026-W49/"])
def test_api_paths_keep_answering_json(client, world, url):
    client.force_login(world.member_a)
    response = client.get(url)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json" and "detail" in response.json()


def test_the_favicon_is_linked_and_favicon_ico_answers(client, world):
    client.force_login(world.member_a)
    body = client.get(reverse("committee:portal")).content.decode()
    assert '<link rel="icon" href="/static/docket/favicon.svg" type="image/svg+xml">' in body
    response = client.get("/favicon.ico")
    assert response.status_code == 301 and response["Location"] == "/static/docket/favicon.svg"
    icon = client.get(response["Location"])
    assert icon.status_code == 200
    assert b"<svg" in b"".join(icon.streaming_content) if icon.streaming else b"<svg" in icon.content


@override_settings(DEBUG=False)
def test_each_way_out_is_offered_once(client, world):
    client.force_login(world.member_a)
    body = client.get(reverse("committee:review")).content.decode()
    assert "The weekly review is for committee members." in body
    section = body[body.index("Where you can go"):]
    assert section.count(f'href="{reverse("committee:portal")}"') == 1


@override_settings(DEBUG=False, ROOT_URLCONF=__name__)
def test_a_server_error_is_the_sites_500_page_without_the_details(world):
    client = Client(raise_request_exception=False)
    client.force_login(world.member_a)
    response = client.get("/boom/")
    assert response.status_code == 500
    body = response.content.decode()
    assert "Something went wrong on Docket" in body and 'href="/"' in body
    assert nav_links(body)  # the database works: the page has the viewer's navigation
    assert "secret detail" not in body and "RuntimeError" not in body and "Traceback" not in body


@override_settings(DEBUG=False, ROOT_URLCONF=__name__)
def test_the_500_page_is_still_served_when_the_navigation_cannot_be_built(world, monkeypatch):
    def broken(request: HttpRequest) -> dict[str, object]:
        raise RuntimeError("the roles cannot be read")

    from django.template import engines

    engine = engines["django"].engine  # type: ignore[attr-defined]
    monkeypatch.setattr("committee.context_processors.roles", broken)
    # The engine keeps the processors it imported: forget them, so the broken one is used, and after.
    engine.__dict__.pop("template_context_processors", None)
    try:
        client = Client(raise_request_exception=False)
        client.force_login(world.member_a)
        response = client.get("/boom/")
    finally:
        monkeypatch.undo()
        engine.__dict__.pop("template_context_processors", None)
    assert response.status_code == 500
    body = response.content.decode()
    assert "Something went wrong on Docket" in body and not nav_links(body) and "roles cannot" not in body
