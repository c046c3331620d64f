"""The rubric's arithmetic against cases computed by hand (no database)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from committee import scoring
from committee.scoring import AlternativeOption, ScoreSheet

WEIGHTS = {"business_impact": 40, "feasibility": 30, "urgency": 20, "fairness": 10}
T0 = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


def sheet(request_id, impact, feasibility, urgency, fairness, submitted=T0):
    return ScoreSheet(
        request_id=request_id,
        submitted_at=submitted,
        member_scores={"business_impact": impact, "feasibility": feasibility, "urgency": urgency},
        computed_scores={"fairness": Decimal(fairness)},
    )


def test_weighted_total_is_the_sum_of_weight_times_mean_over_ten():
    # 40% × 7 + 30% × 6 + 20% × 10 + 10% × 5 = 28 + 18 + 20 + 5 = 71
    result = scoring.request_result(sheet=sheet(1, [8, 6], [5, 7], [10, 10], "5"), weights=WEIGHTS, quorum=2)
    assert result.total == Decimal("71.00")
    assert [(c.criterion, c.score, c.points, c.count) for c in result.criteria] == [
        ("business_impact", Decimal("7.00"), Decimal("28.00"), 2),
        ("feasibility", Decimal("6.00"), Decimal("18.00"), 2),
        ("urgency", Decimal("10.00"), Decimal("20.00"), 2),
        ("fairness", Decimal("5.00"), Decimal("5.00"), 0),
    ]
    assert result.arithmetic == "40% × 7.00 + 30% × 6.00 + 20% × 10.00 + 10% × 5.00 = 71.00"


def test_means_are_exact_and_the_total_is_rounded_once():
    # impact (7+8+8)/3 = 7.666…: 40 × 23/3 / 10 = 30.666…; + 15 + 12 + 7.07 = 64.7366… → 64.74
    result = scoring.request_result(sheet=sheet(1, [7, 8, 8], [5, 5], [6, 6], "7.07"), weights=WEIGHTS, quorum=2)
    assert result.criterion("business_impact").score == Decimal("7.67")
    assert result.criterion("business_impact").points == Decimal("30.67")
    assert result.total == Decimal("64.74")


def test_below_quorum_has_no_total_and_names_the_missing_criterion():
    result = scoring.request_result(sheet=sheet(5, [9], [5, 5], [6, 6], "10"), weights=WEIGHTS, quorum=2)
    assert result.total is None and not result.complete
    assert result.missing == ("business_impact",)
    assert result.criterion("business_impact").score == Decimal("9.00")  # still shown, just not ranked


def test_quorum_is_configurable():
    one = sheet(5, [9], [5], [6], "10")  # 36 + 15 + 12 + 10
    assert scoring.request_result(sheet=one, weights=WEIGHTS, quorum=1).total == Decimal("73.00")
    assert scoring.request_result(sheet=one, weights=WEIGHTS, quorum=2).total is None


def test_a_criterion_weighted_zero_needs_no_scores():
    weights = {"business_impact": 50, "feasibility": 30, "urgency": 0, "fairness": 20}
    result = scoring.request_result(sheet=sheet(1, [6, 8], [4, 4], [], "5"), weights=weights, quorum=2)
    # 50 × 7 / 10 + 30 × 4 / 10 + 0 + 20 × 5 / 10 = 35 + 12 + 10
    assert result.total == Decimal("57.00")


def test_ranking_by_total_with_ties_to_earlier_submission_then_lower_id():
    sheets = [
        sheet(1, [8, 6], [5, 7], [10, 10], "5", submitted=T0),  # 71.00
        sheet(2, [9, 7, 8], [4, 4], [5, 5, 8], "8", submitted=T0 + timedelta(hours=1)),  # 32+12+12+8 = 64.00
        sheet(3, [7, 7], [6, 6], [10, 10], "5", submitted=T0 - timedelta(hours=1)),  # 71.00, submitted earlier
        sheet(4, [7, 7], [6, 6], [10, 10], "5", submitted=T0 - timedelta(hours=1)),  # 71.00, same time, higher id
        sheet(5, [9], [5, 5], [6, 6], "10", submitted=T0 - timedelta(days=1)),  # below quorum
        sheet(6, [], [], [], "10", submitted=T0 - timedelta(days=2)),  # nobody scored yet
    ]
    ranked = scoring.rank_requests(sheets=sheets, weights=WEIGHTS, quorum=2)
    assert [(r.request_id, r.rank, r.total) for r in ranked] == [
        (3, 1, Decimal("71.00")),
        (4, 2, Decimal("71.00")),
        (1, 3, Decimal("71.00")),
        (2, 4, Decimal("64.00")),
        (6, None, None),  # unranked, in submission order
        (5, None, None),
    ]


def test_other_weights_reorder_and_moves_are_counted():
    sheets = [sheet(1, [10, 10], [0, 0], [0, 0], "0"), sheet(2, [0, 0], [10, 10], [10, 10], "0")]
    before = scoring.rank_requests(sheets=sheets, weights=WEIGHTS, quorum=2)  # 1: 40, 2: 50
    after = scoring.rank_requests(
        sheets=sheets, weights={"business_impact": 70, "feasibility": 10, "urgency": 10, "fairness": 10}, quorum=2
    )  # 1: 70, 2: 20
    assert [r.request_id for r in before] == [2, 1]
    assert [r.request_id for r in after] == [1, 2]
    assert scoring.rank_moves(before=before, after=after) == {1: 1, 2: -1}


@pytest.mark.parametrize(
    ("weights", "error_key"),
    [
        ({"business_impact": 40, "feasibility": 30, "urgency": 20, "fairness": 11}, "__all__"),
        ({"business_impact": 40, "feasibility": 30, "urgency": 20}, "fairness"),
        ({"business_impact": 40.5, "feasibility": 29.5, "urgency": 20, "fairness": 10}, "business_impact"),
        ({"business_impact": 140, "feasibility": -30, "urgency": -20, "fairness": 10}, "business_impact"),
        ({**WEIGHTS, "charm": 0}, "__all__"),
    ],
)
def test_weights_must_be_whole_percents_adding_up_to_100(weights, error_key):
    assert error_key in scoring.weights_errors(weights)


def test_default_weights_are_valid():
    assert scoring.weights_errors(WEIGHTS) == {}
    assert scoring.DEFAULT_WEIGHTS == WEIGHTS


# --- suggestions ----------------------------------------------------------------------------

WEEK_END = datetime(2026, 12, 7, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("deadline", "expected"),
    [
        (WEEK_END - timedelta(days=3), 10),  # inside the allocation week
        (WEEK_END - timedelta(days=30), 10),  # already past: as urgent as it gets
        (WEEK_END + timedelta(days=7), 7),  # 10 × 2^(−7/14) = 7.07
        (WEEK_END + timedelta(days=14), 5),  # one half-life
        (WEEK_END + timedelta(days=28), 3),  # 2.5 rounds half up
        (WEEK_END + timedelta(days=42), 1),  # 1.25
        (WEEK_END + timedelta(days=200), 1),  # never below 1
        (None, 1),
    ],
)
def test_urgency_curve(deadline, expected):
    suggestion = scoring.urgency_suggestion(deadline=deadline, window_end=WEEK_END)
    assert suggestion.value == expected
    assert suggestion.explanation  # one sentence, shown beside the input


def test_feasibility_high_when_the_request_already_saves_30_pct_against_its_baseline():
    s = scoring.feasibility_suggestion(requested_gpu_hours=1000, baseline_gpu_hours=1500, alternatives=[])
    assert s.value == scoring.FEASIBILITY_LEVER_USED == 9
    assert s.numbers["saving_gpu_hours"] == 500 and s.numbers["saving_pct"] == Decimal("33.33")
    assert "500" in s.explanation and "33.33%" in s.explanation


def test_feasibility_low_when_a_feasible_alternative_saves_30_pct_and_is_not_used():
    s = scoring.feasibility_suggestion(
        requested_gpu_hours=1000,
        baseline_gpu_hours=None,
        alternatives=[AlternativeOption("bf16", 800, True), AlternativeOption("Distilled", 650, True)],
    )
    assert s.value == scoring.FEASIBILITY_LEVER_UNUSED == 2
    assert s.numbers == {"saving_gpu_hours": 350, "saving_pct": Decimal("35.00"), "alternative": "Distilled"}
    assert "350" in s.explanation and "35%" in s.explanation


def test_feasibility_exactly_30_pct_is_the_lever():
    s = scoring.feasibility_suggestion(
        requested_gpu_hours=1000, baseline_gpu_hours=None, alternatives=[AlternativeOption("LoRA", 700, True)]
    )
    assert s.value == 2


def test_feasibility_middle_when_the_cheaper_alternative_saves_less_than_30_pct():
    s = scoring.feasibility_suggestion(
        requested_gpu_hours=1000, baseline_gpu_hours=1200, alternatives=[AlternativeOption("bf16", 800, True)]
    )
    assert s.value == scoring.FEASIBILITY_SMALL_SAVING == 5
    assert s.numbers["saving_pct"] == Decimal("20.00")


@pytest.mark.parametrize(
    "alternatives",
    [[], [AlternativeOption("tiny", 100, False)], [AlternativeOption("bigger", 1000, True)]],
)
def test_feasibility_high_when_no_feasible_alternative_is_cheaper(alternatives):
    s = scoring.feasibility_suggestion(requested_gpu_hours=1000, baseline_gpu_hours=None, alternatives=alternatives)
    assert s.value == scoring.FEASIBILITY_NO_CHEAPER == 8


# --- priority matrix ------------------------------------------------------------------------


def test_intensity_threshold_is_the_median():
    assert scoring.intensity_threshold([100, 300, 200]) == 200
    assert scoring.intensity_threshold([100, 200, 300, 400]) == 250
    assert scoring.intensity_threshold([]) == 0


@pytest.mark.parametrize(
    ("impact", "gpu_hours", "quadrant"),
    [
        (Decimal(8), 100, scoring.DO_FIRST),
        (Decimal(8), 900, scoring.COST_BENEFIT),
        (Decimal(3), 100, scoring.WHEN_FREE),
        (Decimal(3), 900, scoring.DEFER_OR_REDESIGN),
        (Decimal(5), 500, scoring.COST_BENEFIT),  # thresholds count as high
        (None, 100, None),
    ],
)
def test_matrix_quadrants(impact, gpu_hours, quadrant):
    assert scoring.matrix_quadrant(impact=impact, gpu_hours=gpu_hours, threshold_gpu_hours=Decimal(500)) == quadrant
