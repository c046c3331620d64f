"""The decisions API: the committee decides; the team reads it once finalized."""

from __future__ import annotations

from committee.models import Decision
from tests.committee.review_api import API, as_user
from tests.committee.reviewing import decide


def test_committee_records_a_decision_and_the_team_reads_it_once_finalized(api, world, scored):
    a, b = scored
    as_user(api, world.chair)  # the chair records decisions (DOCKET_DECISIONS_RECORDED_BY's default)
    response = api.put(f"{API}/requests/{a.pk}/decision/",
                       {"outcome": "partial", "granted_gpu_count": 10, "rationale": "Most of it."})
    assert response.status_code == 200 and response.json()["granted_gpu_count"] == 10
    decide(world, b, "reject")
    as_user(api, world.lead_a)
    assert api.get(f"{API}/requests/{a.pk}/decision/").status_code == 404
    assert api.get(f"{API}/requests/{a.pk}/").json()["decision"] is None
    as_user(api, world.chair).post(f"{API}/cycles/{world.cycle.week}/finalize/")
    as_user(api, world.lead_a)
    decision = api.get(f"{API}/requests/{a.pk}/decision/").json()
    assert decision["outcome"] == "partial" and decision["priority_rank"] == 1 and decision["weighted_total"] == "66.00"
    assert api.get(f"{API}/requests/{a.pk}/").json()["decision"]["rationale"] == "Most of it."


def test_decision_rules_over_the_api(api, world, scored, settings):
    settings.DOCKET_DECISIONS_RECORDED_BY = "committee"  # the rules of a decision, whoever may record it
    a, b = scored
    as_user(api, world.tech)
    assert api.put(f"{API}/requests/{b.pk}/decision/", {"outcome": "grant", "rationale": "x"}).status_code == 403
    missing = api.put(f"{API}/requests/{a.pk}/decision/", {"outcome": "grant", "rationale": ""})
    assert missing.status_code == 400 and "rationale" in missing.json()
    partial = api.put(f"{API}/requests/{a.pk}/decision/", {"outcome": "partial", "rationale": "Some."})
    assert partial.status_code == 400 and "granted_gpu_count" in partial.json()
    as_user(api, world.lead_a)
    assert api.put(f"{API}/requests/{a.pk}/decision/", {"outcome": "grant", "rationale": "Ours"}).status_code == 403
    assert not Decision.objects.exists()
