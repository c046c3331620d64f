"""Celery tasks of the allocations app (beat: CELERY_BEAT_SCHEDULE in config/settings.py)."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from allocations.elastic import services


@shared_task(name="allocations.elastic_evaluate")
def elastic_evaluate() -> dict[str, int]:
    """The elastic policy over every pool, hourly; safe to run twice (the service is idempotent)."""
    result = services.elastic_evaluate(now=timezone.now())
    return {"policy_version": result.policy_version, "started": result.started, "ended": result.ended,
            "kept": result.kept}
