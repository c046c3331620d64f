"""The replay page and its htmx fragment as the committee sees them."""

from __future__ import annotations

import pytest
from django.urls import reverse

from policy.views.replay import ERROR_HEADER
from tests.committee.contended import contended_week

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


def test_the_page_shows_the_form_with_current_values_and_no_results_until_asked(client, world):
    contended_week(world)
    client.force_login(world.reviewer)
    response = client.get(reverse("policy:replay"))
    assert response.status_code == 200
    page = response.content.decode()
    assert 'name="rubric.business_impact"' in page and 'placeholder="40"' in page
    assert 'name="pool.atlas/a100.burst_reserve_pct"' in page
    assert "Per team" not in page


def test_the_page_replays_and_shows_gains_and_losses_side_by_side(client, world):
    contended_week(world)
    client.force_login(world.chair)
    response = client.get(reverse("policy:replay"), {"pool.atlas/a100.burst_reserve_pct": "0", "weeks": "4",
                                                     "rubric.business_impact": ""})
    assert response.status_code == 200
    page = response.content.decode()
    assert f"Replayed 1 week, {world.cycle.week}." in page
    assert "(4 asked: there are no more decided weeks.)" in page
    assert "<code>pool.atlas/a100.burst_reserve_pct=0</code>" in page
    # Team B's 16-GPU grant goes from 6 GPUs placed to 16: 288 → 768 GPU-hours, +480.
    assert "288 → 768</span> <mark class=\"change better\">+480</mark>" in page
    assert 'id="replay-figure"' in page
    assert 'name="pool.atlas/a100.burst_reserve_pct" value="0"' in page  # the form keeps what was asked


def test_the_partial_answers_with_the_results_alone(client, world):
    contended_week(world)
    client.force_login(world.finance)
    response = client.get(reverse("policy:replay-partial"), {"rubric.urgency": "30", "rubric.fairness": "0"}, **HTMX)
    assert response.status_code == 200
    fragment = response.content.decode()
    assert fragment.startswith('<section id="replay-results"')
    assert "<html" not in fragment and "Per pool" in fragment


def test_bad_parameters_answer_400_listing_every_problem_and_compute_nothing(
    client, world, django_assert_max_num_queries
):
    contended_week(world)
    client.force_login(world.chair)
    bad = {"rubric.business_impact": "ninety", "rubric.urgency": "70", "pool.atlas/a100.standby_pct": "120",
           "gpus.free": "1", "weeks": "60"}
    # Signing in (session, user, seat) and the current rubric and pools: no week is loaded.
    with django_assert_max_num_queries(6):
        response = client.get(reverse("policy:replay-partial"), bad, **HTMX)
    assert response.status_code == 400 and response[ERROR_HEADER] == "errors"
    fragment = response.content.decode()
    for problem in ("rubric.business_impact: “ninety” is not a number.",
                    "they add up to 150%",  # 70 + the current 40, 30 and 10
                    "pool.atlas/a100.standby_pct: 120 is out of range (0 to 99).",
                    "gpus.free: not a policy parameter.",
                    "weeks: 60 is out of range (1 to 52)."):
        assert problem in fragment
    assert "Per team" not in fragment
    page = client.get(reverse("policy:replay"), bad)
    assert page.status_code == 400
    assert "Nothing was replayed" in page.content.decode() and "Per team" not in page.content.decode()


@pytest.mark.parametrize("who", ["lead_a", "member_b", "outsider"])
def test_anyone_signed_in_may_replay_as_they_may_read_the_archive(client, world, who):
    """A proposal is discussed by everyone signed in, and the replay shows ranks and placements, which every
    decision record already shows: no member's own scores."""
    client.force_login(getattr(world, who))
    assert client.get(reverse("policy:replay")).status_code == 200
    assert client.get(reverse("policy:replay-partial"), {"weeks": "2"}).status_code == 200


def test_anonymous_is_sent_to_sign_in(client, world):
    response = client.get(reverse("policy:replay-partial"))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
