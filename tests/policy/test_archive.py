"""Every step of a proposal is a revision of its archive page."""

from __future__ import annotations

import pytest

from committee import weeks
from policy import services
from reports.models import Page
from tests.clock import FIXED_NOW
from tests.conftest import World


@pytest.mark.django_db(transaction=True)
def test_each_step_writes_a_revision(world: World) -> None:
    proposal = services.proposal_submit(actor=world.member_a, title="Reserve 15", reason="Idle", expected_effect="GPUs",
                                        changes={"pool.a100.burst_reserve_pct": "15"})
    services.proposal_comment(actor=world.finance, proposal=proposal, body="Good idea")
    services.proposal_vote(actor=world.finance, proposal=proposal, choice="support", comment="Yes", now=FIXED_NOW)
    services.proposal_vote(actor=world.finance, proposal=proposal, choice="against", comment="No", now=FIXED_NOW)
    services.proposal_adopt(actor=world.chair, proposal=proposal, effective_week="2026-W51", reason="Agreed",
                            now=FIXED_NOW)
    services.proposal_observe(actor=world.member_a, proposal=proposal, result="Three more GPUs placed",
                              now=weeks.week_bounds("2026-W52")[0])
    page = Page.objects.get(slug=f"policy-proposal-{proposal.pk}")
    summaries = list(page.revisions.order_by("number").values_list("summary", flat=True))
    assert summaries == [
        "Proposal filed by Member_A", "Comment by Finance", "Finance voted support",
        "Finance changed their vote to against", "Adopted by Chair, effective from week 2026-W51",
        "Observed result recorded by Member_A",
    ]
    latest = page.revisions.order_by("-number").first()
    assert latest is not None and "Against: Finance — No" in latest.body and "20 % | 15 %" in latest.body
    assert "Three more GPUs placed" in latest.body


@pytest.mark.django_db(transaction=True)
def test_a_decline_is_a_revision(world: World) -> None:
    proposal = services.proposal_submit(actor=world.member_a, title="Quorum 3", reason="r", expected_effect="e",
                                        changes={"review.quorum": "3"})
    services.proposal_decline(actor=world.chair, proposal=proposal, reason="Not with four seats", now=FIXED_NOW)
    latest = Page.objects.get(slug=f"policy-proposal-{proposal.pk}").revisions.order_by("-number").first()
    assert latest is not None and latest.summary == "Declined by Chair" and "Not with four seats" in latest.body
