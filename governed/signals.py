"""What the store tells the apps above it (reports: the archive). Sent after the transaction has committed.

`policy_changed` is sent once per recorded change, with sender=PolicyChange and change=<PolicyChange>.
"""

from __future__ import annotations

from django.dispatch import Signal

policy_changed = Signal()
