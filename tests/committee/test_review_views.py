"""The weekly review pages as the committee sees them: form posts, htmx fragments, and the pages they lead to."""

from __future__ import annotations

import json
import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from allocations.models import UsageRecord
from committee import selectors, services
from committee.models import (
    CycleStatus,
    Decision,
    FairShareSnapshot,
    GpuRequest,
    ReviewCycle,
    Score,
)
from committee.selectors import PoolLoad
from governed.models import PolicyChange, PolicyValue
from tests.committee.reviewing import bulk_requests, bulk_teams, close, decide, score, two_requests_in_review
from tests.factories import file_request

HTMX = {"HTTP_HX_REQUEST": "true"}


def url(world, name, *args):
    return reverse(f"committee:{name}", args=[world.cycle.week, *args])


@pytest.fixture
def scored(world):
    a, b = two_requests_in_review(world)
    for member in (world.chair, world.reviewer):
        score(member, a, 7, 6, 5)
        score(member, b, 5, 5, 5)
    return a, b


# --- who may see and do what ----------------------------------------------------------------


def test_anonymous_is_sent_to_sign_in(client, world):
    for target in (reverse("committee:review"), url(world, "review-cycle")):
        response = client.get(target)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize("who", ["lead_a", "member_a", "member_b", "outsider"])
def test_people_without_a_seat_are_refused_everywhere(client, world, scored, who):
    a, _b = scored
    client.force_login(getattr(world, who))
    assert client.get(reverse("committee:review")).status_code == 403
    assert client.get(url(world, "review-cycle")).status_code == 403
    assert client.get(url(world, "review-what-if")).status_code == 403
    assert client.get(url(world, "review-decision", a.pk)).status_code == 403
    posts = [
        (url(world, "review-score", a.pk), {"criterion": "business_impact", "value": "10"}),
        (url(world, "review-decision", a.pk), {"outcome": "grant", "rationale": "Ours."}),
        (url(world, "cycle-finalize"), {}),
        (url(world, "cycle-close-intake"), {}),
    ]
    for target, data in posts:
        assert client.post(target, data, **HTMX).status_code == 403
    assert Score.objects.filter(member=getattr(world, who)).count() == 0
    assert not Decision.objects.exists()
    assert ReviewCycle.objects.get(pk=world.cycle.pk).status == CycleStatus.IN_REVIEW


@pytest.mark.parametrize("who", ["reviewer", "tech", "finance"])
def test_committee_members_who_are_not_chair_cannot_close_finalize_or_what_if(client, world, who):
    file_request(world)
    client.force_login(getattr(world, who))
    assert client.get(url(world, "review-cycle")).status_code == 200
    assert client.post(url(world, "cycle-close-intake")).status_code == 403
    assert client.get(url(world, "review-what-if")).status_code == 403
    close(world)
    assert client.post(url(world, "cycle-finalize")).status_code == 403
    assert ReviewCycle.objects.get(pk=world.cycle.pk).status == CycleStatus.IN_REVIEW


def test_a_request_of_another_cycle_is_not_found(client, world, scored):
    a, _b = scored
    other = services.cycle_create(week="2030-W01")
    client.force_login(world.reviewer)
    response = client.post(reverse("committee:review-score", args=[other.week, a.pk]),
                           {"criterion": "urgency", "value": "5"})
    assert response.status_code == 404


# --- the page --------------------------------------------------------------------------------


def test_review_home_opens_the_cycle_in_review(client, world, scored):
    client.force_login(world.reviewer)
    response = client.get(reverse("committee:review"))
    assert response.status_code == 302 and response["Location"] == url(world, "review-cycle")


