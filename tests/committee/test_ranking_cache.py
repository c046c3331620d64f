"""The week's ranking is computed once per change and read from the cache (committee/selectors/ranking.py): every
change of a score, a recusal, a decision or the rubric in force is seen by the next page at once."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.pagination import PageNumberPagination

from committee import scoring, services
from committee.models import ReviewCycle
from governed.services import policy_change_record
from tests.committee.review_api import API, as_user
from tests.committee.reviewing import bulk_requests, bulk_teams, close, score


def _ranking(api: Any, world: Any) -> list[tuple[int, int | None, str | None]]:
    body = api.get(f"{API}/cycles/{world.cycle.week}/ranking/").json()
    return [(row["request"], row["rank"], row["total"]) for row in body["results"]]


def test_a_score_reranks_the_next_page_at_once(api, world, scored):
    a, b = scored
    as_user(api, world.tech)
    assert _ranking(api, world) == [(a.pk, 1, "66.00"), (b.pk, 2, "55.00")]
    score(world.chair, b, 10, 10, 10)
    assert _ranking(api, world) == [(b.pk, 1, "77.50"), (a.pk, 2, "66.00")]
    assert ReviewCycle.objects.get(pk=world.cycle.pk).ranking_version > 0


def test_a_recusal_withdraws_the_members_scores_at_once_and_its_withdrawal_counts_them_again(api, world, scored):
    a, b = scored
    as_user(api, world.tech)
    assert _ranking(api, world)[0] == (a.pk, 1, "66.00")
    services.conflict_declare(actor=world.chair, gpu_request=a, reason="I advise this team.")
    assert _ranking(api, world) == [(b.pk, 1, "55.00"), (a.pk, None, None)]  # one score left: below quorum
    services.conflict_withdraw(actor=world.chair, gpu_request=a)
    assert _ranking(api, world)[0] == (a.pk, 1, "66.00")


def test_a_decision_shows_on_the_ranking_at_once(api, world, scored):
    a, _b = scored
    as_user(api, world.tech)
    assert api.get(f"{API}/cycles/{world.cycle.week}/ranking/").json()["results"][0]["decision"] is None
    services.request_decide(actor=world.chair, gpu_request=a, outcome="reject", rationale="Not this week.")
    row = api.get(f"{API}/cycles/{world.cycle.week}/ranking/").json()["results"][0]
    assert (row["request"], row["decision"]["outcome"], row["decision"]["rationale"]) == (
        a.pk, "reject", "Not this week.")
    services.request_decide(actor=world.chair, gpu_request=a, outcome="grant", rationale="Worth it after all.")
    row = api.get(f"{API}/cycles/{world.cycle.week}/ranking/").json()["results"][0]
    assert (row["decision"]["outcome"], row["decision"]["granted_gpu_count"]) == ("grant", a.gpu_count)


def test_a_change_of_the_rubric_in_force_reranks_at_once(api, world, scored):
    a, b = scored
    as_user(api, world.tech)
    assert _ranking(api, world) == [(a.pk, 1, "66.00"), (b.pk, 2, "55.00")]
    policy_change_record(
        actor=world.chair, effective_week=world.cycle.week, reason="Urgency first.", source="admin",
        changes={"rubric.business_impact": 10, "rubric.feasibility": 10, "rubric.urgency": 70, "rubric.fairness": 10},
    )
    # a: 10% × 7 + 10% × 6 + 70% × 5 + 10% × 10 = 58; b: 10% × 5 + 10% × 5 + 70% × 5 + 10% × 10 = 55
    assert _ranking(api, world) == [(a.pk, 1, "58.00"), (b.pk, 2, "55.00")]
    policy_change_record(actor=world.chair, effective_week=world.cycle.week, reason="Three scores now.",
                         source="admin", changes={"review.quorum": 3}, exempt_reason="A test of the quorum.")
    assert _ranking(api, world) == [(a.pk, None, None), (b.pk, None, None)]  # two scores each: below quorum


def test_ten_pages_of_the_ranking_and_of_the_what_if_rank_the_week_once(api, world, monkeypatch):
    close(world)
    rows = bulk_requests(world, bulk_teams(10), scored_by=(world.chair, world.reviewer))  # 20 requests
    monkeypatch.setattr(PageNumberPagination, "page_size", 2)  # 10 pages
    rankings: list[int] = []
    real = scoring.rank_requests

    def counted(**kwargs: Any) -> list[scoring.RequestResult]:
        rankings.append(len(list(kwargs["sheets"])))
        return real(**kwargs)

    monkeypatch.setattr(scoring, "rank_requests", counted)
    week = world.cycle.week
    seen = [row["request"] for page in range(1, 11)
            for row in as_user(api, world.tech).get(f"{API}/cycles/{week}/ranking/", {"page": page}).json()["results"]]
    assert sorted(seen) == sorted(r.pk for r in rows)  # every request once, across the ten pages
    assert rankings == [20]  # the week was ranked once, for the first page
    weights = {"business_impact": 70, "feasibility": 10, "urgency": 10, "fairness": 10}
    as_user(api, world.chair)
    proposed = [row["request"] for page in range(1, 11)
                for row in api.get(f"{API}/cycles/{week}/what-if/", {**weights, "page": page}).json()["proposed"]]
    assert sorted(proposed) == sorted(r.pk for r in rows)
    assert rankings == [20, 20]  # the same sheets ranked once more, under the proposed weights
    score(world.reviewer, rows[0], 10, 10, 10)
    as_user(api, world.tech).get(f"{API}/cycles/{week}/ranking/", {"page": 5})
    assert rankings == [20, 20, 20]  # the score changed the week: ranked again, once


@pytest.mark.parametrize("cache_url", ["redis://127.0.0.1:9/0"])
def test_without_a_cache_the_ranking_is_computed_as_before(api, world, scored, settings, cache_url, caplog):
    """A cache that does not answer (nothing listens on port 9) costs the ranking its cache, not its answer."""
    a, b = scored
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": cache_url,
                                   "OPTIONS": {"socket_connect_timeout": 0.2, "socket_timeout": 0.2}}}
    as_user(api, world.tech)
    assert _ranking(api, world) == [(a.pk, 1, "66.00"), (b.pk, 2, "55.00")]
    assert "did not answer" in caplog.text
