"""The archive listens to the committee: each receiver calls one service and holds no logic of its own.

A week's decision record is asked for inside the transaction that finalizes or publishes it
(`cycle_transition`: an outbox message, committed with the week) and written after it commits by the outbox's
task; a change of the rules' page (the store's `policy_changed`: one page per change, whichever path made it)
after the change has committed. Each service is idempotent: a signal delivered twice writes one revision.
"""

from __future__ import annotations

from typing import Any

from committee.models import ReviewCycle
from governed.models import PolicyChange
from policy.models import Proposal
from reports import services


def on_cycle_transition(sender: Any, *, cycle: ReviewCycle, reason: str = "", **kwargs: Any) -> None:
    services.decision_record_enqueue(cycle=cycle, reason=reason, published=kwargs.get("plan") is not None)


def on_policy_changed(sender: Any, *, change: PolicyChange, **kwargs: Any) -> None:
    services.policy_change_page_sync(change=change)


def on_proposal_step(sender: Any, *, proposal: Proposal, summary: str, **kwargs: Any) -> None:
    services.proposal_page_sync(proposal=proposal, summary=summary)