def test_ranking_shows_the_breakdown_the_arithmetic_and_who_scored_what(client, world, scored):
    a, _b = scored
    client.force_login(world.finance)
    body = client.get(url(world, "review-cycle")).content.decode()
    ranking = body[body.index('id="ranking"'):body.index('id="requests"')]
    # a: 40% × 7 + 30% × 6 + 20% × 5 + 10% × 10 = 28 + 18 + 10 + 10 = 66; b: 20 + 15 + 10 + 10 = 55
    assert ranking.index("Ranker retrain") < ranking.index("Vision model")
    assert "40% × 7.00 + 30% × 6.00 + 20% × 5.00 + 10% × 10.00 = 66.00" in ranking
    assert "= 55.00" in ranking
    scored_by = body[body.index(f'id="scored-by-{a.pk}"'):]
    assert re.search(r"<td>Chair</td><td>7</td><td>6</td><td>5</td>", scored_by)
    assert re.search(r"<td>Finance</td><td>—</td><td>—</td><td>—</td>", scored_by)


def test_below_quorum_shows_as_incomplete(client, world):
    a, _b = two_requests_in_review(world)
    score(world.chair, a, 8, 6, 5)
    client.force_login(world.reviewer)
    body = client.get(url(world, "review-cycle")).content.decode()
    assert body.count('class="incomplete"') == 2 and "needs 2 scores on each criterion" in body


def test_evidence_is_a_click_away(client, world):
    a = file_request(
        world, baseline_gpu_hours=1200,
        alternatives=[{"description": "Distilled student", "gpu_hours": 300, "feasible": True}],
    )
    close(world)
    client.force_login(world.reviewer)
    body = client.get(url(world, "review-cycle")).content.decode()
    card = body[body.index(f'id="request-{a.pk}"'):]
    details = card[card.index('<details class="evidence"'):card.index("</details>")]
    # The evidence loads when the member opens it (htmx), so 1,000 requests do not weigh on the page.
    assert f'hx-get="{url(world, "review-evidence", a.pk)}" hx-trigger="toggle once"' in details
    assert reverse("committee:request-detail", args=[a.pk]) in details  # and without JavaScript, a link
    evidence = client.get(url(world, "review-evidence", a.pk)).content.decode()
    for text in ("Distilled student", "used 600 of 800 GPU-hours", "50,000.00 USD/week", "1,200 GPU-hours"):
        assert text in evidence
    assert reverse("committee:request-detail", args=[a.pk]) in evidence


def test_conflict_of_interest_is_not_offered(client, world, scored):
    a, b = scored
    client.force_login(world.tech)  # a member of team B
    body = client.get(url(world, "review-cycle")).content.decode()
    assert f'id="score-{a.pk}-business_impact"' in body
    assert f'id="score-{b.pk}-business_impact"' not in body
    assert f'id="decision-{b.pk}"' not in body
    assert "You are a member of Team B: you do not score or decide on this request." in body


def test_conflict_of_interest_is_refused_by_the_page(client, world, scored):
    _a, b = scored
    client.force_login(world.tech)
    response = client.post(url(world, "review-score", b.pk), {"criterion": "business_impact", "value": "10"}, **HTMX)
    assert response.status_code == 403
    assert client.post(url(world, "review-decision", b.pk), {"outcome": "grant", "rationale": "x"}).status_code == 403
    assert not Score.objects.filter(member=world.tech).exists()


def test_suggestions_are_shown_beside_the_inputs_and_never_applied(client, world):
    a = file_request(
        world, deadline=world.cycle.starts_at + timedelta(days=2),
        alternatives=[{"description": "LoRA", "gpu_hours": 400, "feasible": True}],  # 768 → 400 saves 47.92%
    )
    close(world)
    client.force_login(world.reviewer)
    body = client.get(url(world, "review-cycle")).content.decode()
    urgency = body[body.index(f'id="score-{a.pk}-urgency"'):]
    urgency = urgency[:urgency.index("</form>")]
    assert "Suggested: 10. Due within the allocation week" in urgency
    assert 'value=""' in urgency  # the input stays empty until the member types a score
    feasibility = body[body.index(f'id="score-{a.pk}-feasibility"'):]
    feasibility = feasibility[:feasibility.index("</form>")]
    assert "Suggested: 2." in feasibility and "368 GPU-hours (47.92%)" in feasibility
    assert not Score.objects.exists()


