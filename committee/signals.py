"""The seam between the committee's process and the apps that record it (reports: the archive).

Sent only after the transaction that made the change has committed (`transaction.on_commit`), so
a receiver always reads committed rows. Receivers hold no business logic: they call a service
of their own app. A receiver's exception propagates to the caller (nothing is swallowed); the
change itself is already committed by then.
"""

from __future__ import annotations

from django.dispatch import Signal

# A cycle went from "in review" to "finalized": every request has its decision, ranks are frozen.
# Sent with sender=ReviewCycle and cycle=<ReviewCycle>.
cycle_finalized = Signal()

# The chair saved a new rubric version. Sent with sender=RubricVersion and rubric_version=<RubricVersion>.
rubric_changed = Signal()

# The chair published a finalized week's allocation (or a correction of it): a new plan version.
# Sent with sender=ReviewCycle, cycle=<ReviewCycle> and plan=<allocations.AllocationPlan>.
cycle_published = Signal()
