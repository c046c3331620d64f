"""Outcomes against forecasts: which grants have ended, each team's track record, what overdue outcomes do.

A grant has ended when every current window placed for its request has ended and no later week of its run is still
to come (a commitment committed, confirmed or withheld that ends after `now`): for a run over several weeks, its last
week's window. Its team is then asked for the realized outcome (committee.services.realized), due
`outcomes.grace_days` after that end.

A team's track record reads its latest `outcomes.track_record_count` reported outcomes (by the end of their grants,
latest first): the ratio is the mean of realized ÷ forecast over those whose forecast is above 0 (each in the
forecast's own unit, so the ratio has none), and it counts the outcomes not reported by their due day (overdue).
`outcomes.overdue_effect` says what overdue outcomes do: none, flag (the review marks the team's requests), block (a
new weekly request of the team is refused, `overdue_block_reason`). Nothing here changes a score.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

from django.db.models import Max, Q, QuerySet
from django.utils import timezone
from django.utils.translation import gettext as _

from allocations.models import AllocationWindow, Commitment, CommitmentState, Team
from allocations.selectors import usage_counted_factors
from committee.models import PLACING_OUTCOMES, GpuRequest, RealizedOutcome
from core.datetimes import format_day
from governed.params import OUTCOMES_OVERDUE_EFFECT, OUTCOMES_TRACK_RECORD_COUNT, as_int
from governed.selectors import policy_value, policy_values

# The states of a run's later week that still hold it: the grant has not ended while one of them is to come.
_HELD = (CommitmentState.COMMITTED, CommitmentState.CONFIRMED, CommitmentState.WITHHELD)


def grants_ended(*, now: datetime, since: datetime) -> dict[int, datetime]:
    """The granted requests whose last window (or last week held for the run) ended after `since` and by `now`, not
    asked for their outcome yet, each with the instant its last window ended. Six queries, whatever the count."""
    windows = AllocationWindow.objects.filter(withdrawal__isnull=True, request_ref__isnull=False)
    recent = set(windows.filter(end__gt=since, end__lte=now).values_list("request_ref", flat=True))
    # A run whose later week was withheld and never continued ends with that week, after its last window.
    recent |= set(Commitment.objects.filter(end__gt=since, end__lte=now, state__in=_HELD)
                  .values_list("request_ref", flat=True))
    if not recent:
        return {}
    recent -= set(RealizedOutcome.objects.filter(request_id__in=recent).values_list("request_id", flat=True))
    recent &= set(GpuRequest.objects.filter(pk__in=recent, decision__outcome__in=PLACING_OUTCOMES,
                                            impact_forecast__isnull=False).values_list("pk", flat=True))
    going_on = set(windows.filter(request_ref__in=recent, end__gt=now).values_list("request_ref", flat=True))
    going_on |= set(Commitment.objects.filter(request_ref__in=recent, end__gt=now, state__in=_HELD)
                    .values_list("request_ref", flat=True))
    ended = windows.filter(request_ref__in=recent - going_on).values("request_ref").annotate(last=Max("end"))
    return {row["request_ref"]: row["last"] for row in ended}


@dataclass(frozen=True)
class OutcomeLine:
    """One asked outcome, as the team's history and the request's page show it."""

    outcome: RealizedOutcome
    forecast_value: Decimal
    unit: str
    ratio: Decimal | None  # realized ÷ forecast; None until reported, or for a forecast of 0
    overdue: bool
    a100_gpu_hours: Decimal  # the grant's current windows, in the common unit
    value_per_gpu_hour: Decimal | None  # realized value per A100-equivalent GPU-hour

    @property
    def ratio_pct(self) -> Decimal | None:
        return None if self.ratio is None else (self.ratio * 100).quantize(Decimal(1))


@dataclass(frozen=True)
class TrackRecord:
    """A team's record of outcomes against forecasts, for the review and the team's history."""

    team_id: int
    ratio: Decimal | None  # mean realized ÷ forecast over `counted` outcomes
    counted: int
    window: int  # how many of the latest outcomes the ratio reads (the policy's count)
    overdue: list[OutcomeLine] = field(default_factory=list)
    effect: str = "flag"

    @property
    def overdue_count(self) -> int:
        return len(self.overdue)

    @property
    def flagged(self) -> bool:
        """The review marks the team's requests: an overdue outcome under the flag or block effect."""
        return bool(self.overdue) and self.effect != "none"

    @property
    def ratio_pct(self) -> Decimal | None:
        return None if self.ratio is None else (self.ratio * 100).quantize(Decimal(1))