def test_fairness_is_computed_and_explained(client, world):
    start = timezone.now() - timedelta(days=3)
    UsageRecord.objects.create(pool=world.a100, team=world.team_a, period_start=start,
                               period_end=start + timedelta(hours=1), gpu_hours_used=500, mean_utilization_pct=90,
                               idempotency_key="a")
    a = file_request(world)
    close(world)
    client.force_login(world.reviewer)
    body = client.get(url(world, "review-cycle")).content.decode()
    card = body[body.index(f'id="request-{a.pk}"'):]
    # Team A used everything (U = 1) against S = 2/3: F = 2^(−1.5) = 0.354 → 3.54
    assert "Fairness (computed): 3.54" in card and "F = 2^(−1.000 / 0.667) = 0.354" in card
    assert f'id="score-{a.pk}-fairness"' not in body  # nobody scores fairness by hand


def test_demand_against_capacity_marks_oversubscription_in_red(client, world):
    start = world.cycle.starts_at
    file_request(world, pool=world.h100, gpu_count=32, min_gpu_count=16, duration_hours=160,
                 earliest_start=start, latest_end=start + timedelta(hours=168))
    close(world)
    client.force_login(world.reviewer)
    body = client.get(url(world, "review-cycle")).content.decode()
    capacity = body[body.index('id="capacity"'):body.index('id="matrix-section"')]
    # h100: 32 GPUs keep 3 standby and 6 burst GPUs: 23 × 168 = 3,864 standard + 6 × 168 = 1,008 burst = 4,872,
    # what the engine can place. 32 × 160 = 5,120.
    assert '<tr class="oversubscribed">' in capacity
    assert "5,120" in capacity and "4,872" in capacity and "106% — over-subscribed" in capacity
    assert capacity.count("oversubscribed") == 1  # a100 is fine


def test_priority_matrix_is_drawn_with_the_apps_own_plotly(client, world, scored):
    client.force_login(world.reviewer)
    body = client.get(url(world, "review-cycle")).content.decode()
    assert '<script src="/static/plotly/plotly.min.js"' in body
    assert "cdn" not in body.lower()
    data = re.search(r'<script id="matrix-data" type="application/json">(.*?)</script>', body, re.S)
    assert data is not None, "the page carries the matrix's data"
    figure = json.loads(data[1])
    # The first pool's panel; a quadrant's name is on two lines in the chart's legend.
    names = [trace["name"].replace("<br>", " ") for trace in figure["data"] if trace["xaxis"] == "x"]
    assert names == [
        "High impact, low intensity: do first",
        "High impact, high intensity: cost-benefit review, consider the alternative",
        "Low impact, low intensity: schedule when free",
        "Low impact, high intensity: defer or redesign",
    ]
    # Each pool splits at its own median: a (a100, first panel), impact 7, 768 GPU-hours, is a100's only request
    # (its median) → cost-benefit; b (h100, second), impact 5, 384, h100's only one → cost-benefit too.
    assert figure["data"][1]["x"] == [768] and figure["data"][5]["x"] == [384]
    assert client.get("/static/plotly/plotly.min.js").status_code == 200


# --- inline scoring --------------------------------------------------------------------------


def test_inline_score_saves_and_reranks(client, world, scored):
    _a, b = scored
    client.force_login(world.finance)
    for criterion in ("business_impact", "feasibility", "urgency"):
        response = client.post(url(world, "review-score", b.pk), {"criterion": criterion, "value": "10", "note": "n"},
                               **HTMX)
        assert response.status_code == 200
    body = response.content.decode()
    assert f'id="score-{b.pk}-urgency"' in body and "Saved." in body
    # The save answers with what changed (the input, who scored what, the member's count), not the ranking:
    assert f'id="scored-by-{b.pk}" hx-swap-oob="true"' in body
    assert 'aria-labelledby="my-queue-title" hx-swap-oob="true"' in body
    assert 'id="ranking"' not in body and 'id="placement"' not in body
    # ... and tells the page the ranking changed: the page asks for it on its own.
    assert response["HX-Trigger"] == "ranking-changed"
    assert 'hx-trigger="ranking-changed from:body"' in client.get(url(world, "review-cycle")).content.decode()
    refreshed = client.get(url(world, "review-ranking"), **HTMX)
    body = refreshed.content.decode()
    assert '<section id="ranking" hx-swap-oob="true">' in body and 'id="matrix-data-holder"' in body
    ranking = body[body.index('id="ranking"'):]
    # b: impact (5+5+10)/3 = 6.67, feasibility 6.67, urgency 6.67: 26.67 + 20 + 13.33 + 10 = 70.00 > a's 66
    assert ranking.index("Vision model") < ranking.index("Ranker retrain")
    assert "= 70.00" in ranking
    assert Score.objects.get(member=world.finance, request=b, criterion="urgency").note == "n"


