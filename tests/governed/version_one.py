"""Version 1 of the governed parameters in a test: what a deployment's settings were when it migrated."""

from __future__ import annotations

from typing import Any

from governed.models import ChangeSource, PolicyChange, PolicyValue


def version_1_set(values: dict[str, str]) -> None:
    """Set values of version 1 (the row with no week), creating it in a flushed database."""
    change, _created = PolicyChange.objects.get_or_create(number=1, defaults={
        "source": ChangeSource.MIGRATION, "reason": "Version 1.", "exempt_reason": "Version 1.",
        "author_name": "Docket",
    })
    for key, value in values.items():
        PolicyValue.objects.update_or_create(change=change, key=key, defaults={"value": value})


def pool_prices_set(prices: dict[Any, str]) -> None:
    """Each pool's price per GPU-hour (pool → "2.50") in version 1: its price since always."""
    version_1_set({f"pool.{pool.key}.price_per_gpu_hour": price for pool, price in prices.items()})
