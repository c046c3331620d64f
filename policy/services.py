"""Every write of the policy lab: file a proposal, comment, vote, adopt or decline it, apply it, record its result.

At most one substantive change takes effect per ISO week (the adopted proposals' effective weeks are unique in the
database too, and so are the store's). An adopted change is recorded at adoption in the one store of governed
parameters (governed), from its effective week, through the one service every path uses; the rubric is read from
there for each week, and so are the elastic thresholds and a pool's reserves: the adoption is the last write. Each
step is sent to the archive after commit (policy.signals).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils.translation import gettext as _

from allocations.models import GpuPool, Team
from committee import selectors as committee_selectors
from committee import weeks
from core.audit import person_name
from core.errors import RoleRequired, StateConflict
from core.locks import write_transaction
from core.texts import stored_text, text_render
from governed.models import ChangeSource
from governed.selectors import policy_week_change
from governed.services import policy_change_record, week_taken_message
from policy import parameters, selectors, signals
from policy.models import (
    TEXT_MAX,
    BenchmarkFigure,
    FigureMetric,
    FigureStage,
    Proposal,
    ProposalChange,
    ProposalComment,
    ProposalStatus,
    ProposalVote,
    VoteChoice,
)

logger = logging.getLogger(__name__)

TITLE_MAX = 200
FIGURES_MAX = 12
FIGURE_FIELDS = ("metric", "label", "baseline", "value", "unit")


def _send(proposal: Proposal, step: str, summary: str) -> None:
    transaction.on_commit(
        lambda: signals.proposal_step.send(sender=Proposal, proposal=proposal, step=step, summary=summary)
    )


def _text(value: str | None, *, name: str, required: str, errors: dict[str, list[str]], limit: int = TEXT_MAX) -> str:
    text = (value or "").replace("\x00", "").strip()
    if not text:
        errors.setdefault(name, []).append(required)
    elif len(text) > limit:
        errors.setdefault(name, []).append(_("At most %(n)d characters.") % {"n": limit})
    return text


def _require_chair(actor: User, doing: str) -> None:
    if not committee_selectors.user_is_chair(user=actor):
        raise RoleRequired(
            _("Only the chair can %(doing)s a proposal.") % {"doing": doing}, role=_("the chair's seat"),
        )


def _figures(rows: Sequence[Mapping[str, Any]], *, errors: dict[str, list[str]], stage: str) -> list[BenchmarkFigure]:
    """Benchmark figures from rows of metric, label, baseline, value, unit; blank rows are skipped."""
    out: list[BenchmarkFigure] = []
    rows = [r for r in rows if any(str(r.get(f) or "").strip() for f in FIGURE_FIELDS if f != "metric")]
    if len(rows) > FIGURES_MAX:
        errors.setdefault("figures", []).append(_("At most %(n)d figures.") % {"n": FIGURES_MAX})
        return out
    for n, row in enumerate(rows, start=1):
        metric = str(row.get("metric") or "")
        problems: list[str] = []
        if metric not in FigureMetric.values:
            problems.append(_("choose what was measured"))
        numbers: dict[str, Decimal | None] = {}
        for field in ("baseline", "value"):
            raw = str(row.get(field) or "").strip().replace(",", "")
            if not raw:
                numbers[field] = None
                continue
            try:
                number = Decimal(raw)
                if not number.is_finite() or abs(number) >= Decimal("1e11") or number != number.quantize(
                        Decimal("0.001")):
                    raise InvalidOperation
                numbers[field] = number
            except InvalidOperation:
                problems.append(_("“%(value)s” is not a number with at most three decimals") % {"value": raw})
        if numbers.get("value") is None and not any("not a number" in p for p in problems):
            problems.append(_("give the measured value"))
        unit = str(row.get("unit") or "").strip()
        if not unit:
            problems.append(_("give the unit (samples/s, ms, € per week…)"))
        elif len(unit) > 30:
            problems.append(_("keep the unit under 30 characters"))
        label = str(row.get("label") or "").strip()[:200]
        if problems:
            errors.setdefault("figures", []).append(
                _("Figure %(n)d: %(problems)s.") % {"n": n, "problems": "; ".join(problems)})
            continue
        value = numbers["value"]
        assert value is not None  # a missing value is a problem above
        out.append(BenchmarkFigure(stage=stage, metric=metric, label=label, baseline=numbers["baseline"],
                                   value=value, unit=unit))
    return out


@write_transaction
def proposal_submit(
    *,
    actor: User,
    title: str,
    reason: str,
    expected_effect: str,
    changes: Mapping[str, str],
    figures: Sequence[Mapping[str, Any]] = (),
) -> Proposal:
    """Anyone signed in files a proposal: the parameters it changes (key → new value), why, the expected effect,
    and staging benchmark figures (numbers with units).

    Each change is checked against the vocabulary and today's values (policy.parameters.changes_errors: unknown
    key, out of range, weights not summing to 100, a pool's reserve and standby reaching 100 %, no change).
    Every problem is reported at once (ValidationError by field) and nothing is stored. Records today's value of
    each parameter as its old value. After commit the archive writes the proposal's page ("filed").
    """
    errors: dict[str, list[str]] = {}
    title = _text(title, name="title", required=_("Give the proposal a title."), errors=errors, limit=TITLE_MAX)
    reason = _text(reason, name="reason", required=_("Say why the policy should change."), errors=errors)
    expected_effect = _text(expected_effect, name="expected_effect", errors=errors,
                            required=_("Say what you expect the change to do, in numbers where you can."))
    known = parameters.parameter_list()
    current = parameters.current_values()
    parsed, problems = parameters.changes_errors(changes, current=current, parameters=known)
    if problems:
        errors["changes"] = problems
    rows = _figures(figures, errors=errors, stage=FigureStage.STAGING)
    if errors:
        raise ValidationError(errors)
    by_key = {p.key: p for p in known}
    proposal = Proposal.objects.create(
        title=title, reason=reason, expected_effect=expected_effect, proposer=actor, proposer_name=person_name(actor),
    )
    ProposalChange.objects.bulk_create(
        ProposalChange(proposal=proposal, key=key, label=by_key[key].label, unit=by_key[key].unit,
                       old_value=parameters.value_text(current[key]), new_value=parameters.value_text(value))
        for key, value in parsed.items()
    )
    for figure in rows:
        figure.proposal = proposal
    BenchmarkFigure.objects.bulk_create(rows)
    _send(proposal, "filed", _("Proposal filed by %(who)s") % {"who": proposal.proposer_name})
    return proposal


def _team_for(actor: User, team: Team | None, errors: dict[str, list[str]]) -> str:
    if team is None:
        return ""
    if not committee_selectors.user_is_team_member(user=actor, team=team):
        errors.setdefault("team", []).append(
            _("You can speak only for a team you belong to; %(team)s is not one.") % {"team": team.name})
        return ""
    return team.name


def _lock_open(proposal: Proposal, doing: str) -> Proposal:
    locked = Proposal.objects.select_for_update(no_key=True).get(pk=proposal.pk)
    if locked.status != ProposalStatus.OPEN:
        raise StateConflict(
            _("This proposal is %(status)s: it can no longer be %(doing)s.")
            % {"status": locked.get_status_display().lower(), "doing": doing}
        )
    return locked


@write_transaction
def proposal_comment(*, actor: User, proposal: Proposal, body: str, team: Team | None = None) -> ProposalComment:
    """Anyone signed in comments on a proposal, for themself or for a team they belong to. Comments stay open
    after the decision (the observed result is discussed too). After commit the archive records it."""
    errors: dict[str, list[str]] = {}
    body = _text(body, name="body", required=_("Write a comment."), errors=errors)
    team_name = _team_for(actor, team, errors)
    if errors:
        raise ValidationError(errors)
    comment = ProposalComment.objects.create(
        proposal=proposal, author=actor, author_name=person_name(actor), team_name=team_name, body=body)
    who = comment.author_name + (f" ({team_name})" if team_name else "")
    _send(proposal, "commented", _("Comment by %(who)s") % {"who": who})
    return comment


@write_transaction
def proposal_vote(
    *, actor: User, proposal: Proposal, choice: str, comment: str, team: Team | None = None, now: datetime
) -> ProposalVote:
    """Anyone signed in votes support or against, with a comment: one vote per person, changed by voting again.

    Refused once the proposal is decided (StateConflict). Voting again with the same choice and comment changes
    nothing and records no step. After commit the archive records the vote.
    """
    locked = _lock_open(proposal, _("voted on"))
    errors: dict[str, list[str]] = {}
    if choice not in VoteChoice.values:
        errors["choice"] = [_("Vote support or against.")]
    comment = _text(comment, name="comment", required=_("Say in a sentence why you vote so."), errors=errors)
    team_name = _team_for(actor, team, errors)
    if errors:
        raise ValidationError(errors)
    vote = ProposalVote.objects.select_for_update(no_key=True).filter(proposal=locked, voter=actor).first()
    if vote is not None and (vote.choice, vote.comment, vote.team_name) == (choice, comment, team_name):
        return vote
    changed = vote is not None
    if vote is None:
        vote = ProposalVote(proposal=locked, voter=actor, created_at=now)
    vote.voter_name, vote.team_name, vote.choice, vote.comment, vote.updated_at = (
        person_name(actor), team_name, choice, comment, now)
    vote.save()
    label = VoteChoice(choice).label
    summary = (_("%(who)s changed their vote to %(choice)s") if changed else _("%(who)s voted %(choice)s")) % {
        "who": vote.voter_name, "choice": str(label).lower()}
    _send(locked, "voted", summary)
    return vote


def _week_errors(effective_week: str, *, now: datetime, errors: dict[str, list[str]]) -> str:
    """The effective week as YYYY-Www, or errors: malformed, in the past, or before the earliest possible week."""
    raw = (effective_week or "").strip().upper()
    try:
        monday = weeks.parse_week(raw)
    except ValueError:
        errors.setdefault("effective_week", []).append(_("Give the week as YYYY-Www, for example 2027-W01."))
        return raw
    week = weeks.week_label(monday)
    earliest = selectors.week_earliest(now=now)
    if monday < weeks.parse_week(earliest):
        current = weeks.current_week_label(now)
        if monday <= weeks.parse_week(current):
            message = _("Week %(week)s has begun or is past; a change takes effect from a week to come, at the "
                        "earliest %(earliest)s.")
        else:
            message = _("The cycle of week %(week)s is already open, so its rules are fixed; the earliest week a "
                        "change can take effect from is %(earliest)s.")
        errors.setdefault("effective_week", []).append(message % {"week": week, "earliest": earliest})
    return week


@write_transaction
def proposal_adopt(*, actor: User, proposal: Proposal, effective_week: str, reason: str, now: datetime) -> Proposal:
    """The chair adopts a proposal, effective from an ISO week to come, with a reason.

    Refused (ValidationError listing every problem, nothing written) when the reason is empty, the week is
    malformed, past or already open, or the changes no longer fit today's values; refused as a StateConflict
    naming the next free week when another change is already adopted for that week (also when two adoptions
    race: the database's unique constraints decide), or when a change made elsewhere (the rubric page) holds it.
    Every change is recorded at once in the one store (governed.services.policy_change_record), effective from
    that week, which is what the readers read; the rubric's version, a pool's fields and the elastic policy's
    version are still written when the week comes (`adoptions_apply_due`) for what reads them there. After commit
    the archive records the adoption.
    """
    _require_chair(actor, _("adopt"))
    locked = _lock_open(proposal, _("adopted"))
    errors: dict[str, list[str]] = {}
    reason = _text(reason, name="decision_reason", required=_("Say why the committee adopts it."), errors=errors)
    week = _week_errors(effective_week, now=now, errors=errors)
    changes = {c.key: c.new_value for c in locked.changes.all()}
    _parsed, problems = parameters.changes_errors(changes, current=None, check_unchanged=False)
    if problems:
        errors["changes"] = problems
    if errors:
        raise ValidationError(errors)
    taken = Proposal.objects.filter(status=ProposalStatus.ADOPTED, effective_week=week).exclude(pk=locked.pk).first()
    if taken is not None:
        raise _week_taken(week=week, by=taken, now=now)
    other = policy_week_change(week=week)
    if other is not None:  # a change made outside the lab (the rubric page, the elastic page) holds the week
        raise StateConflict({"effective_week": [week_taken_message(week=week, change=other)]})
    locked.status = ProposalStatus.ADOPTED
    locked.effective_week = week
    locked.effective_monday = weeks.parse_week(week)
    locked.decided_by = actor
    locked.decided_by_name = person_name(actor)
    locked.decided_at = now
    locked.decision_reason = reason
    try:
        with transaction.atomic():
            locked.save()
    except IntegrityError:
        # Another adoption for the same week committed meanwhile.
        taken = Proposal.objects.filter(status=ProposalStatus.ADOPTED, effective_week=week).first()
        raise _week_taken(week=week, by=taken, now=now) from None
    pools = list(GpuPool.objects.select_related("cluster"))
    record = policy_change_record(
        actor=actor, effective_week=week, reason=_policy_reason(locked), source=ChangeSource.LAB,
        source_ref=f"proposal:{locked.pk}",
        changes={parameters.store_key(k, pools): parameters.value_parse(v) for k, v in changes.items()},
    )
    locked.applied_note_text = stored_text("proposal_applied", version=record.number, week=week)
    locked.applied_note = text_render(locked.applied_note_text)
    locked.applied_at = now  # nothing is left to write when the week comes: every reader reads the store
    locked.save(update_fields=["applied_note", "applied_note_text", "applied_at"])
    _send(locked, "adopted", _("Adopted by %(who)s, effective from week %(week)s") % {
        "who": locked.decided_by_name, "week": week})
    return locked


def _week_taken(*, week: str, by: Proposal | None, now: datetime) -> StateConflict:
    free = selectors.week_next_free(now=now, from_week=week)
    return StateConflict({"effective_week": [
        _("Week %(week)s already has an adopted change (“%(title)s”): at most one change takes effect per week. "
          "The next free week is %(free)s.") % {"week": week, "title": by.title if by else "?", "free": free}
    ]})


@write_transaction
def proposal_decline(*, actor: User, proposal: Proposal, reason: str, now: datetime) -> Proposal:
    """The chair declines an open proposal with a reason (ValidationError without one). After commit, archived."""
    _require_chair(actor, _("decline"))
    locked = _lock_open(proposal, _("declined"))
    errors: dict[str, list[str]] = {}
    reason = _text(reason, name="decision_reason", required=_("Say why the committee declines it."), errors=errors)
    if errors:
        raise ValidationError(errors)
    locked.status = ProposalStatus.DECLINED
    locked.decided_by = actor
    locked.decided_by_name = person_name(actor)
    locked.decided_at = now
    locked.decision_reason = reason
    locked.save()
    _send(locked, "declined", _("Declined by %(who)s") % {"who": locked.decided_by_name})
    return locked


@write_transaction
def proposal_observe(
    *, actor: User, proposal: Proposal, result: str, figures: Sequence[Mapping[str, Any]] = (), now: datetime
) -> Proposal:
    """The proposer or the chair records the observed result of an adopted change: text and measured figures.

    Possible once the first week has begun; recording again replaces the text and figures (each is archived).
    After commit the archive records it.
    """
    locked = Proposal.objects.select_for_update(no_key=True).get(pk=proposal.pk)
    if locked.proposer_id != actor.pk and not committee_selectors.user_is_chair(user=actor):
        raise RoleRequired(_("Only the proposer or the chair records the observed result."),
                           role=_("the proposer or the chair"))
    if locked.status != ProposalStatus.ADOPTED or locked.effective_week == "":
        raise StateConflict(_("Only an adopted change has an observed result."))
    if now < weeks.week_bounds(locked.effective_week)[0]:
        raise StateConflict(_("The change takes effect in week %(week)s; record what it did once that week has "
                              "begun.") % {"week": locked.effective_week})
    errors: dict[str, list[str]] = {}
    result = _text(result, name="observed_result", errors=errors,
                   required=_("Say what the change did, against what was expected."))
    rows = _figures(figures, errors=errors, stage=FigureStage.OBSERVED)
    if errors:
        raise ValidationError(errors)
    locked.observed_result = result
    locked.observed_at = now
    locked.observed_by_name = person_name(actor)
    locked.save(update_fields=["observed_result", "observed_at", "observed_by_name"])
    locked.figures.filter(stage=FigureStage.OBSERVED).delete()
    for figure in rows:
        figure.proposal = locked
    BenchmarkFigure.objects.bulk_create(rows)
    _send(locked, "observed", _("Observed result recorded by %(who)s") % {"who": locked.observed_by_name})
    return locked


def _policy_reason(proposal: Proposal) -> str:
    return _("Policy proposal #%(n)d “%(title)s”, adopted from week %(week)s: %(reason)s") % {
        "n": proposal.pk, "title": proposal.title, "week": proposal.effective_week,
        "reason": proposal.decision_reason}


@write_transaction
def adoptions_apply_due(*, now: datetime) -> list[Proposal]:
    """Mark applied every adopted proposal whose effective week has begun and that is not marked yet; returns them.

    Nothing is written but the mark: the store holds an adopted change since its adoption, and every reader reads
    the store for the week it governs, so a change never reaches a week before its own. Since every parameter is
    read from the store, an adoption is marked applied at once; this catches a proposal adopted before that (its
    pool reserves were written into the pools' own fields when its week began). Called inside the transaction that
    opens a week's cycle (committee.signals.cycle_opened) and at every tick of the weekly clock
    (committee.signals.clock_ticked); idempotent. After commit, archived ("applied").
    """
    due = []
    for proposal in Proposal.objects.select_for_update(no_key=True).filter(
            status=ProposalStatus.ADOPTED, applied_at__isnull=True).order_by("effective_monday"):
        if now < weeks.week_bounds(proposal.effective_week)[0]:
            continue
        proposal.applied_at = now
        proposal.save(update_fields=["applied_at"])
        _send(proposal, "applied", _("Applied for week %(week)s: %(what)s") % {
            "week": proposal.effective_week, "what": "—"})
        due.append(proposal)
    if due:
        logger.info("policy: applied proposals %s", [p.pk for p in due])
    return due