def test_invalid_score_shows_the_error_and_saves_nothing(client, world, scored):
    a, _b = scored
    client.force_login(world.finance)
    response = client.post(url(world, "review-score", a.pk), {"criterion": "urgency", "value": "11"}, **HTMX)
    assert response.status_code == 200
    assert "A score is a whole number from 0 to 10." in response.content.decode()  # the grid's and the API's words
    assert 'value="11"' in response.content.decode()  # the member's input is kept
    assert "HX-Trigger" not in response  # nothing changed: the ranking is not asked for again
    assert not Score.objects.filter(member=world.finance).exists()


def test_score_without_htmx_redirects_back_to_the_request(client, world, scored):
    a, _b = scored
    client.force_login(world.finance)
    response = client.post(url(world, "review-score", a.pk), {"criterion": "urgency", "value": "4"}, follow=True)
    assert response.redirect_chain[-1][0] == url(world, "review-cycle") + f"#request-{a.pk}"
    assert b"Score saved." in response.content


# --- decisions -------------------------------------------------------------------------------


def test_decision_needs_a_rationale(client, world, scored):
    a, _b = scored
    client.force_login(world.chair)
    response = client.post(url(world, "review-decision", a.pk), {"outcome": "grant", "rationale": ""}, **HTMX)
    assert response.status_code == 200 and "This field is required." in response.content.decode()
    response = client.post(url(world, "review-decision", a.pk),
                           {"outcome": "partial", "granted_gpu_count": "2", "rationale": "Half."}, **HTMX)
    assert "from 8 to 15" in response.content.decode() and "Half." in response.content.decode()
    assert not Decision.objects.exists()


def test_decision_is_saved_inline_and_shown_in_the_ranking(client, world, scored):
    a, _b = scored
    client.force_login(world.chair)  # the chair records decisions (DOCKET_DECISIONS_RECORDED_BY's default)
    response = client.post(url(world, "review-decision", a.pk),
                           {"outcome": "partial", "granted_gpu_count": "12", "rationale": "Most of it."}, **HTMX)
    body = response.content.decode()
    assert "Decision saved." in body and response["HX-Trigger"] == "ranking-changed"
    assert 'id="ranking"' not in body  # the ranking comes on its own request
    ranking = client.get(url(world, "review-ranking"), **HTMX).content.decode()
    assert '<mark class="outcome-partial">Partial grant (12)</mark>' in ranking
    decision = Decision.objects.get()
    assert (decision.outcome, decision.granted_gpu_count, decision.decided_by_name) == ("partial", 12, "Chair")


def test_decision_page_without_htmx(client, world, scored):
    a, _b = scored
    client.force_login(world.chair)
    assert client.get(url(world, "review-decision", a.pk)).status_code == 200
    bad = client.post(url(world, "review-decision", a.pk), {"outcome": "reject", "rationale": " "})
    assert bad.status_code == 400 and not Decision.objects.exists()
    good = client.post(url(world, "review-decision", a.pk), {"outcome": "reject", "rationale": "Not now."})
    assert good.status_code == 302 and good["Location"].endswith(f"#request-{a.pk}")


def test_team_sees_the_decision_only_once_the_week_is_finalized(client, world, scored):
    a, b = scored
    decide(world, a, "grant", rationale="Top of the ranking.")
    decide(world, b, "reject", rationale="Not this week.")
    client.force_login(world.lead_a)
    assert "Top of the ranking." not in client.get(reverse("committee:request-detail", args=[a.pk])).content.decode()
    services.cycle_finalize(cycle=world.cycle, actor=world.chair)
    body = client.get(reverse("committee:request-detail", args=[a.pk])).content.decode()
    assert "Decided and placed" in body and "Top of the ranking." in body and "Grant, 16 GPUs (768 GPU-hours)" in body
    assert "#1 with 66.00 of 100 on the rubric" in body and "not yet published" in body


