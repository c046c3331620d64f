"""Every write of the committee app. One function per operation; views, API and commands call these."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from allocations.models import Team
from committee import limits, selectors, signals, weeks
from committee.models import (
    Alternative,
    CycleStatus,
    GpuRequest,
    ImpactForecast,
    RequestEvent,
    RequestStatus,
    ReviewCycle,
    UsageReport,
)
from committee.services.discussion import request_parts, scores_mark_stale
from committee.services.notifications import notify_request_submitted
from core.audit import person_name
from core.errors import StateConflict

REQUEST_FIELDS = (
    "pool",
    "title",
    "gpu_count",
    "min_gpu_count",
    "duration_hours",
    "earliest_start",
    "latest_end",
    "preemptible_ok",
    "baseline_gpu_hours",
    "deadline",
    "slip_consequence",
)
USAGE_FIELDS = ("gpu_hours_granted", "gpu_hours_used", "mean_utilization_pct", "notes")
FORECAST_FIELDS = ("kind", "estimated_value", "value_unit", "confidence", "narrative")
ALTERNATIVE_FIELDS = ("description", "gpu_hours", "quality_change", "cost_estimate", "feasible")


def actor_name(user: User | None) -> str:
    """Who acted, as the audit columns copy it (core.audit.person_name: cut to fit)."""
    if user is None:
        return "system"
    return person_name(user)


def request_event_record(*, request: GpuRequest, actor: User | None, action: str, detail: str = "") -> None:
    RequestEvent.objects.create(request=request, actor_name=actor_name(actor), action=action, detail=detail)


def request_events_record(*, details: Iterable[tuple[GpuRequest, str]], actor: User | None, action: str) -> None:
    """The same event on many requests, each with its own detail, in one INSERT (a week's finalize or publish)."""
    name = actor_name(actor)
    at = timezone.now()
    RequestEvent.objects.bulk_create(
        RequestEvent(request=request, at=at, actor_name=name, action=action, detail=detail)
        for request, detail in details
    )


def cycle_create(*, week: str, status: str = CycleStatus.OPEN, **overrides: datetime) -> ReviewCycle:
    """Create the cycle that allocates `week` with the default calendar; idempotent on the week."""
    schedule = weeks.cycle_schedule(week)
    schedule.update(overrides)
    with transaction.atomic():
        cycle, created = ReviewCycle.objects.get_or_create(week=week, defaults={**schedule, "status": status})
        if created:
            signals.cycle_opened.send(sender=ReviewCycle, cycle=cycle, now=timezone.now())
            cycle.refresh_from_db()  # a receiver may have pinned another rubric version
    return cycle


def _check_can_edit(*, actor: User, team: Team, cycle: ReviewCycle, revising: bool = False) -> None:
    if not selectors.user_is_team_member(user=actor, team=team):
        raise PermissionDenied(_("Only members of %(team)s can file its requests.") % {"team": team.name})
    if not cycle.intake_open and not revising:
        raise StateConflict(
            _("Intake for %(week)s is closed; requests can no longer change.") % {"week": cycle.week}
        )


def _full_clean(instance: Any, *, exclude: Sequence[str] = ()) -> None:
    instance.full_clean(exclude=list(exclude))


def _write_evidence(
    *,
    gpu_request: GpuRequest,
    usage: Mapping[str, Any],
    forecast: Mapping[str, Any],
    alternatives: Sequence[Mapping[str, Any]],
) -> None:
    errors: dict[str, Any] = {}
    if len(alternatives) > limits.MAX_ALTERNATIVES:
        raise ValidationError({"alternatives": [
            _("List at most %(n)d alternatives; keep the ones the committee should weigh.")
            % {"n": limits.MAX_ALTERNATIVES}
        ]})
    usage_report = getattr(gpu_request, "usage_report", None) or UsageReport(request=gpu_request)
    for field in USAGE_FIELDS:
        setattr(usage_report, field, usage.get(field, "" if field == "notes" else None))
    impact = getattr(gpu_request, "impact_forecast", None) or ImpactForecast(request=gpu_request)
    for field in FORECAST_FIELDS:
        setattr(impact, field, forecast.get(field))
    rows = [Alternative(request=gpu_request, **{f: row.get(f) for f in ALTERNATIVE_FIELDS}) for row in alternatives]
    for row in rows:
        row.quality_change = row.quality_change or ""
        row.feasible = bool(row.feasible)
    for prefix, instance in [("usage", usage_report), ("forecast", impact)]:
        try:
            _full_clean(instance, exclude=["request"])
        except ValidationError as exc:
            errors.update({f"{prefix}.{key}": value for key, value in exc.message_dict.items()})
    for index, row in enumerate(rows):
        try:
            _full_clean(row, exclude=["request"])
        except ValidationError as exc:
            errors.update({f"alternatives.{index}.{key}": value for key, value in exc.message_dict.items()})
    if errors:
        raise ValidationError(errors)
    usage_report.save()
    impact.save()
    gpu_request.alternatives.all().delete()
    Alternative.objects.bulk_create(rows)


def _apply_fields(gpu_request: GpuRequest, fields: Mapping[str, Any]) -> None:
    for name in REQUEST_FIELDS:
        if name in fields:
            setattr(gpu_request, name, fields[name])
    if not gpu_request.slip_consequence:
        gpu_request.slip_consequence = ""


@transaction.atomic
def gpu_request_create(
    *,
    actor: User,
    team: Team,
    cycle: ReviewCycle,
    fields: Mapping[str, Any],
    usage: Mapping[str, Any],
    forecast: Mapping[str, Any],
    alternatives: Sequence[Mapping[str, Any]] = (),
) -> GpuRequest:
    """File a draft request for `team` in `cycle` with its evidence.

    Refused (PermissionDenied) unless the actor is a member of the team, and (ValidationError,
    nothing written) once intake is closed or when any field or invariant fails.
    """
    _check_can_edit(actor=actor, team=team, cycle=cycle)
    gpu_request = GpuRequest(team=team, cycle=cycle, created_by=actor, status=RequestStatus.DRAFT)
    _apply_fields(gpu_request, fields)
    _full_clean(gpu_request)
    gpu_request.save()
    _write_evidence(gpu_request=gpu_request, usage=usage, forecast=forecast, alternatives=alternatives)
    request_event_record(request=gpu_request, actor=actor, action="created")
    return gpu_request


def _lock(gpu_request: GpuRequest) -> GpuRequest:
    return GpuRequest.objects.select_for_update().select_related("cycle", "team", "pool").get(pk=gpu_request.pk)


@transaction.atomic
def gpu_request_update(
    *,
    actor: User,
    gpu_request: GpuRequest,
    fields: Mapping[str, Any],
    usage: Mapping[str, Any],
    forecast: Mapping[str, Any],
    alternatives: Sequence[Mapping[str, Any]],
) -> GpuRequest:
    """Change a draft or submitted request while intake is open; its alternatives are replaced whole.

    In review, a submitted request the committee has an open question on can still be revised
    (selectors.request_revisable_in_review); the members who scored it are told their scores are stale.
    """
    locked = _lock(gpu_request)
    _check_can_edit(
        actor=actor, team=locked.team, cycle=locked.cycle,
        revising=selectors.request_revisable_in_review(gpu_request=locked),
    )
    before = request_parts(gpu_request=locked)
    if locked.status not in (RequestStatus.DRAFT, RequestStatus.SUBMITTED):
        raise StateConflict(
            _("A %(status)s request cannot be edited.") % {"status": locked.get_status_display()}
        )
    _apply_fields(locked, fields)
    _full_clean(locked)
    locked.save()
    locked.usage_report = UsageReport.objects.filter(request=locked).first()
    locked.impact_forecast = ImpactForecast.objects.filter(request=locked).first()
    _write_evidence(gpu_request=locked, usage=usage, forecast=forecast, alternatives=alternatives)
    request_event_record(request=locked, actor=actor, action="edited")
    scores_mark_stale(gpu_request=locked, before=before)
    return locked


@transaction.atomic
def gpu_request_submit(*, actor: User, gpu_request: GpuRequest) -> GpuRequest:
    """Put a draft in front of the committee. Only while intake is open.

    Enqueues (outbox, in this transaction) the team's "request submitted" notification.
    """
    locked = _lock(gpu_request)
    _check_can_edit(actor=actor, team=locked.team, cycle=locked.cycle)
    if locked.status != RequestStatus.DRAFT:
        raise StateConflict(
            _("Only a draft can be submitted; this request is %(status)s.") % {"status": locked.get_status_display()}
        )
    locked.status = RequestStatus.SUBMITTED
    locked.submitted_by = actor
    locked.submitted_at = timezone.now()
    locked.save(update_fields=["status", "submitted_by", "submitted_at", "updated_at"])
    request_event_record(request=locked, actor=actor, action="submitted")
    notify_request_submitted(gpu_request=locked)
    return locked


@transaction.atomic
def gpu_request_withdraw(*, actor: User, gpu_request: GpuRequest) -> GpuRequest:
    """Take a draft or submitted request back. The team may then file a new one for the same pool."""
    locked = _lock(gpu_request)
    _check_can_edit(actor=actor, team=locked.team, cycle=locked.cycle)
    if locked.status not in (RequestStatus.DRAFT, RequestStatus.SUBMITTED):
        raise StateConflict(
            _("A %(status)s request cannot be withdrawn.") % {"status": locked.get_status_display()}
        )
    locked.status = RequestStatus.WITHDRAWN
    locked.save(update_fields=["status", "updated_at"])
    request_event_record(request=locked, actor=actor, action="withdrawn")
    return locked

