"""Version 1 of the elastic policy as every migrated database holds it, for the tests written against it.

Policy migration 0008 turned version 1's spans of hours into minutes keeping their meaning (240 and 60 minutes); the
declared defaults are the committee's figures (5 and 10 minutes, governed.params). A flushed test database (an
earlier transactional test in the same worker) has version 1 without rows, so it reads the declared defaults: a test
that counts on the migrated version 1 calls this first, and reads the same whatever ran before it.
"""

from __future__ import annotations

from governed.models import PolicyValue
from governed.services import policy_version_1

MIGRATED_SPANS = {"elastic.idle_span_minutes": "240", "elastic.recent_span_minutes": "60"}


def elastic_version_one_as_migrated() -> None:
    change = policy_version_1()
    held = set(change.values.filter(key__in=MIGRATED_SPANS).values_list("key", flat=True))
    PolicyValue.objects.bulk_create(
        PolicyValue(change=change, key=key, value=value) for key, value in MIGRATED_SPANS.items() if key not in held)