# --- the chair's buttons ---------------------------------------------------------------------


def test_chair_closes_intake_and_finalizes_from_the_page(client, world):
    a = file_request(world)
    client.force_login(world.chair)
    assert 'id="close-intake"' in client.get(url(world, "review-cycle")).content.decode()
    response = client.post(url(world, "cycle-close-intake"), {"confirm": "1"}, follow=True)
    assert "is closed; the review is open" in response.content.decode()
    response = client.post(url(world, "cycle-close-intake"), {"confirm": "1"}, follow=True)
    assert "Cannot close intake" in response.content.decode()
    for member in (world.chair, world.reviewer):
        score(member, a, 8, 6, 5)
    response = client.post(url(world, "cycle-finalize"), {"confirm": "1"}, follow=True)
    assert "Every ranked request needs a decision first" in response.content.decode()
    decide(world, a)
    response = client.post(url(world, "cycle-finalize"), {"confirm": "1"}, follow=True)
    assert "is finalized" in response.content.decode()
    assert ReviewCycle.objects.get(pk=world.cycle.pk).status == CycleStatus.FINALIZED
    assert GpuRequest.objects.get(pk=a.pk).status == "decided"


# --- what-if ---------------------------------------------------------------------------------


def _database_state():
    models = (Score, Decision, PolicyChange, PolicyValue, ReviewCycle, GpuRequest, FairShareSnapshot)
    return {model.__name__: sorted(map(repr, model.objects.values())) for model in models}


def test_what_if_previews_other_weights_and_saves_nothing(client, world, scored):
    a, _b = scored
    decide(world, a, "grant")
    client.force_login(world.chair)
    before = _database_state()
    page = client.get(url(world, "review-what-if"))
    assert page.status_code == 200 and "Enter other weights" in page.content.decode()
    weights = {"business_impact": 10, "feasibility": 10, "urgency": 70, "fairness": 10}
    body = client.get(url(world, "review-what-if"), weights, **HTMX).content.decode()
    assert _database_state() == before
    assert body.startswith('<section id="what-if-results">')  # htmx gets only the results
    current, proposed = body.split("<h2>What if", 1)
    # a: 7 + 6 + 35 + 10 = 58.00; b: 5 + 5 + 35 + 10 = 55.00. Nobody moves.
    assert "66.00" in current and "55.00" in current
    assert "58.00" in proposed and "55.00" in proposed
    assert "moved-" not in proposed
    assert not PolicyChange.objects.filter(number__gt=1).exists()
    assert selectors.rubric_for_week(week=world.cycle.week).weights_label == "40/30/20/10"


def test_what_if_highlights_the_requests_that_move(client, world):
    a, b = two_requests_in_review(world)
    for member in (world.chair, world.reviewer):
        score(member, a, 10, 0, 0)  # impact only: 40 + 10 = 50
        score(member, b, 0, 10, 10)  # feasibility and urgency: 30 + 20 + 10 = 60
    client.force_login(world.chair)
    before = _database_state()
    weights = {"business_impact": 70, "feasibility": 10, "urgency": 10, "fairness": 10}  # a: 80, b: 30
    body = client.get(url(world, "review-what-if"), weights).content.decode()
    assert _database_state() == before
    current, proposed = body.split('<h2>What if', 1)
    assert current.index("Vision model") < current.index("Ranker retrain")
    assert proposed.index("Ranker retrain") < proposed.index("Vision model")
    assert f'<tr data-request="{a.pk}" class="moved-up">' in proposed
    assert f'<tr data-request="{b.pk}" class="moved-down">' in proposed
    assert "▲ up 1 place" in proposed and "▼ down 1 place" in proposed


def test_what_if_refuses_weights_that_do_not_add_up(client, world, scored):
    client.force_login(world.chair)
    weights = {"business_impact": 50, "feasibility": 50, "urgency": 50, "fairness": 0}
    body = client.get(url(world, "review-what-if"), weights).content.decode()
    assert "they add up to 150%" in body


