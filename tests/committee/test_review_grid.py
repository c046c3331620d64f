"""The scores grid: save one cell as you go, or the whole page as one form without JavaScript."""

from __future__ import annotations

import gzip

import pytest
from django.urls import reverse

from committee.models import Score
from tests.committee.reviewing import bulk_requests, bulk_teams, close, score, two_requests_in_review
from tests.committee.test_conflicts_found import org_with_conflicts


def url(world, name, *args):
    return reverse(f"committee:{name}", args=[world.cycle.week, *args])


def cell(client, world, gpu_request, criterion, value):
    return client.post(url(world, "review-grid-cell"), {"request": gpu_request.pk, "criterion": criterion,
                                                         "value": value})


def test_a_cell_saves_and_answers_the_members_count_not_the_ranking(client, world):
    a, b = two_requests_in_review(world)
    client.force_login(world.finance)
    answer = cell(client, world, a, "business_impact", "7")
    assert answer.status_code == 200
    assert answer.json() == {"state": "saved", "value": 7, "message": "Saved.", "scored": 0, "scorable": 2,
                             "count_text": "You have scored 0 of 2 requests."}
    for criterion in ("feasibility", "urgency"):
        answer = cell(client, world, a, criterion, "10")
    assert answer.json()["count_text"] == "You have scored 1 of 2 requests."
    assert len(answer.content) < 300 and b"ranking" not in answer.content
    assert sorted(Score.objects.filter(member=world.finance).values_list("criterion", "value")) == [
        ("business_impact", 7), ("feasibility", 10), ("urgency", 10)]
    assert not Score.objects.filter(request=b).exists()


@pytest.mark.parametrize("value", ["11", "-1", "7.5", "", "seven", "１"])
def test_a_cell_out_of_range_shows_its_error_and_stores_nothing(client, world, value):
    a, _b = two_requests_in_review(world)
    score(world.finance, a, 5, 5, 5)
    client.force_login(world.finance)
    answer = cell(client, world, a, "urgency", value)
    assert answer.status_code == 400
    assert answer.json()["error"] == "A score is a whole number from 0 to 10."
    assert Score.objects.get(member=world.finance, request=a, criterion="urgency").value == 5


def test_a_member_cannot_score_their_own_teams_request_in_the_grid(client, world):
    a, b = two_requests_in_review(world)
    client.force_login(world.tech)  # a committee member in team B
    body = client.get(url(world, "review-grid")).content.decode()
    own = body[body.index(f'id="grid-row-{b.pk}"'):]
    own = own[:own.index("</tr>")]
    assert "Not scorable: You are a member of Team B: you do not score its requests." in own
    assert "<input" not in own
    assert f'name="cell-{a.pk}-urgency"' in body
    answer = cell(client, world, b, "urgency", "9")
    assert answer.status_code == 403 and "You are a member of Team B" in answer.json()["error"]
    assert client.get(url(world, "review-grid")).content.decode().count("You have scored 0 of 1 request.") == 1
    assert not Score.objects.filter(member=world.tech).exists()


def test_a_member_recused_by_a_conflict_of_interest_cannot_score_it_in_the_grid(client, world):
    from committee.services.discussion import conflict_declare, conflict_withdraw

    a, _b = two_requests_in_review(world)
    conflict_declare(actor=world.finance, gpu_request=a, reason="My partner leads Team A.")
    client.force_login(world.finance)
    body = client.get(url(world, "review-grid")).content.decode()
    row = body[body.index(f'id="grid-row-{a.pk}"'):]
    row = row[:row.index("</tr>")]
    assert "you are recused and do not score it" in row and "<input" not in row
    assert "You have scored 0 of 1 request." in body  # only team B's request is the member's to score
    answer = cell(client, world, a, "urgency", "9")
    assert answer.status_code == 403
    assert not Score.objects.filter(member=world.finance).exists()
    conflict_withdraw(actor=world.finance, gpu_request=a)
    assert "You have scored 0 of 2 requests." in client.get(url(world, "review-grid")).content.decode()


