"""The scores API: members score, never their own team's requests."""

from __future__ import annotations

import pytest

from committee.models import Score
from tests.committee.review_api import API, as_user


def test_member_records_a_score(api, world, scored):
    a, _b = scored
    response = as_user(api, world.finance).post(f"{API}/requests/{a.pk}/scores/",
                                                {"criterion": "urgency", "value": 9, "note": "launch"})
    assert response.status_code == 200 and response.json()["member"] == "finance"
    listed = api.get(f"{API}/requests/{a.pk}/scores/").json()
    assert len(listed) == 7  # chair's and reviewer's three each, and finance's one
    assert [(s["member"], s["value"], s["note"]) for s in listed if s["member"] == "finance"] == [
        ("finance", 9, "launch")
    ]


def test_member_cannot_score_own_team_over_the_api(api, world, scored):
    _a, b = scored
    response = as_user(api, world.tech).post(f"{API}/requests/{b.pk}/scores/", {"criterion": "urgency", "value": 9})
    assert response.status_code == 403 and "Team B" in response.json()["detail"]
    assert not Score.objects.filter(member=world.tech).exists()


@pytest.mark.parametrize("who", ["lead_a", "member_b", "outsider"])
def test_scores_are_for_the_committee(api, world, scored, who):
    a, _b = scored
    as_user(api, getattr(world, who))
    assert api.get(f"{API}/requests/{a.pk}/scores/").status_code == 403
    assert api.post(f"{API}/requests/{a.pk}/scores/", {"criterion": "urgency", "value": 9}).status_code == 403


@pytest.mark.parametrize("body", [{"criterion": "fairness", "value": 5}, {"criterion": "urgency", "value": 11},
                                  {"criterion": "urgency"}])
def test_invalid_scores_are_400(api, world, scored, body):
    a, _b = scored
    assert as_user(api, world.finance).post(f"{API}/requests/{a.pk}/scores/", body).status_code == 400
    assert not Score.objects.filter(member=world.finance).exists()