def overdue_effect(*, week: str) -> str:
    """What overdue outcomes do in `week`: "none", "flag" or "block" (the policy's `outcomes.overdue_effect`)."""
    return str(policy_value(key=OUTCOMES_OVERDUE_EFFECT, week=week))


def _ratio(value: Decimal | None, forecast: Decimal) -> Decimal | None:
    if value is None or forecast <= 0:
        return None
    return value / forecast


def _a100_gpu_hours(request_ids: Iterable[int]) -> dict[int, Decimal]:
    """Each request's current windows in A100-equivalent GPU-hours (the pool's billing weight of each window's week)."""
    windows = list(AllocationWindow.objects.filter(withdrawal__isnull=True, request_ref__in=set(request_ids))
                   .only("request_ref", "pool_id", "week", "gpu_count", "start", "end"))
    factors = usage_counted_factors(keys={(w.pool_id, w.week) for w in windows})
    out: dict[int, Decimal] = {}
    for w in windows:
        assert w.request_ref is not None
        hours = Decimal(w.gpu_count) * Decimal((w.end - w.start).total_seconds()) / 3600
        out[w.request_ref] = out.get(w.request_ref, Decimal(0)) + hours * factors[(w.pool_id, w.week)][0]
    return out


def outcome_lines(*, outcomes: Sequence[RealizedOutcome], now: datetime) -> list[OutcomeLine]:
    """The outcomes (with `request__impact_forecast` loaded) as lines, with their grants' GPU-hours in the common
    unit; three queries for any number."""
    gpu_hours = _a100_gpu_hours(o.request_id for o in outcomes)
    lines = []
    for o in outcomes:
        forecast = o.request.impact_forecast
        a100 = gpu_hours.get(o.request_id, Decimal(0)).quantize(Decimal("0.01"))
        lines.append(OutcomeLine(
            outcome=o, forecast_value=forecast.estimated_value, unit=forecast.value_unit,
            ratio=_ratio(o.value, forecast.estimated_value), overdue=o.reported_at is None and o.due_at <= now,
            a100_gpu_hours=a100,
            value_per_gpu_hour=None if o.value is None or not a100 else (o.value / a100).quantize(Decimal("0.01")),
        ))
    return lines


def _outcomes() -> QuerySet[RealizedOutcome]:
    return RealizedOutcome.objects.select_related("request__impact_forecast", "request__cycle")


def track_records(*, team_ids: Iterable[int], week: str, now: datetime | None = None) -> dict[int, TrackRecord]:
    """Each team's track record as of `now` under the policy in force in `week`; two queries, whatever the count."""
    now = now or timezone.now()
    team_ids = set(team_ids)
    if not team_ids:
        return {}
    values = policy_values(week=week, prefix="outcomes.")  # one query for the count and the effect
    count, effect = as_int(values[OUTCOMES_TRACK_RECORD_COUNT]), str(values[OUTCOMES_OVERDUE_EFFECT])
    rows = list(RealizedOutcome.objects.filter(team_id__in=team_ids)
                .filter(Q(reported_at__isnull=False) | Q(due_at__lte=now))
                .select_related("request__impact_forecast", "request__cycle").order_by("-last_window_end", "-id"))
    latest: dict[int, list[RealizedOutcome]] = {}
    overdue: dict[int, list[RealizedOutcome]] = {}
    for o in rows:
        if o.reported_at is None:
            overdue.setdefault(o.team_id, []).append(o)
        elif len(latest.setdefault(o.team_id, [])) < count:
            latest[o.team_id].append(o)
    records = {}
    for team_id in team_ids:
        ratios = [r for o in latest.get(team_id, [])
                  if (r := _ratio(o.value, o.request.impact_forecast.estimated_value)) is not None]
        late = [OutcomeLine(outcome=o, forecast_value=o.request.impact_forecast.estimated_value,
                            unit=o.request.impact_forecast.value_unit, ratio=None, overdue=True,
                            a100_gpu_hours=Decimal(0), value_per_gpu_hour=None)
                for o in overdue.get(team_id, [])]
        records[team_id] = TrackRecord(
            team_id=team_id, ratio=sum(ratios, Decimal(0)) / len(ratios) if ratios else None, counted=len(ratios),
            window=count, overdue=late, effect=effect,
        )
    return records