# --- query count ----------------------------------------------------------------------------


def test_review_page_runs_the_same_queries_for_10_and_200_requests(client, world):
    teams = bulk_teams(100)
    close(world)
    bulk_requests(world, teams[:5], scored_by=(world.chair, world.reviewer))
    client.force_login(world.reviewer)
    client.get(url(world, "review-cycle"))  # warm the session
    services.cycle_ranking_changed(cycle=world.cycle)  # both reads rank the week (bulk_requests moves it too)
    with CaptureQueriesContext(connection) as ten:
        response = client.get(url(world, "review-cycle"))
    assert response.content.decode().count('class="review-request"') == 10
    bulk_requests(world, teams[5:], scored_by=(world.chair, world.reviewer))
    with CaptureQueriesContext(connection) as two_hundred:
        response = client.get(url(world, "review-cycle"))
    body = response.content.decode()
    assert body.count('class="review-request"') == 10  # one page of request cards
    ranking = body[body.index('id="ranking"'):]
    assert ranking[:ranking.index("</table>")].count('<tr data-request=') == 50  # one page of the ranking
    matrix_table = body[body.index('id="matrix-legend"'):]
    assert matrix_table[:matrix_table.index("</table>")].count("<tr data-request=") == 30  # the top of the matrix
    assert "…and 170 more requests on the chart" in body
    assert "Page 1 of 20" in body and "Page 1 of 4 (200 requests)" in body
    assert len(two_hundred) == len(ten), "\n".join(q["sql"] for q in two_hundred.captured_queries)


@pytest.mark.parametrize(
    ("requested", "capacity", "shown", "over"),
    [(9696, 9676, 101, True), (9676, 9676, 100, False), (3840, 4838, 80, False), (10, 0, 0, True)],
)
def test_demand_percent_never_shows_an_oversubscribed_pool_as_100(requested, capacity, shown, over):
    load = PoolLoad(pool=None, requested_gpu_hours=requested, granted_gpu_hours=0,  # type: ignore[arg-type]
                    standard_gpu_hours=capacity, burst_gpu_hours=0)
    assert (load.demand_pct, load.oversubscribed) == (shown, over)


def test_the_cards_narrow_to_a_department_with_the_same_queries_for_1_and_20_departments(client, world):
    from allocations.models import Department, Team

    a, b = two_requests_in_review(world)
    research = Department.objects.create(name="Research", slug="research")
    Team.objects.filter(pk=world.team_b.pk).update(department=research)
    client.force_login(world.reviewer)
    client.get(url(world, "review-cycle"))  # warm the session
    with CaptureQueriesContext(connection) as one:
        body = client.get(url(world, "review-cycle"), {"department": "research"}).content.decode()
    cards = body[body.index('id="requests"'):]
    assert f'id="request-{b.pk}"' in cards and f'id="request-{a.pk}"' not in cards
    ranking = body[body.index('id="ranking"'):]
    assert f'data-request="{a.pk}"' in ranking[:ranking.index("</table>")]  # the ranking stays the whole week's
    assert "?mine=unscored&amp;department=research#requests" in body
    Department.objects.bulk_create(Department(name=f"Dept {i}", slug=f"dept-{i}") for i in range(19))
    Team.objects.filter(pk=world.team_a.pk).update(department=Department.objects.get(slug="dept-4"))
    with CaptureQueriesContext(connection) as twenty:
        client.get(url(world, "review-cycle"), {"department": "research"})
    assert len(twenty) == len(one)
    # A card's form comes back to the same filter; a team outside the department is told, and narrows nothing.
    back = client.post(url(world, "review-comment", b.pk) + "?department=research", {"body": "Why 8?"})
    assert back["Location"] == url(world, "review-cycle") + f"?department=research#request-{b.pk}"
    body = client.get(url(world, "review-cycle"), {"department": "research", "team": "team-a"}).content.decode()
    assert "This team is not in the chosen department." in body
    assert f'id="request-{a.pk}"' in body and f'id="request-{b.pk}"' in body
