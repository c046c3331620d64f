"""Celery tasks of the policy lab (beat, see CELERY_BEAT_SCHEDULE). Each task calls one service."""

from __future__ import annotations

from celery import shared_task
from django.utils import timezone

from policy import services


@shared_task(name="policy.apply_due")
def apply_due() -> list[int]:
    """Write the adopted changes whose effective week has begun (idempotent: a second run writes nothing)."""
    return [proposal.pk for proposal in services.adoptions_apply_due(now=timezone.now())]