def test_the_grid_is_for_the_committee_only(client, world):
    a, _b = two_requests_in_review(world)
    client.force_login(world.lead_a)
    assert client.get(url(world, "review-grid")).status_code == 403
    assert cell(client, world, a, "urgency", "9").status_code == 403
    assert client.post(url(world, "review-grid"), {f"cell-{a.pk}-urgency": "9"}).status_code == 403
    assert client.get(url(world, "review-queue", a.pk)).status_code == 403
    assert not Score.objects.exists()


def test_a_cell_of_a_week_not_in_review_is_refused(client, world):
    from tests.factories import file_request

    a = file_request(world)  # the week is still open for intake
    client.force_login(world.finance)
    answer = cell(client, world, a, "urgency", "4")
    assert answer.status_code == 409
    assert answer.json()["error"] == "Cannot score: week 2026-W50 is open for intake, not in review."
    assert not Score.objects.exists()


def test_without_javascript_the_page_saves_its_cells_together(client, world):
    a, b = two_requests_in_review(world)
    client.force_login(world.finance)
    response = client.post(url(world, "review-grid"), {
        f"cell-{a.pk}-business_impact": "8", f"cell-{a.pk}-feasibility": "6", f"cell-{a.pk}-urgency": "",
        f"cell-{b.pk}-business_impact": "3", "page": "1"}, follow=True)
    assert response.status_code == 200
    body = response.content.decode()
    assert "3 scores saved." in body
    assert sorted(Score.objects.filter(member=world.finance).values_list("request_id", "criterion", "value")) == [
        (a.pk, "business_impact", 8), (a.pk, "feasibility", 6), (b.pk, "business_impact", 3)]
    assert f'name="cell-{a.pk}-business_impact" id="cell-{a.pk}-business_impact" value="8"' in body


def test_without_javascript_several_errors_are_shown_together_and_nothing_is_saved(client, world):
    a, b = two_requests_in_review(world)
    client.force_login(world.finance)
    response = client.post(url(world, "review-grid"), {
        f"cell-{a.pk}-business_impact": "8", f"cell-{a.pk}-feasibility": "12", f"cell-{b.pk}-urgency": "x"})
    assert response.status_code == 400
    body = response.content.decode()
    assert "2 scores were not right: nothing was saved." in body
    assert body.count("A score is a whole number from 0 to 10.") == 2
    assert 'value="12"' in body and 'value="x"' in body and 'value="8"' in body  # what was typed is kept
    assert not Score.objects.exists()


def test_without_javascript_an_own_team_cell_refuses_the_whole_page(client, world):
    a, b = two_requests_in_review(world)
    client.force_login(world.tech)
    response = client.post(url(world, "review-grid"), {f"cell-{a.pk}-urgency": "4", f"cell-{b.pk}-urgency": "9"})
    assert response.status_code == 400
    assert "You are a member of Team B" in response.content.decode()
    assert not Score.objects.exists()


