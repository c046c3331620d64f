"""An inline save on the review page updates what changed: its queries do not grow with the week."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from committee.models import Decision, Score
from tests.committee.reviewing import bulk_requests, bulk_teams, close

HTMX = {"HTTP_HX_REQUEST": "true"}


def _url(world, name, *args):
    return reverse(f"committee:{name}", args=[world.cycle.week, *args])


def _undecided(rows):
    return [r for r in rows if not Decision.objects.filter(request=r).exists()]


def test_a_score_save_and_a_decision_save_run_the_same_queries_for_12_and_60_requests(client, world):
    teams = bulk_teams(30)
    close(world)
    few = bulk_requests(world, teams[:6], scored_by=(world.chair, world.reviewer))  # 12 requests
    member, chair = client, client.__class__()
    member.force_login(world.finance)
    chair.force_login(world.chair)
    first, second = _undecided(few)[:2]

    def save_score(gpu_request, value):
        return member.post(_url(world, "review-score", gpu_request.pk), {"criterion": "urgency", "value": value},
                           **HTMX)

    def save_decision(gpu_request):
        return chair.post(_url(world, "review-decision", gpu_request.pk),
                          {"outcome": "reject", "rationale": "Not now."}, **HTMX)

    save_score(first, "3")
    save_decision(first)  # warm the sessions
    with CaptureQueriesContext(connection) as score_12:
        save_score(second, "4")
    with CaptureQueriesContext(connection) as decision_12:
        save_decision(second)
    many = bulk_requests(world, teams[6:], scored_by=(world.chair, world.reviewer))  # 60 requests
    later = _undecided(many)[0]
    with CaptureQueriesContext(connection) as score_60:
        scored = save_score(later, "5")
    with CaptureQueriesContext(connection) as decision_60:
        decided = save_decision(later)
    assert scored.status_code == decided.status_code == 200
    assert Score.objects.get(request=later, member=world.finance, criterion="urgency").value == 5
    assert Decision.objects.get(request=later).outcome == "reject"
    assert len(score_60) == len(score_12), "\n".join(q["sql"] for q in score_60.captured_queries)
    assert len(decision_60) == len(decision_12), "\n".join(q["sql"] for q in decision_60.captured_queries)
    # Neither answer carries the ranking: only the saved card's parts (and the member's count).
    for response in (scored, decided):
        assert 'id="ranking"' not in response.content.decode()
        assert response["HX-Trigger"] == "ranking-changed"
