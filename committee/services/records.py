"""The week's decision record asked for again by the weekly clock: a week that ended with elastic agents' actions its
record lacks (the archive writes it after commit, as after a correction; committee/selectors/records.py)."""

from __future__ import annotations

from datetime import datetime

from django.utils.translation import gettext as _

from committee import selectors
from committee.models import ReviewCycle
from committee.services.review import cycle_transition_record
from core.locks import write_transaction


@write_transaction
def record_agent_actions_due(*, now: datetime) -> list[ReviewCycle]:
    """The clock's job: ask for the record of every week behind its agents' actions (`cycles_record_behind`) again.

    A week's record written before the week ended lists the agents' actions up to then and says the rest comes later;
    an agent cut off from Docket reports its actions when it is back, after the week perhaps. Each such week gets one
    outbox message in this transaction (`cycle_transition_record`, no actor and no plan), and the archive writes
    after commit one revision "Updated — the elastic agents' actions of the ended week" listing them (or none, when
    nothing changed). Returns the weeks asked for; a second run asks for none (the write is waiting, then done after
    every action it lists), until more of a week's actions arrive within its catch-up (AGENT_ACTIONS_CATCH_UP).
    """
    behind = selectors.cycles_record_behind(now=now)
    for cycle in behind:
        cycle_transition_record(
            cycle=cycle, actor=None, plan=None, reason=_("the elastic agents' actions of the ended week"),
            refused=_("The decision record of week %(week)s was not asked for again: %(reason)s"),
        )
    return behind