def test_the_grid_narrows_to_a_department_and_keeps_it_through_pages_links_and_a_save(client, world):
    from allocations.models import Department, Team

    a, b = two_requests_in_review(world)
    research = Department.objects.create(name="Research", slug="research")
    Team.objects.filter(pk=world.team_b.pk).update(department=research)
    client.force_login(world.finance)
    body = client.get(url(world, "review-grid"), {"department": "research"}).content.decode()
    assert f'name="cell-{b.pk}-urgency"' in body and f'name="cell-{a.pk}-urgency"' not in body
    assert "You have scored 0 of 2 requests." in body  # the count stays the member's whole queue
    assert "?mine=unscored&amp;department=research" in body
    assert '<input type="hidden" name="department" value="research">' in body  # the form without JavaScript
    # Its save keeps the department; scoring the other team's request is still the grid's (the filter narrows the
    # page, not what may be scored).
    saved = client.post(url(world, "review-grid"), {f"cell-{b.pk}-urgency": "7", "page": "1", "department": "research"})
    assert saved.status_code == 302
    assert saved["Location"] == url(world, "review-grid") + "?page=1&department=research"
    assert Score.objects.get(member=world.finance).value == 7
    # A team outside the department is told, and narrows nothing; a department with no request says so.
    body = client.get(url(world, "review-grid"), {"department": "research", "team": "team-a"}).content.decode()
    assert "This team is not in the chosen department." in body
    assert f'name="cell-{a.pk}-urgency"' in body and f'name="cell-{b.pk}-urgency"' in body
    Department.objects.create(name="Legal", slug="legal")
    body = client.get(url(world, "review-grid"), {"department": "legal"}).content.decode()
    assert "No request of the chosen department or team." in body and 'class="grid-cell"' not in body
    # Bad input changes nothing: an unknown department is an error on the form, every request still shown.
    body = client.get(url(world, "review-grid"), {"department": "nowhere"}).content.decode()
    assert f'name="cell-{a.pk}-urgency"' in body and f'name="cell-{b.pk}-urgency"' in body
    assert "Select a valid choice." in body


def _grid_queries(client, world, django_assert_max_num_queries, count):
    with django_assert_max_num_queries(count) as captured:
        response = client.get(url(world, "review-grid"))
    assert response.status_code == 200
    return len(captured), response


def test_the_grid_and_a_save_run_the_same_queries_for_12_and_60_requests(client, world, django_assert_max_num_queries):
    teams = bulk_teams(30)
    org_with_conflicts(world, teams)  # the conflicts found from the organisation (docs/conflicts.md): +3 queries
    close(world)
    rows = bulk_requests(world, teams[:6], scored_by=(world.chair, world.reviewer))
    client.force_login(world.finance)
    client.get(url(world, "review-grid"))  # warm the session
    twelve, response = _grid_queries(client, world, django_assert_max_num_queries, 15)
    assert response.content.decode().count('class="grid-cell"') == 36
    # The save checks the seat, the team, a conflict of interest (declared, and found: the member's teams, the
    # reporting lines, the leads), the stale mark, then writes, moves the week's ranking version
    # (committee/services/ranking.py) and counts.
    with django_assert_max_num_queries(26) as save_twelve:
        assert cell(client, world, rows[0], "urgency", "3").status_code == 200
    bulk_requests(world, teams[6:], scored_by=(world.chair, world.reviewer))
    sixty, response = _grid_queries(client, world, django_assert_max_num_queries, 15)
    assert response.content.decode().count('class="grid-cell"') == 3 * 50  # one page of 50
    assert "Page 1 of 2" in response.content.decode()
    with django_assert_max_num_queries(26) as save_sixty:
        assert cell(client, world, rows[1], "urgency", "3").status_code == 200
    assert sixty == twelve
    assert len(save_sixty) == len(save_twelve)


def test_html_is_compressed_when_the_client_accepts_gzip(client, world):
    two_requests_in_review(world)
    client.force_login(world.finance)
    response = client.get(url(world, "review-grid"), HTTP_ACCEPT_ENCODING="gzip")
    assert response["Content-Encoding"] == "gzip" and "Accept-Encoding" in response["Vary"]
    assert b"Scores grid: week" in gzip.decompress(response.content)
    plain = client.get(url(world, "review-grid"))
    assert not plain.has_header("Content-Encoding") and b"Scores grid: week" in plain.content


@pytest.mark.parametrize("raw", ["²", "１", "12a", "", "9" * 13])
def test_a_cell_of_a_request_that_is_no_whole_number_is_not_found_and_stores_nothing(client, world, raw):
    """A "²" passes str.isdigit() but not int(): it is a request that is not there (404), never a server error."""
    two_requests_in_review(world)
    client.force_login(world.finance)
    answer = client.post(url(world, "review-grid-cell"), {"request": raw, "criterion": "urgency", "value": "7"})
    assert answer.status_code == 404
    assert not Score.objects.exists()
    assert client.get(url(world, "review-grid") + "?page=²").status_code == 200  # page 1
