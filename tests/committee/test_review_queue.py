"""A member's queue on the review page: their count, "not scored by me", and next / previous through the evidence."""

from __future__ import annotations

import re

from django.urls import reverse

from committee import services
from tests.committee.reviewing import bulk_requests, bulk_teams, close, score, two_requests_in_review
from tests.committee.test_conflicts_found import org_with_conflicts
from tests.factories import file_request


def url(world, name, *args):
    return reverse(f"committee:{name}", args=[world.cycle.week, *args])


def three_in_review(world):
    a = file_request(world, title="Ranker retrain")  # team A
    b = file_request(world, team=world.team_b, pool=world.h100, title="Vision model", gpu_count=8, min_gpu_count=4)
    c = file_request(world, pool=world.h100, title="Speech model", gpu_count=8, min_gpu_count=4)  # team A
    close(world)
    return a, b, c


def test_each_member_sees_their_own_count_and_what_they_have_not_scored(client, world):
    a, b, c = three_in_review(world)
    score(world.finance, a, 5, 5, 5)
    score(world.tech, a, 6, 6, 6)
    score(world.tech, c, 6, 6, 6)
    client.force_login(world.finance)
    body = client.get(url(world, "review-cycle")).content.decode()
    assert "You have scored 1 of 3 requests." in body and "Not scored by me (2)" in body
    unscored = client.get(url(world, "review-cycle"), {"mine": "unscored"}).content.decode()
    assert re.findall(r'<article id="request-(\d+)" class="review-request">', unscored) == [str(b.pk), str(c.pk)]
    client.force_login(world.tech)  # team B: b is not theirs to score, and does not count
    body = client.get(url(world, "review-cycle")).content.decode()
    assert "You have scored 2 of 2 requests." in body and "Not scored by me (0)" in body
    unscored = client.get(url(world, "review-cycle"), {"mine": "unscored"}).content.decode()
    assert 'class="review-request"' not in unscored
    assert "Nothing left to score: you have scored every request you may score." in unscored


def test_a_score_on_one_criterion_leaves_the_request_in_the_queue(client, world):
    a, b = two_requests_in_review(world)
    client.force_login(world.finance)
    client.post(url(world, "review-grid-cell"), {"request": a.pk, "criterion": "urgency", "value": "3"})
    grid = client.get(url(world, "review-grid"), {"mine": "unscored"}).content.decode()
    assert "You have scored 0 of 2 requests." in grid
    assert f'id="grid-row-{a.pk}"' in grid and f'id="grid-row-{b.pk}"' in grid


def test_next_and_previous_walk_the_evidence_in_queue_order(client, world):
    a, b, c = three_in_review(world)
    score(world.finance, a, 5, 5, 5)  # scored: a goes to the end of finance's queue
    client.force_login(world.finance)
    body = client.get(url(world, "review-cycle")).content.decode()
    assert f'href="{url(world, "review-queue", b.pk)}" id="queue-start"' in body
    first = client.get(url(world, "review-queue", b.pk)).content.decode()
    assert "Vision model" in first and 'id="queue-previous"' not in first
    assert f'href="{url(world, "review-queue", c.pk)}" rel="next"' in first
    assert "used 600 of 800 GPU-hours" in first  # the evidence, on the page
    assert f'name="cell-{b.pk}-urgency"' in first  # and the member's inputs
    last = client.get(url(world, "review-queue", a.pk)).content.decode()
    assert f'href="{url(world, "review-queue", c.pk)}" rel="prev"' in last and 'id="queue-next"' not in last
    assert f'name="cell-{a.pk}-urgency" id="cell-{a.pk}-urgency" value="5"' in last


def test_the_queue_and_the_evidence_are_for_the_committee_only(client, world):
    a, _b = two_requests_in_review(world)
    client.force_login(world.member_a)
    assert client.get(url(world, "review-queue", a.pk)).status_code == 403
    assert client.get(url(world, "review-evidence", a.pk)).status_code == 403
    client.force_login(world.finance)
    assert client.get(url(world, "review-queue", 999999)).status_code == 404
    assert client.get(url(world, "review-evidence", 999999)).status_code == 404


def test_the_first_screen_runs_the_same_queries_for_12_and_60_requests(client, world, django_assert_max_num_queries):
    teams = bulk_teams(30)
    org_with_conflicts(world, teams)  # the conflicts found from the organisation, on every request (docs/conflicts.md)
    close(world)
    bulk_requests(world, teams[:6], scored_by=(world.chair, world.reviewer))
    # (62: with the record's progress, the runs carried in, the departments' budgets, the teams' track records, the
    # fast lane's grants, the conflicts found and the cards' department and team filter)
    client.force_login(world.finance)
    client.get(url(world, "review-cycle"))  # warm the session
    services.cycle_ranking_changed(cycle=world.cycle)  # both reads rank the week (bulk_requests moves it too)
    with django_assert_max_num_queries(62) as twelve:
        body = client.get(url(world, "review-cycle")).content.decode()
    assert "You have scored 0 of 12 requests." in body
    bulk_requests(world, teams[6:], scored_by=(world.chair, world.reviewer))
    with django_assert_max_num_queries(62) as sixty:
        body = client.get(url(world, "review-cycle")).content.decode()
    assert "You have scored 0 of 60 requests." in body
    assert body.count('class="review-request"') == 10
    assert len(sixty) == len(twelve)
