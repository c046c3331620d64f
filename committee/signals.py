"""The seam between the committee's process and the apps that record it (reports: the archive).

Two kinds of signal. `cycle_transition` is sent inside the transaction that makes the change, so
what must exist with it (the outbox message that writes a week's decision record after commit) commits with it or
not at all; its receivers' exceptions roll the change back. The others are sent only after the transaction has committed
(`transaction.on_commit`), so a receiver reads committed rows, and by then the change stands.
Receivers hold no business logic: they call a service of their own app, and nothing is swallowed.
"""

from __future__ import annotations

from django.dispatch import Signal

# A cycle was finalized or its plan published, a decision of a finalized week corrected, or an
# appeal filed or decided (or, from the weekly clock, its week ended with elastic agents' actions
# that its record lacks), and the transaction that did it has not committed yet: receivers write
# here what must never be missing from a finalized or published week (the outbox message for the
# archive's decision record, written after commit: kept small, since the chair waits for this
# transaction). Sent with sender=ReviewCycle, cycle=<ReviewCycle> (as just written), actor=<User> (who
# acted; None for the clock), plan=<allocations.AllocationPlan> (the plan just published) or None, and reason=<str>:
# why the record changes after the fact (a correction's or an appeal's words), "" at finalize and
# at the first publish. A ValidationError from a receiver is turned into the service's own
# refusal, naming the cause.
cycle_transition = Signal()

# A week's cycle was created (opened for intake), inside the transaction that creates it: the policy lab applies
# the adopted changes due by then (a rubric effective from this week, before the cycle is scored with it; pool and
# elastic changes whose week has begun). Sent with sender=ReviewCycle, cycle=<ReviewCycle> and now=<datetime>.
cycle_opened = Signal()

# The weekly clock ticked (committee.services.clock_tick, every DOCKET_CLOCK_TICK_SECONDS), after the runs it owed:
# the apps above do what is due by `now` (the policy lab writes an adopted change once its effective week has begun).
# Sent outside any transaction, with sender=None and now=<datetime>; a receiver's failure is logged and retried at the
# next tick, like a clock job's.
clock_ticked = Signal()

# seed_demo has filled the committee's and the allocations' demo rows, inside its transaction: the
# apps above add theirs (the policy lab's proposals, the archive's pages). Sent with sender=None and
# now=<datetime> (the demo's instant) and logins=<list of (username, password)>, which a receiver may extend.
demo_seeded = Signal()
