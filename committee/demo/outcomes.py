"""Outcomes against forecasts in the demo (docs/outcomes.md): Search reported the realized outcome of each of its
grants that ended in the past weeks (some above, some below its forecast), and Recommendations has not reported its
oldest one, now overdue: the review flags its request, and its history shows it."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

from committee.models import (
    Confidence,
    GpuRequest,
    ImpactForecast,
    ImpactKind,
    MembershipRole,
    RealizedOutcome,
    TeamMembership,
)
from committee.selectors.realized import grants_ended
from committee.services.realized import outcome_ask, outcome_report

# Search's realized value against its forecast, grant by grant (oldest first), and what its lead wrote.
SEARCH_RATIOS = (Decimal("0.80"), Decimal("1.10"), Decimal("0.95"), Decimal("0.70"))
NOTES = ("Measured by the A/B test over two weeks after the launch.", "Finance's booked figure for the month.",
         "Below the forecast: the launch slipped by a week.")


# The past weeks' requests of these teams forecast revenue (the seeded history files them without a forecast).
FORECASTS = {"search": Decimal(120000), "recommendations": Decimal(80000)}


def seed_outcomes(*, now: datetime) -> None:
    if RealizedOutcome.objects.exists():
        return
    for slug, value in FORECASTS.items():
        for gpu_request in GpuRequest.objects.filter(team__slug=slug, impact_forecast__isnull=True,
                                                     cycle__starts_at__lt=now):
            ImpactForecast.objects.create(
                request=gpu_request, kind=ImpactKind.REVENUE, estimated_value=value, value_unit="USD/week",
                confidence=Confidence.MEDIUM,
                narrative="Revenue from the retrained model, as the A/B test measures it.")
    ended = grants_ended(now=now, since=now - timedelta(weeks=8))
    requests = (GpuRequest.objects.filter(pk__in=ended).select_related("team", "impact_forecast")
                .order_by("cycle__starts_at", "pk"))
    by_team: dict[str, list[GpuRequest]] = {}
    for gpu_request in requests:
        by_team.setdefault(gpu_request.team.slug, []).append(gpu_request)
    for n, (gpu_request, ratio) in enumerate(zip(by_team.get("search", []), SEARCH_RATIOS, strict=False)):
        end = ended[gpu_request.pk]
        outcome_ask(gpu_request=gpu_request, last_window_end=end, now=end)
        lead = TeamMembership.objects.filter(team=gpu_request.team, role=MembershipRole.LEAD).first()
        if lead is None:
            continue
        value = (gpu_request.impact_forecast.estimated_value * ratio).quantize(Decimal("0.01"))
        outcome_report(actor=lead.user, gpu_request=gpu_request, value=value, note=NOTES[n % len(NOTES)],
                       now=end + timedelta(days=3))
    overdue = by_team.get("recommendations", [])[:1]
    for gpu_request in overdue:
        outcome_ask(gpu_request=gpu_request, last_window_end=ended[gpu_request.pk], now=ended[gpu_request.pk])
