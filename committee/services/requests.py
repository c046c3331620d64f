"""Every write of the committee app. One function per operation; views, API and commands call these."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.utils import formats, timezone
from django.utils.translation import gettext as _

from allocations.models import GpuPool, Team
from committee import limits, selectors, signals, weeks
from committee.models import (
    Alternative,
    CycleStatus,
    DecisionOutcome,
    GpuRequest,
    ImpactForecast,
    NotificationKind,
    RequestEvent,
    RequestPoolOption,
    RequestStatus,
    ReviewCycle,
    TeamFiling,
    UsageReport,
)
from committee.services.discussion import request_parts, scores_mark_stale
from committee.services.notifications import notification_enqueue, notifications_record
from core.audit import person_name
from core.errors import StateConflict
from core.locks import write_transaction
from core.texts import stored_text, text_render
from governed.params import POOL_PREFIX
from governed.selectors import policy_values

REQUEST_FIELDS = (
    "pool",
    "title",
    "gpu_count",
    "min_gpu_count",
    "duration_hours",
    "earliest_start",
    "latest_end",
    "preemptible_ok",
    "run_weeks",
    "weekly_gpu_counts",
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


def request_event_record(
    *, request: GpuRequest, actor: User | None, action: str, detail: str = "",
    detail_text: dict[str, Any] | None = None, at: datetime | None = None,
) -> None:
    """One line of the request's history (at `at`, by default now); `detail_text` (core.texts.stored_text) renders
    `detail` per reader."""
    RequestEvent.objects.create(request=request, actor_name=actor_name(actor), action=action, detail=detail,
                                detail_text=detail_text or {}, at=at or timezone.now())


def request_events_record(
    *, details: Iterable[tuple[GpuRequest, dict[str, Any]]], actor: User | None, action: str
) -> None:
    """The same event on many requests, each with its own detail, in one INSERT (a week's finalize or publish).

    Each detail is a text Docket writes (core.texts.stored_text): kept as a code, read in the reader's language,
    and as written now in `detail`.
    """
    name = actor_name(actor)
    at = timezone.now()
    RequestEvent.objects.bulk_create(
        RequestEvent(request=request, at=at, actor_name=name, action=action, detail=text_render(stored),
                     detail_text=stored)
        for request, stored in details
    )


def cycle_create(*, week: str, status: str = CycleStatus.OPEN, **overrides: datetime) -> ReviewCycle:
    """Create the cycle that allocates `week` with the default calendar; idempotent on the week."""
    schedule = weeks.cycle_schedule(week)
    schedule.update(overrides)
    with transaction.atomic():
        cycle, created = ReviewCycle.objects.get_or_create(week=week, defaults={**schedule, "status": status})
        if created:
            signals.cycle_opened.send(sender=ReviewCycle, cycle=cycle, now=timezone.now())
    return cycle


def _check_can_edit(*, actor: User, team: Team, cycle: ReviewCycle, revising: bool = False) -> None:
    if not selectors.user_is_team_member(user=actor, team=team):
        raise PermissionDenied(_("Only members of %(team)s can file its requests.") % {"team": team.name})
    if not cycle.intake_open and not revising:
        raise StateConflict(
            _("Intake for %(week)s is closed; requests can no longer change.") % {"week": cycle.week}
        )


def _when(moment: datetime) -> str:
    """A moment as the committee reads it: weekday, date and 24-hour time in its zone, the zone named."""
    return formats.date_format(timezone.localtime(moment, weeks.committee_zone()), _("D j M Y, H:i T"))


def _merge(errors: dict[str, list[str]], more: Mapping[str, Sequence[str]]) -> None:
    for key, messages in more.items():
        kept = errors.setdefault(key, [])
        kept.extend(str(m) for m in messages if str(m) not in kept)


def request_problems(
    *,
    team: Team | None,
    cycle: ReviewCycle,
    fields: Mapping[str, Any],
    alternatives: Sequence[Mapping[str, Any]] = (),
    gpu_request: GpuRequest | None = None,
) -> dict[str, list[str]]:
    """The rules of a request that span fields, its week and its team's other requests, keyed by field.

    Each rule is checked with whatever of its fields is present, so a form whose other fields failed
    still hears every rule its good fields break (no errors in rounds). Nothing is written. The rules:
    the window lies within the cycle's week; the deadline is not before the window's earliest start; the
    baseline plan needs at least the GPU-hours requested; no alternative needs more GPU-hours than the
    request; the team has no other active request on the pool that week; a run spans at most the policy's
    grants.max_weeks in force in the cycle's week, and a run over several weeks has a window that reaches the end of
    the cycle's week (it continues, without a gap, into the next).
    """
    errors: dict[str, list[str]] = {}
    start, end = fields.get("earliest_start"), fields.get("latest_end")
    _merge(errors, selectors.run_weeks_problems(
        cycle=cycle, run_weeks=fields.get("run_weeks"), latest_end=end if isinstance(end, datetime) else None,
    ))
    gpu_count, hours = fields.get("gpu_count"), fields.get("duration_hours")
    _merge(errors, selectors.weekly_gpu_counts_problems(
        run_weeks=fields.get("run_weeks"), gpu_count=gpu_count, weekly_gpu_counts=fields.get("weekly_gpu_counts"),
        pool=fields["pool"] if isinstance(fields.get("pool"), GpuPool) else None,
    ))
    if isinstance(start, datetime) and start < cycle.starts_at:
        errors["earliest_start"] = [
            _("The window must lie within week %(week)s: start at %(start)s or later.")
            % {"week": cycle.week, "start": _when(cycle.starts_at)}
        ]
    if isinstance(end, datetime) and end > cycle.ends_at:
        errors["latest_end"] = [
            _("The window must lie within week %(week)s: end by %(end)s.")
            % {"week": cycle.week, "end": _when(cycle.ends_at)}
        ]
    deadline = fields.get("deadline")
    if isinstance(deadline, datetime) and isinstance(start, datetime) and deadline < start:
        errors["deadline"] = [
            _("The deadline is before the window opens: the work can start %(start)s at the earliest.")
            % {"start": _when(start)}
        ]
    requested = gpu_count * hours if isinstance(gpu_count, int) and isinstance(hours, int) else None
    baseline = fields.get("baseline_gpu_hours")
    if requested is not None and isinstance(baseline, int) and 0 < baseline < requested:
        errors["baseline_gpu_hours"] = [
            _("The baseline plan (%(baseline)s GPU-hours) is smaller than this request (%(requested)s GPU-hours): "
              "it is what the work needed before the team made it cheaper.")
            % {"baseline": f"{baseline:,}", "requested": f"{requested:,}"}
        ]
    if requested is not None:
        for index, row in enumerate(alternatives):
            alt_hours = row.get("gpu_hours")
            if isinstance(alt_hours, int) and alt_hours > requested:
                errors[f"alternatives.{index}.gpu_hours"] = [
                    _("An alternative is a cheaper way: this one needs %(alt)s GPU-hours, more than the "
                      "%(requested)s requested.") % {"alt": f"{alt_hours:,}", "requested": f"{requested:,}"}
                ]
    pool = fields.get("pool")
    if team is not None and pool is not None:
        other = selectors.request_active_on_pool(team=team, pool=pool, cycle=cycle)
        if other is not None and (gpu_request is None or other.pk != gpu_request.pk):
            errors["pool"] = [
                _("Your team already has an active request for this pool in this cycle: “%(title)s”. "
                  "Edit that one instead.") % {"title": other.title}
            ]
    return errors


def _clean_errors(instance: Any, *, exclude: Sequence[str] = ()) -> dict[str, list[str]]:
    """Every field and row error of `instance` (its constraints are the database's and request_problems')."""
    try:
        instance.full_clean(exclude=list(exclude), validate_constraints=False)
    except ValidationError as exc:
        return {key: [str(m) for m in value] for key, value in exc.message_dict.items()}
    return {}


def _evidence_rows(
    *, gpu_request: GpuRequest, usage: Mapping[str, Any], forecast: Mapping[str, Any],
    alternatives: Sequence[Mapping[str, Any]],
) -> tuple[UsageReport, ImpactForecast, list[Alternative], dict[str, list[str]]]:
    """The evidence rows to write, and every error they have, keyed usage.*, forecast.*, alternatives.N.*."""
    errors: dict[str, list[str]] = {}
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
        found = _clean_errors(instance, exclude=["request"])
        _merge(errors, {f"{prefix}.{key}": value for key, value in found.items()})
    for index, row in enumerate(rows):
        _merge(errors, {f"alternatives.{index}.{key}": value
                        for key, value in _clean_errors(row, exclude=["request"]).items()})
    return usage_report, impact, rows, errors


def _pool_option_rows(
    *, gpu_request: GpuRequest, pool_options: Sequence[Mapping[str, Any]]
) -> tuple[list[RequestPoolOption], dict[str, list[str]]]:
    """The other pools a request names, in the team's order, and every error, keyed pool_options.N.*: each a pool
    other than the request's own and named once, with GPUs and hours from 1, no more GPUs than the pool has and no
    more hours than the request's window holds. GPUs or hours left out take the conversion offered from the pools'
    billing weights (`selectors.pool_option_default`)."""
    if len(pool_options) > limits.MAX_POOL_OPTIONS:
        raise ValidationError({"pool_options": [
            _("Name at most %(n)d other pools.") % {"n": limits.MAX_POOL_OPTIONS}
        ]})
    errors: dict[str, list[str]] = {}
    rows: list[RequestPoolOption] = []
    own = gpu_request.pool if gpu_request.pool_id else None
    values = policy_values(week=gpu_request.cycle.week, prefix=POOL_PREFIX) if pool_options else {}
    window_hours = None
    if isinstance(gpu_request.earliest_start, datetime) and isinstance(gpu_request.latest_end, datetime):
        window_hours = int((gpu_request.latest_end - gpu_request.earliest_start).total_seconds() // 3600)
    seen: set[int] = set()
    for index, option in enumerate(pool_options):
        key = f"pool_options.{index}"
        pool = option.get("pool")
        if not isinstance(pool, GpuPool):
            errors[f"{key}.pool"] = [_("Choose a GPU pool.")]
            continue
        if own is not None and pool.pk == own.pk:
            errors[f"{key}.pool"] = [
                _("%(pool)s is the request's own pool: name another pool it could run on.") % {"pool": pool.key}]
            continue
        if pool.pk in seen:
            errors[f"{key}.pool"] = [_("%(pool)s is named twice: name each pool once.") % {"pool": pool.key}]
            continue
        seen.add(pool.pk)
        gpus, hours = option.get("gpu_count"), option.get("duration_hours")
        if (gpus is None or hours is None) and own is not None and isinstance(gpu_request.gpu_count, int) \
                and isinstance(gpu_request.duration_hours, int):
            default_gpus, default_hours = selectors.pool_option_default(
                pool=own, other=pool, gpu_count=gpu_request.gpu_count, duration_hours=gpu_request.duration_hours,
                values=values)
            gpus = default_gpus if gpus is None else gpus
            hours = default_hours if hours is None else hours
        if not isinstance(gpus, int) or isinstance(gpus, bool) or gpus < 1:
            errors[f"{key}.gpu_count"] = [_("Give the GPUs it needs on %(pool)s, a whole number from 1.")
                                          % {"pool": pool.key}]
        elif gpus > pool.gpu_count:
            errors[f"{key}.gpu_count"] = [_("%(pool)s has %(count)d GPUs: ask for at most that many there.")
                                          % {"pool": pool.key, "count": pool.gpu_count}]
        if not isinstance(hours, int) or isinstance(hours, bool) or hours < 1:
            errors[f"{key}.duration_hours"] = [_("Give the hours it needs on %(pool)s, a whole number from 1.")
                                               % {"pool": pool.key}]
        elif window_hours is not None and hours > window_hours:
            errors[f"{key}.duration_hours"] = [
                _("%(hours)d hours do not fit in the request's window of %(window)d hours.")
                % {"hours": hours, "window": window_hours}]
        if isinstance(gpus, int) and isinstance(hours, int) and f"{key}.gpu_count" not in errors \
                and f"{key}.duration_hours" not in errors:
            rows.append(RequestPoolOption(request=gpu_request, position=index + 1, pool=pool, gpu_count=gpus,
                                          duration_hours=hours))
    return rows, errors


def _check_all(
    *, gpu_request: GpuRequest, fields: Mapping[str, Any], usage: Mapping[str, Any], forecast: Mapping[str, Any],
    alternatives: Sequence[Mapping[str, Any]], pool_options: Sequence[Mapping[str, Any]] = (),
) -> tuple[UsageReport, ImpactForecast, list[Alternative], list[RequestPoolOption]]:
    """Every error of the request, its evidence, its other pools and its rules, raised together as one
    ValidationError."""
    errors = _clean_errors(gpu_request, exclude=["team", "cycle"])
    usage_report, impact, rows, evidence_errors = _evidence_rows(
        gpu_request=gpu_request, usage=usage, forecast=forecast, alternatives=alternatives
    )
    _merge(errors, evidence_errors)
    option_rows, option_errors = _pool_option_rows(gpu_request=gpu_request, pool_options=pool_options)
    _merge(errors, option_errors)
    checked = {name: getattr(gpu_request, name, None) for name in REQUEST_FIELDS if name != "pool"}
    checked["pool"] = gpu_request.pool if gpu_request.pool_id else None
    _merge(errors, request_problems(
        team=gpu_request.team, cycle=gpu_request.cycle, fields=checked, alternatives=alternatives,
        gpu_request=gpu_request if gpu_request.pk else None,
    ))
    if errors:
        raise ValidationError(errors)
    return usage_report, impact, rows, option_rows


def _write_evidence(
    *, gpu_request: GpuRequest, usage_report: UsageReport, impact: ImpactForecast, rows: list[Alternative],
    option_rows: list[RequestPoolOption],
) -> None:
    usage_report.request = gpu_request
    impact.request = gpu_request
    for row in rows:
        row.request = gpu_request
    usage_report.save()
    impact.save()
    gpu_request.alternatives.all().delete()
    Alternative.objects.bulk_create(rows)
    for option in option_rows:
        option.request = gpu_request
    gpu_request.pool_options.all().delete()
    RequestPoolOption.objects.bulk_create(option_rows)


def _apply_fields(gpu_request: GpuRequest, fields: Mapping[str, Any]) -> None:
    for name in REQUEST_FIELDS:
        if name in fields:
            setattr(gpu_request, name, fields[name])
    if not gpu_request.slip_consequence:
        gpu_request.slip_consequence = ""


@write_transaction
def request_create(
    *,
    actor: User,
    team: Team,
    cycle: ReviewCycle,
    fields: Mapping[str, Any],
    usage: Mapping[str, Any],
    forecast: Mapping[str, Any],
    alternatives: Sequence[Mapping[str, Any]] = (),
    pool_options: Sequence[Mapping[str, Any]] = (),
    carried_from: GpuRequest | None = None,
    extends_run: GpuRequest | None = None,
    detail: str = "",
    detail_text: dict[str, Any] | None = None,
) -> GpuRequest:
    """File a draft request for `team` in `cycle` with its evidence.

    Refused (PermissionDenied) unless the actor is a member of the team, and (ValidationError,
    nothing written) once intake is closed or when any field or rule fails: every error of the
    request, its evidence, its other pools (`pool_options`: pool, GPUs and hours there, the team's order; GPUs or
    hours left out take the conversion offered) and request_problems is raised together, keyed by field. `detail`
    goes into the "created" event (where a copied request came from), `detail_text` beside it as a
    code (core.texts) that renders it in the reader's language.
    """
    _check_can_edit(actor=actor, team=team, cycle=cycle)
    gpu_request = GpuRequest(
        team=team, cycle=cycle, created_by=actor, status=RequestStatus.DRAFT, carried_from=carried_from,
        extends_run=extends_run,
    )
    _apply_fields(gpu_request, fields)
    usage_report, impact, rows, option_rows = _check_all(
        gpu_request=gpu_request, fields=fields, usage=usage, forecast=forecast, alternatives=alternatives,
        pool_options=pool_options,
    )
    gpu_request.save()
    _write_evidence(gpu_request=gpu_request, usage_report=usage_report, impact=impact, rows=rows,
                    option_rows=option_rows)
    request_event_record(request=gpu_request, actor=actor, action="created", detail=detail, detail_text=detail_text)
    return gpu_request


def _lock(gpu_request: GpuRequest) -> GpuRequest:
    # The request's row only: the team, cycle and pool rows it joins are shared with every other writer (usage
    # posts lock the pool), and locking them here too deadlocked a request edit against a usage post.
    return GpuRequest.objects.select_for_update(of=("self",), no_key=True).select_related("cycle", "team", "pool").get(
        pk=gpu_request.pk)


@write_transaction
def request_update(
    *,
    actor: User,
    gpu_request: GpuRequest,
    fields: Mapping[str, Any],
    usage: Mapping[str, Any],
    forecast: Mapping[str, Any],
    alternatives: Sequence[Mapping[str, Any]],
    pool_options: Sequence[Mapping[str, Any]] | None = None,
) -> GpuRequest:
    """Change a draft or submitted request while intake is open; its alternatives are replaced whole, and so are its
    other pools when `pool_options` is given (None keeps them, checked again against the changed request).

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
    locked.usage_report = UsageReport.objects.filter(request=locked).first()
    locked.impact_forecast = ImpactForecast.objects.filter(request=locked).first()
    if pool_options is None:
        pool_options = [{"pool": o.pool, "gpu_count": o.gpu_count, "duration_hours": o.duration_hours}
                        for o in locked.pool_options.select_related("pool__cluster")]
    usage_report, impact, rows, option_rows = _check_all(
        gpu_request=locked, fields=fields, usage=usage, forecast=forecast, alternatives=alternatives,
        pool_options=pool_options,
    )
    locked.save()
    _write_evidence(gpu_request=locked, usage_report=usage_report, impact=impact, rows=rows,
                    option_rows=option_rows)
    request_event_record(request=locked, actor=actor, action="edited")
    scores_mark_stale(gpu_request=locked, before=before)
    return locked


def request_submit(*, actor: User, gpu_request: GpuRequest) -> GpuRequest:
    """Put a draft in front of the committee. Only while intake is open.

    Where the team has chosen "members draft, the lead submits" (TeamFiling), a member who is not a
    lead is refused (StateConflict); the refusal is recorded first, in its own transaction: the
    team's leads are told a draft awaits them (a notification), and the request's history says so.
    Enqueues (outbox, in this transaction) the team's "request submitted" notification.
    """
    if selectors.team_lead_submits(team=gpu_request.team) and not selectors.user_is_team_lead(
        user=actor, team=gpu_request.team
    ):
        _ask_lead(actor=actor, gpu_request=gpu_request)
        raise StateConflict(
            _("In %(team)s the lead submits. The draft is saved and %(leads)s has been told it awaits.")
            % {"team": gpu_request.team.name, "leads": _lead_names(gpu_request.team)}
        )
    return _submit(actor=actor, gpu_request=gpu_request)


def _lead_names(team: Team) -> str:
    leads = User.objects.filter(pk__in=selectors.team_lead_ids(team=team)).order_by("username")
    return ", ".join(actor_name(user) for user in leads) or _("the team's lead")


@write_transaction
def _ask_lead(*, actor: User, gpu_request: GpuRequest) -> None:
    locked = _lock(gpu_request)
    _check_can_edit(actor=actor, team=locked.team, cycle=locked.cycle)
    if locked.status != RequestStatus.DRAFT:
        raise StateConflict(
            _("Only a draft can be submitted; this request is %(status)s.") % {"status": locked.get_status_display()}
        )
    request_event_record(request=locked, actor=actor, action="awaiting lead")
    notifications_record(
        recipient_ids=selectors.team_lead_ids(team=locked.team),
        kind=NotificationKind.DRAFT_AWAITS_LEAD,
        key=f"request:{locked.pk}:awaits:{locked.events.count()}",
        params={"team": locked.team.name, "title": locked.title, "week": locked.cycle.week, "by": actor_name(actor),
                "request_id": locked.pk},
    )


@write_transaction
def _submit(*, actor: User, gpu_request: GpuRequest) -> GpuRequest:
    locked = _lock(gpu_request)
    _check_can_edit(actor=actor, team=locked.team, cycle=locked.cycle)
    if locked.status != RequestStatus.DRAFT:
        raise StateConflict(
            _("Only a draft can be submitted; this request is %(status)s.") % {"status": locked.get_status_display()}
        )
    # Outcomes against forecasts: under the "block" effect a team with an overdue outcome files no new weekly request
    # (docs/outcomes.md); the fast lane does not pass here.
    if (blocked := selectors.overdue_block_reason(team=locked.team, week=locked.cycle.week)) is not None:
        raise StateConflict(blocked)
    locked.status = RequestStatus.SUBMITTED
    locked.submitted_by = actor
    locked.submitted_at = timezone.now()
    locked.save(update_fields=["status", "submitted_by", "submitted_at", "updated_at"])
    request_event_record(request=locked, actor=actor, action="submitted")
    notification_enqueue(kind=NotificationKind.REQUEST_SUBMITTED, gpu_request=locked)
    return locked


@write_transaction
def request_return(*, actor: User, gpu_request: GpuRequest, note: str) -> GpuRequest:
    """A team lead sends a member's draft back with a note instead of submitting it; it stays a draft.

    Only a lead of the team, only a draft, only while intake is open; the note is required. The
    draft's author is told (a notification) and the history keeps the note.
    """
    locked = _lock(gpu_request)
    _check_can_edit(actor=actor, team=locked.team, cycle=locked.cycle)
    if not selectors.user_is_team_lead(user=actor, team=locked.team):
        raise PermissionDenied(_("Only a lead of %(team)s sends its drafts back.") % {"team": locked.team.name})
    if locked.status != RequestStatus.DRAFT:
        raise StateConflict(
            _("Only a draft can be sent back; this request is %(status)s.") % {"status": locked.get_status_display()}
        )
    note = (note or "").strip()
    if not note:
        raise ValidationError({"note": [_("Say what the draft needs: the author reads the note.")]})
    if len(note) > limits.REASON_MAX_LENGTH:
        raise ValidationError({"note": [
            _("Keep the note under %(n)d characters.") % {"n": limits.REASON_MAX_LENGTH}
        ]})
    request_event_record(request=locked, actor=actor, action="returned", detail=note)
    if locked.created_by_id is not None:
        notifications_record(
            recipient_ids=[locked.created_by_id],
            kind=NotificationKind.DRAFT_RETURNED,
            key=f"request:{locked.pk}:returned:{locked.events.count()}",
            params={"team": locked.team.name, "title": locked.title, "week": locked.cycle.week,
                    "by": actor_name(actor), "note": note, "request_id": locked.pk},
        )
    return locked


@write_transaction
def team_filing_set(*, actor: User, team: Team, lead_submits: bool) -> TeamFiling:
    """A lead of `team` chooses whether its members submit (off, the default) or only draft for a lead."""
    if not selectors.user_is_team_lead(user=actor, team=team):
        raise PermissionDenied(_("Only a lead of %(team)s changes how it files.") % {"team": team.name})
    filing, _created = TeamFiling.objects.select_for_update(no_key=True).get_or_create(team=team)
    filing.lead_submits = lead_submits
    filing.changed_by_name = actor_name(actor)
    filing.changed_at = timezone.now()
    filing.save()
    return filing


@write_transaction
def request_carry(*, actor: User, gpu_request: GpuRequest, cycle: ReviewCycle) -> GpuRequest:
    """Carry a request deferred in a finalized or published week into `cycle`'s intake, on the team's word.

    `cycle` is the week after the original's ("next week's intake"). Makes a draft in `cycle` linked to
    the original (`carried_from`), with its evidence copied and its window and deadline moved into
    `cycle`'s week (selectors.request_copy); the usage is `cycle`'s pre-fill where the schedulers
    measured it. The team reviews and submits it. Refused (StateConflict) unless the original was
    deferred in a finalized or published week, while `cycle`'s intake is open, and once per request
    and week; the team's
    duplicate-on-pool rule holds as for any new request.
    """
    locked = _lock(gpu_request)
    _check_can_edit(actor=actor, team=locked.team, cycle=cycle)
    decision = getattr(locked, "decision", None)
    if (
        locked.cycle.status not in (CycleStatus.FINALIZED, CycleStatus.PUBLISHED)
        or decision is None or decision.outcome != DecisionOutcome.DEFER
    ):
        raise StateConflict(_("Only a request the committee deferred in a finalized week can be carried."))
    if locked.cycle.week != selectors.week_before(cycle):
        raise StateConflict(
            _("A request deferred in week %(week)s is carried into the next week's intake only.")
            % {"week": locked.cycle.week}
        )
    earlier = GpuRequest.objects.filter(carried_from=locked, cycle=cycle).first()
    if earlier is not None:
        raise StateConflict(
            _("This request was already carried into week %(week)s: “%(title)s”.")
            % {"week": cycle.week, "title": earlier.title}
        )
    carried = stored_text("request_carried", week=locked.cycle.week)
    copy = selectors.request_copy(source=locked, cycle=cycle)
    prefill = selectors.usage_prefill(team=locked.team, pool=locked.pool, cycle=cycle)
    try:
        return request_create(
            actor=actor, team=locked.team, cycle=cycle, fields=copy.fields, usage={**copy.usage, **prefill.initial},
            forecast=copy.forecast, alternatives=copy.alternatives, pool_options=copy.pool_options, carried_from=locked,
            detail=text_render(carried), detail_text=carried,
        )
    except ValidationError as exc:
        if hasattr(exc, "error_dict") and "pool" in exc.error_dict:
            raise StateConflict(exc.error_dict["pool"]) from None
        raise


@write_transaction
def request_withdraw(*, actor: User, gpu_request: GpuRequest) -> GpuRequest:
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

