"""The board, the proposal form and page: who may do what, every error shown at once, nothing stored on refusal."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from urllib.parse import parse_qsl

from django.test import Client
from django.urls import reverse
from django.utils import timezone

from committee import weeks
from policy.models import Proposal, ProposalStatus
from policy.views.proposals import replay_query
from tests.conftest import World


def client_for(user: object) -> Client:
    client = Client()
    client.force_login(user)  # type: ignore[arg-type]
    return client


def test_form_shows_current_values_and_files_a_proposal(world: World) -> None:
    client = client_for(world.member_a)
    page = client.get(reverse("policy:proposal-new")).content.decode()
    assert "atlas/a100 burst reserve" in page and "now 20 %" in page and "now 40 %" in page
    response = client.post(reverse("policy:proposal-new"), {
        "title": "A100 burst reserve 20% → 15%", "reason": "Idle", "expected_effect": "3 more GPUs",
        "change:pool.a100.burst_reserve_pct": "15", "figure-1-metric": "throughput", "figure-1-value": "1265",
        "figure-1-unit": "samples/s"})
    proposal = Proposal.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("policy:proposal", args=[proposal.pk])
    detail = client.get(response["Location"]).content.decode()
    assert "20 → <strong>15</strong> %" in detail and "1,265 samples/s" in detail
    board = client.get(reverse("policy:board")).content.decode()
    assert "A100 burst reserve 20% → 15%" in board and "Support 0 · against 0" in board


def test_bad_proposal_shows_every_error_and_stores_nothing(world: World) -> None:
    response = client_for(world.member_a).post(reverse("policy:proposal-new"), {
        "title": "", "reason": "r", "expected_effect": "e", "change:rubric.business_impact": "50",
        "change:pool.a100.standby_pct": "120", "change:pool.h100.burst_reserve_pct": "90", "change:made.up": "3"})
    page = response.content.decode()
    assert response.status_code == 400
    for words in ("Give the proposal a title.", "these add up to 110", "got 120",
                  "burst reserve 90 % plus cold standby 10 % must stay below 100 %", "“made.up” is not a policy"):
        assert words in page, words
    assert not Proposal.objects.exists()


def test_only_the_chair_adopts_and_the_second_for_a_week_is_refused(world: World) -> None:
    first = Proposal.objects.create(title="One", reason="r", expected_effect="e", proposer_name="x")
    second = Proposal.objects.create(title="Two", reason="r", expected_effect="e", proposer_name="x")
    first.changes.create(key="pool.a100.burst_reserve_pct", label="l", old_value="20", new_value="15")
    second.changes.create(key="review.quorum", label="l", old_value="2", new_value="3")
    adopt = reverse("policy:proposal-act", args=[first.pk, "adopt"])
    refused = client_for(world.reviewer).post(adopt, {"effective_week": "2026-W51", "decision_reason": "ok"})
    assert refused.status_code == 403 and "Only the chair adopts" in refused.content.decode()
    chair = client_for(world.chair)
    page = chair.get(reverse("policy:proposal", args=[first.pk])).content.decode()
    assert 'name="effective_week" value="2026-W51"' in page
    assert chair.post(adopt, {"effective_week": "2026-W51", "decision_reason": "ok"}).status_code == 302
    again = chair.post(reverse("policy:proposal-act", args=[second.pk, "adopt"]),
                       {"effective_week": "2026-W51", "decision_reason": "ok"})
    assert again.status_code == 400
    assert "The next free week is 2026-W52." in again.content.decode()
    assert Proposal.objects.get(pk=second.pk).status == ProposalStatus.OPEN
    assert 'name="effective_week" value="2026-W51"' in again.content.decode()  # what the chair typed stays


def test_vote_and_comment_errors_together(world: World) -> None:
    proposal = Proposal.objects.create(title="One", reason="r", expected_effect="e", proposer_name="x")
    client = client_for(world.outsider)
    response = client.post(reverse("policy:proposal-act", args=[proposal.pk, "vote"]), {"choice": "", "comment": ""})
    page = response.content.decode()
    assert response.status_code == 400 and "Vote support or against." in page and "Say in a sentence" in page
    assert not proposal.votes.exists()
    client.post(reverse("policy:proposal-act", args=[proposal.pk, "vote"]), {"choice": "support", "comment": "Yes"})
    client.post(reverse("policy:proposal-act", args=[proposal.pk, "comment"]), {"body": "Looks right"})
    page = client.get(reverse("policy:proposal", args=[proposal.pk])).content.decode()
    assert "Votes: 1 support, 0 against" in page and "Looks right" in page


def test_replay_query_is_the_changes_and_eight_weeks(world: World) -> None:
    proposal = Proposal.objects.create(title="One", reason="r", expected_effect="e", proposer_name="x")
    proposal.changes.create(key="pool.a100.burst_reserve_pct", label="l", old_value="20", new_value="15")
    proposal.changes.create(key="fairshare.half_life_weeks", label="l", old_value="2", new_value="2.5")
    assert parse_qsl(replay_query(proposal)) == [
        ("pool.a100.burst_reserve_pct", "15"), ("fairshare.half_life_weeks", "2.5"), ("weeks", "8")]


def test_signed_out_is_sent_to_sign_in(world: World) -> None:
    assert Client().get(reverse("policy:board")).status_code == 302


def test_board_marks_the_observed_result_overdue_after_24_hours(world: World, clock: Any) -> None:
    from policy import services

    proposal = services.proposal_submit(actor=world.member_a, title="Reserve 15", reason="r", expected_effect="e",
                                        changes={"pool.a100.burst_reserve_pct": "15"})
    services.proposal_adopt(actor=world.chair, proposal=proposal, effective_week="2026-W51", reason="ok",
                            now=timezone.now())
    week_end = weeks.week_bounds("2026-W51")[1]
    clock.move_to(week_end + timedelta(hours=23, minutes=59), tick=False)
    client = client_for(world.member_a)  # signed in then: a session does not last the weeks in between
    assert "observed result due" in client.get(reverse("policy:board")).content.decode()
    clock.move_to(week_end + timedelta(hours=24, minutes=1), tick=False)
    assert "observed result overdue" in client.get(reverse("policy:board")).content.decode()
    response = client.post(reverse("policy:proposal-act", args=[proposal.pk, "observe"]), {
        "observed_result": "Three more GPUs placed", "figure-1-metric": "throughput", "figure-1-value": "1250",
        "figure-1-unit": "samples/s"})
    assert response.status_code == 302
    assert "observed result recorded" in client.get(reverse("policy:board")).content.decode()
