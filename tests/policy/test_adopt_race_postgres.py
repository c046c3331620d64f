"""Two adoptions for the same week at the same moment, on PostgreSQL: one is adopted, the other refused.

Both pass the service's own check (neither sees the other's uncommitted adoption: the first to adopt holds its
transaction open until the other is seen waiting, tests/races.py); the unique constraint on adopted proposals'
effective weeks then makes the second wait for the first and fail, and the service turns that into the refusal
naming the next free week.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection

from policy import services
from policy.models import Proposal, ProposalStatus
from tests.clock import FIXED_NOW
from tests.conftest import World, require
from tests.races import RaceWindow
from tests.reports.conftest import on_postgresql

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_two_simultaneous_adoptions_for_one_week_adopt_one(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    require(on_postgresql(), "PostgreSQL (run with DATABASE_URL=postgres://…)")
    proposals = [
        services.proposal_submit(actor=world.member_a, title=f"Quorum {n}", reason="r", expected_effect="e",
                                 changes={"review.quorum": str(n)})
        for n in (3, 4)
    ]
    real_send = services._send
    window = RaceWindow(parties=2)

    def slow_send(proposal: Proposal, step: str, summary: str) -> None:
        real_send(proposal, step, summary)
        if step == "adopted":
            window.hold()  # hold the adoption uncommitted until the other one is seen waiting on it

    monkeypatch.setattr(services, "_send", slow_send)
    start = threading.Barrier(2)
    results: dict[int, Any] = {}

    def adopt(proposal: Proposal) -> None:
        try:
            start.wait()
            results[proposal.pk] = services.proposal_adopt(
                actor=world.chair, proposal=proposal, effective_week="2026-W51", reason="ok", now=FIXED_NOW)
        except Exception as error:  # the refusal is the result under test
            results[proposal.pk] = error
        finally:
            connection.close()

    threads = [threading.Thread(target=adopt, args=(p,)) for p in proposals]
    for thread in threads:
        thread.start()
    waited = window.open_when_all_arrived(threads)
    for thread in threads:
        thread.join(timeout=60)
    refused = [r for r in results.values() if isinstance(r, Exception)]
    assert len(refused) == 1, results
    assert "The next free week is 2026-W52." in str(refused[0])
    assert Proposal.objects.filter(status=ProposalStatus.ADOPTED, effective_week="2026-W51").count() == 1
    assert Proposal.objects.filter(status=ProposalStatus.OPEN).count() == 1
    assert waited == 1  # the second adoption waited on the first's uncommitted week
