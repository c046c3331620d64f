"""Stale scores: the team changes a request the members scored; they are told what changed, and it still counts."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from committee import selectors, services
from committee.models import GpuRequest, Notification, NotificationKind, ScoreStaleness
from committee.services.notifications import notification_text
from tests.committee.reviewing import score, two_requests_in_review
from tests.factories import forecast_fields, request_fields, usage_fields


def edit(world, gpu_request: GpuRequest, *, actor=None, usage=None, alternatives=(), **fields):
    return services.request_update(
        actor=actor or world.lead_a, gpu_request=gpu_request, fields=request_fields(world, **fields),
        usage=usage or usage_fields(), forecast=forecast_fields(), alternatives=list(alternatives),
    )


def changes(gpu_request, member):
    return ScoreStaleness.objects.get(request=gpu_request, member=member).changes


@pytest.fixture
def asked(world):
    """Team A's request in review, scored by the chair and the reviewer, with the committee's question open."""
    a, b = two_requests_in_review(world)
    score(world.chair, a, 7, 6, 5)
    score(world.reviewer, a, 8, 6, 4)
    services.request_question_ask(actor=world.finance, gpu_request=a, body="Would 12 GPUs do?")
    return a, b


def test_an_edit_in_review_marks_each_scorers_scores_stale_with_what_changed(world, asked):
    a, _b = asked
    start = world.cycle.starts_at + timedelta(hours=8)
    edit(world, a, gpu_count=12, latest_end=start + timedelta(hours=72))
    assert changes(a, world.chair) == [
        {"field": "gpu_count", "old": "16", "new": "12"},
        {"field": "window", "old": "2026-12-07 08:00 – 2026-12-11 08:00", "new": "2026-12-07 08:00 – 2026-12-10 08:00"},
    ]
    assert set(ScoreStaleness.objects.values_list("member__username", flat=True)) == {"chair", "reviewer"}
    told = Notification.objects.filter(kind=NotificationKind.SCORES_STALE)
    assert {n.recipient.username for n in told} == {"chair", "reviewer"}
    assert notification_text(told[0]) == (
        f"Team A changed “Ranker retrain” (week {world.cycle.week}) after you scored it: GPUs, window. "
        "Re-score it, or confirm that your scores still hold."
    )


def test_stale_scores_still_count(world, asked):
    a, _b = asked

    def standing():
        row = next(r for r in selectors.cycle_ranking(cycle=world.cycle) if r.request.pk == a.pk)
        return row.result.rank, row.result.total, row.result.criterion("business_impact").count

    before = standing()
    assert before[0] == 1
    edit(world, a, gpu_count=12)
    assert standing() == before


def test_the_review_shows_stale_until_the_member_rescores_or_confirms(world, asked, client):
    a, _b = asked
    edit(world, a, gpu_count=12, usage=usage_fields(gpu_hours_used=700))
    url = reverse("committee:review-cycle", args=[world.cycle.week])
    client.force_login(world.chair)
    html = client.get(url).content.decode()
    assert "changed since you scored: GPUs 16 → 12; last week&#x27;s usage 600 of 800 GPU-hours, 75% → 700 of 800" \
        in html
    assert "still count until you revise them" in html
    response = client.post(reverse("committee:review-scores-confirm", args=[world.cycle.week, a.pk]))
    assert response.status_code == 302
    assert not ScoreStaleness.objects.filter(member=world.chair).exists()
    assert "changed since you scored" not in client.get(url).content.decode()
    # The reviewer's mark stays until the reviewer acts: re-scoring one criterion clears it.
    assert ScoreStaleness.objects.filter(member=world.reviewer).exists()
    services.score_record(actor=world.reviewer, gpu_request=a, criterion="urgency", value=6)
    assert not ScoreStaleness.objects.exists()


def test_confirming_scores_that_are_not_stale_is_refused(world, asked):
    a, _b = asked
    with pytest.raises(ValidationError, match="not stale"):
        services.scores_confirm(actor=world.chair, gpu_request=a)


def test_edits_merge_and_a_change_undone_drops_out(world, asked):
    a, _b = asked
    edit(world, a, gpu_count=12)
    edit(world, a, gpu_count=16, duration_hours=40)
    assert changes(a, world.chair) == [{"field": "duration_hours", "old": "48", "new": "40"}]
    edit(world, a, gpu_count=16, duration_hours=48)
    assert not ScoreStaleness.objects.exists()


def test_an_edit_that_changes_nothing_marks_nothing(world, asked):
    a, _b = asked
    edit(world, a)
    assert not ScoreStaleness.objects.exists()
    assert not Notification.objects.filter(kind=NotificationKind.SCORES_STALE).exists()


def test_after_intake_closed_a_request_without_an_open_question_cannot_change(world):
    a, _b = two_requests_in_review(world)
    score(world.chair, a, 7, 6, 5)
    with pytest.raises(ValidationError, match=r"Intake for .* is closed"):
        edit(world, a, gpu_count=12)
    a.refresh_from_db()
    assert a.gpu_count == 16 and not ScoreStaleness.objects.exists()
    question = services.request_question_ask(actor=world.chair, gpu_request=a, body="Fewer GPUs?")
    services.request_question_answer(actor=world.lead_a, question=question, answer="No.")
    with pytest.raises(ValidationError, match=r"Intake for .* is closed"):  # answered: closed again
        edit(world, a, gpu_count=12)


def test_the_team_page_offers_the_edit_while_a_question_is_open(world, asked, client):
    a, _b = asked
    client.force_login(world.member_a)
    page = client.get(reverse("committee:request-detail", args=[a.pk])).content.decode()
    assert reverse("committee:request-edit", args=[a.pk]) in page
    assert "while a question is open you may still edit this request" in page
    assert client.get(reverse("committee:request-edit", args=[a.pk])).status_code == 200
    client.force_login(world.member_b)
    assert client.get(reverse("committee:request-edit", args=[a.pk])).status_code == 404
