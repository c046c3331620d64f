"""The ranking from each request's score counts and sums per criterion (SQL) is the ranking worked by hand,
and the one worked from every score row: recused members' scores withdrawn, stale scores counted."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

from committee import scoring, selectors, services
from committee.models import GpuRequest, ScoreStaleness
from tests.committee.reviewing import close, score
from tests.factories import file_request, forecast_fields, request_fields, usage_fields


def test_the_aggregated_ranking_is_the_ranking_worked_by_hand(world):
    a = file_request(world, title="Ranker retrain")
    b = file_request(world, team=world.team_b, pool=world.h100, title="Vision model", gpu_count=8, min_gpu_count=4)
    c = file_request(world, team=world.team_b, title="Speech", gpu_count=8, min_gpu_count=4)
    d = file_request(world, pool=world.h100, title="Search", gpu_count=8, min_gpu_count=4)
    close(world)
    score(world.chair, a, 7, 6, 5)
    score(world.reviewer, a, 8, 6, 4)
    score(world.chair, b, 6, 6, 6)
    score(world.reviewer, b, 6, 6, 6)
    score(world.finance, b, 10, 10, 10)
    score(world.chair, c, 9, 9, 9)  # one score: below the quorum of 2
    score(world.chair, d, 6, 6, 6)
    score(world.reviewer, d, 6, 6, 6)
    # Finance is recused from b: their tens are withdrawn from its means and counts.
    services.conflict_declare(actor=world.finance, gpu_request=b, reason="I advise team B.")
    # Team A changes a after the chair and the reviewer scored it: their scores are stale and still count.
    services.request_question_ask(actor=world.finance, gpu_request=a, body="Would 12 GPUs do?")
    services.request_update(actor=world.lead_a, gpu_request=a, fields=request_fields(world, gpu_count=12),
                                usage=usage_fields(), forecast=forecast_fields(), alternatives=[])
    assert ScoreStaleness.objects.filter(request=a).count() == 2

    rows = selectors.cycle_ranking(cycle=world.cycle)
    # By hand, weights 40/30/20/10, fairness 10 for both teams (no usage measured):
    #   a: 40% × 7.5 + 30% × 6 + 20% × 4.5 + 10% × 10 = 30 + 18 + 9 + 10 = 67.00
    #   b: 40% × 6 + 30% × 6 + 20% × 6 + 10% × 10 = 64.00 (finance's tens not counted)
    #   d: the same 64.00; b was filed first (or has the lower id): b before d
    #   c: one score per criterion, below quorum: unranked, last
    assert [(row.request.pk, row.result.rank, row.result.total) for row in rows] == [
        (a.pk, 1, Decimal("67.00")), (b.pk, 2, Decimal("64.00")), (d.pk, 3, Decimal("64.00")), (c.pk, None, None)
    ]
    assert rows[0].result.arithmetic == "40% × 7.50 + 30% × 6.00 + 20% × 4.50 + 10% × 10.00 = 67.00"
    assert [(x.criterion, x.count) for x in rows[1].result.criteria] == [
        ("business_impact", 2), ("feasibility", 2), ("urgency", 2), ("fairness", 0)
    ]
    assert rows[3].result.missing == ("business_impact", "feasibility", "urgency")

    # The same ranking from every score row (score_sheet reads a request's scores when it has no tallies).
    fresh = {r.pk: r for r in GpuRequest.objects.filter(pk__in=[a.pk, b.pk, c.pk, d.pk])}
    sheets = [selectors.score_sheet(gpu_request=fresh[row.request.pk], fair_share=row.fair_share) for row in rows]
    assert all(sheet.member_tallies is None for sheet in sheets)
    weights = selectors.rubric_for_week(week=world.cycle.week).weights
    by_rows = scoring.rank_requests(sheets=sheets, weights=weights, quorum=2)
    assert by_rows == [row.result for row in rows]


def test_a_sheet_of_tallies_gives_the_result_of_a_sheet_of_scores(world):
    values = {"business_impact": [7, 8, 10], "feasibility": [6, 6], "urgency": [5]}
    tallies = {c: scoring.ScoreTally(count=len(v), total=sum(v)) for c, v in values.items()}
    when = world.cycle.starts_at
    computed = {scoring.FAIRNESS: Decimal("7.07")}
    for quorum in (1, 2, 3):
        by_values = scoring.request_result(
            sheet=scoring.ScoreSheet(request_id=1, submitted_at=when, member_scores=values, computed_scores=computed),
            weights=scoring.DEFAULT_WEIGHTS, quorum=quorum)
        by_tallies = scoring.request_result(
            sheet=scoring.ScoreSheet(request_id=1, submitted_at=when, member_scores={}, computed_scores=computed,
                                     member_tallies=tallies),
            weights=scoring.DEFAULT_WEIGHTS, quorum=quorum)
        assert by_tallies == by_values
    # The mean stays the exact fraction: 25 / 3, shown as 8.33.
    assert by_values.criterion("business_impact").score == scoring.rounded(Fraction(25, 3)) == Decimal("8.33")
