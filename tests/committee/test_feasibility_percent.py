"""The efficiency-lever sentence writes its percentage as a person would: 40%, never 4E+1%."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import time_machine
from django.urls import reverse

from committee import scoring
from committee.scoring import AlternativeOption
from tests.committee.reviewing import close
from tests.factories import file_request


@pytest.fixture(autouse=True)
def clock():
    with time_machine.travel(datetime(2026, 12, 1, 10, 0, tzinfo=UTC), tick=False):
        yield


@pytest.mark.parametrize(
    ("baseline", "shown"),
    [(1000, "(40%)"), (2000, "(70%)"), (1200, "(50%)"), (1500, "(60%)"), (1600, "(62.5%)"), (900, "(33.33%)")],
)
def test_lever_used_sentence_shows_round_percentages_in_plain_digits(baseline, shown):
    s = scoring.feasibility_suggestion(requested_gpu_hours=600, baseline_gpu_hours=baseline, alternatives=[])
    assert shown in s.explanation
    assert "E+" not in s.explanation


@pytest.mark.parametrize(
    ("alternative_gpu_hours", "shown"), [(300, "(70%)"), (600, "(40%)"), (900, "(10%)"), (750, "(25%)")]
)
def test_alternative_sentence_shows_round_percentages_in_plain_digits(alternative_gpu_hours, shown):
    s = scoring.feasibility_suggestion(
        requested_gpu_hours=1000, baseline_gpu_hours=None,
        alternatives=[AlternativeOption("Distilled", alternative_gpu_hours, True)],
    )
    assert shown in s.explanation
    assert "E+" not in s.explanation


def test_review_page_shows_a_40_pct_saving_as_40_pct(client, world):
    # 16 GPUs × 48 h = 768 GPU-hours requested against a baseline of 1,280: 512 saved, exactly 40%.
    a = file_request(world, baseline_gpu_hours=1280)
    close(world)
    client.force_login(world.reviewer)
    body = client.get(reverse("committee:review-cycle", args=[world.cycle.week])).content.decode()
    feasibility = body[body.index(f'id="score-{a.pk}-feasibility"'):]
    feasibility = feasibility[:feasibility.index("</form>")]
    assert "saves 512 GPU-hours (40%)" in feasibility
    assert "E+1" not in body
