"""What the policy lab tells the apps above it (reports: the archive). Sent after the transaction has committed.

`proposal_step` is sent once per step of a proposal: "filed", "commented", "voted", "adopted", "declined",
"applied", "observed". Sent with sender=Proposal, proposal=<Proposal>, step=<str> and summary=<str> (what
happened, in words, for the archive revision's summary).
"""

from __future__ import annotations

from django.dispatch import Signal

proposal_step = Signal()