def review_rows_track_record(*, rows: Sequence[object], week: str) -> None:
    """Give each review row its team's `track_record` (the review page, next to each request)."""
    records = track_records(team_ids={row.request.team_id for row in rows}, week=week)  # type: ignore[attr-defined]
    for row in rows:
        row.track_record = records.get(row.request.team_id)  # type: ignore[attr-defined]


def team_outcomes(*, team: Team, now: datetime | None = None) -> list[OutcomeLine]:
    """Every outcome the team was asked for, latest grant first (the team's history page)."""
    now = now or timezone.now()
    return outcome_lines(outcomes=list(_outcomes().filter(team=team).order_by("-last_window_end", "-id")), now=now)


def overdue_block_reason(*, team: Team, week: str) -> str | None:
    """Why `team` may not file a new weekly request into `week`, or None when it may.

    Under `outcomes.overdue_effect` = block (in force in `week`), a team with an outcome not reported by its due day
    is refused new weekly requests until it reports; the sentence names the overdue grants. The fast lane does not
    ask this (it stays open to such a team)."""
    if overdue_effect(week=week) != "block":
        return None
    late = list(RealizedOutcome.objects.filter(team=team, reported_at__isnull=True, due_at__lte=timezone.now())
                .order_by("due_at", "id").values_list("request_id", "due_at"))
    if not late:
        return None
    refs = ", ".join(f"R-{pk}" for pk, _due in late)
    return _("%(team)s has not reported the realized outcome of %(refs)s (due since %(due)s): report it on the "
             "request's page before filing a new weekly request.") % {
        "team": team.name, "refs": refs, "due": format_day(late[0][1])}


def realized_per_gpu_hour(*, team_ids: Iterable[int] | None = None, since: datetime | None = None,
                          until: datetime | None = None) -> list[UnitTotal]:
    """Realized value per A100-equivalent GPU-hour, one line per forecast unit (values in different units are never
    added): the reported outcomes of `team_ids` (all teams for None) whose grants ended in [since, until)."""
    outcomes = _outcomes().filter(reported_at__isnull=False)
    if team_ids is not None:
        outcomes = outcomes.filter(team_id__in=set(team_ids))
    if since is not None:
        outcomes = outcomes.filter(last_window_end__gte=since)
    if until is not None:
        outcomes = outcomes.filter(last_window_end__lt=until)
    lines = outcome_lines(outcomes=list(outcomes), now=timezone.now())
    totals: dict[str, UnitTotal] = {}
    for line in lines:
        total = totals.setdefault(line.unit, UnitTotal(unit=line.unit))
        total.outcomes += 1
        total.value += line.outcome.value or Decimal(0)
        total.forecast += line.forecast_value
        total.a100_gpu_hours += line.a100_gpu_hours
    return sorted(totals.values(), key=lambda t: (-t.outcomes, t.unit))


@dataclass
class UnitTotal:
    """Realized and forecast value in one unit, over the GPU-hours (common unit) of the grants that produced it."""

    unit: str
    outcomes: int = 0
    value: Decimal = Decimal(0)
    forecast: Decimal = Decimal(0)
    a100_gpu_hours: Decimal = Decimal(0)

    @property
    def value_per_gpu_hour(self) -> Decimal | None:
        return (self.value / self.a100_gpu_hours).quantize(Decimal("0.01")) if self.a100_gpu_hours else None

    @property
    def ratio_pct(self) -> Decimal | None:
        return (self.value / self.forecast * 100).quantize(Decimal(1)) if self.forecast else None
