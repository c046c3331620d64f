"""Saving a member's score: one service, one vocabulary of refusals, one answer per surface.

The review page (committee/views/review.py), the scores grid and its cells (committee/views/grid.py)
and the API (committee/api/views.py) hand what was typed or sent, as it came, to `score_record` (one
criterion) or `scores_record` (a member's scores of one request at once, as the grid saves them).
It is the only place that checks a score, so every surface refuses the same score with the same
words. A refusal is one of `ScoreRefusal` (why), raised as the Django error of its kind so that the
pages, the forms and the API's exception handler (core/errors.py) already know it:

  refusal               raised as                        grid cell / API   review page
  no_seat               ScoreForbidden (PermissionDenied)   403            the 403 page
  conflict_of_interest  ScoreForbidden (PermissionDenied)   403            the 403 page
  not_in_this_week      ScoreNotFound (Http404)             404            the 404 page
  not_in_review         ScoreConflict (StateConflict)       409            beside the input
  criterion, value,     ScoreInvalid (ValidationError,      400            beside the input
  note                  keyed by that field)

`score_answer` turns any of them into (status, words) for a surface that answers by hand (the grid).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404
from django.utils.translation import gettext as _

from committee import limits, scoring, selectors
from committee.models import GpuRequest, ReviewCycle, Score
from committee.services.discussion import scores_clear_stale
from committee.services.ranking import cycle_ranking_changed
from committee.services.requests import actor_name
from committee.services.review import lock_request_in_review
from core.errors import StateConflict
from core.locks import write_transaction

# ASCII digits and the whole text (fullmatch): `\d` takes full-width digits and `$` a trailing newline.
SCORE_PATTERN = re.compile(r"10|[0-9]")


class ScoreRefusal(StrEnum):
    """Why a score was not saved: the one vocabulary of the three surfaces."""

    NO_SEAT = "no_seat"  # the actor has no committee seat
    CONFLICT_OF_INTEREST = "conflict_of_interest"  # the actor's own team's request, or recused from it
    NOT_IN_THIS_WEEK = "not_in_this_week"  # no such request in the week's review (the grid's rows)
    NOT_IN_REVIEW = "not_in_review"  # the week is open, finalized or published, or the request not submitted
    CRITERION = "criterion"  # not a member-scored criterion (fairness is computed)
    VALUE = "value"  # not a whole number 0–10
    NOTE = "note"  # the note is too long

    @property
    def status(self) -> int:
        """The HTTP status the grid's cells and the API answer this refusal with."""
        return _STATUS[self]


_STATUS = {
    ScoreRefusal.NO_SEAT: 403,
    ScoreRefusal.CONFLICT_OF_INTEREST: 403,
    ScoreRefusal.NOT_IN_THIS_WEEK: 404,
    ScoreRefusal.NOT_IN_REVIEW: 409,
    ScoreRefusal.CRITERION: 400,
    ScoreRefusal.VALUE: 400,
    ScoreRefusal.NOTE: 400,
}


class ScoreInvalid(ValidationError):
    """A score refused for its input (400), keyed by the field at fault: criterion, value or note."""

    def __init__(self, refusal: ScoreRefusal, message: str) -> None:
        super().__init__({str(refusal): [message]})
        self.refusal = refusal
        self.criterion = ""  # the criterion at fault, when several were scored at once (scores_record)


class ScoreForbidden(PermissionDenied):
    """A score the actor may not give (403): no seat, their own team's request, or recused from it."""

    def __init__(self, refusal: ScoreRefusal, message: str) -> None:
        super().__init__(message)
        self.refusal = refusal
        self.messages = [message]


class ScoreNotFound(Http404):
    """No such request in the week's review (404)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.refusal = ScoreRefusal.NOT_IN_THIS_WEEK
        self.messages = [message]


class ScoreConflict(StateConflict):
    """Valid input at the wrong moment (409): the week or the request is not in review."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.refusal = ScoreRefusal.NOT_IN_REVIEW


ScoreRefused = ScoreInvalid | ScoreForbidden | ScoreNotFound | ScoreConflict
SCORE_REFUSED = (ScoreInvalid, ScoreForbidden, ScoreNotFound, ScoreConflict)


@dataclass(frozen=True)
class ScoreAnswer:
    """What a surface answers a refused score with: its HTTP status and the words shown."""

    refusal: ScoreRefusal
    status: int
    message: str


def score_answer(exc: ScoreRefused) -> ScoreAnswer:
    """The status and words for a refused score, the same on every surface."""
    return ScoreAnswer(refusal=exc.refusal, status=exc.refusal.status, message=" ".join(exc.messages))


def score_seat_required(*, actor: selectors.Viewer) -> None:
    """ScoreForbidden (no_seat) unless `actor` has a committee seat: the role gate of the surfaces' score endpoints,
    in the words score_record refuses with."""
    if not selectors.user_is_committee(user=actor):
        raise ScoreForbidden(ScoreRefusal.NO_SEAT, selectors.no_seat_refusal(act=selectors.Act.SCORE))


def score_value(raw: object) -> int:
    """The score in `raw` (an int, or what a member typed), or ScoreInvalid: only the digits 0–10.

    No sign, no decimals, no other digits than 0-9 ("１", "1_0", "7.5", "-0" are refused); a bool is no number.
    """
    if isinstance(raw, str):
        raw = raw.strip()
        if SCORE_PATTERN.fullmatch(raw):
            return int(raw)
    elif isinstance(raw, int) and not isinstance(raw, bool) and scoring.SCORE_MIN <= raw <= scoring.SCORE_MAX:
        return raw
    raise ScoreInvalid(ScoreRefusal.VALUE, _("A score is a whole number from 0 to 10."))


def score_target(*, cycle: ReviewCycle, pk: int | None, in_review: dict[int, GpuRequest]) -> GpuRequest:
    """The request `pk` among `in_review` (the week's requests the grid shows), or ScoreNotFound."""
    gpu_request = None if pk is None else in_review.get(pk)
    if gpu_request is None:
        raise ScoreNotFound(_("This request is not in review in week %(week)s.") % {"week": cycle.week})
    return gpu_request


def score_record(
    *, actor: User, gpu_request: GpuRequest, criterion: str, value: int | str, note: str = ""
) -> Score:
    """Record (or revise) the actor's 0–10 score of a request on one member-scored criterion: `scores_record` of one."""
    return scores_record(actor=actor, gpu_request=gpu_request, values={criterion: value}, notes={criterion: note})[0]


@write_transaction
def scores_record(
    *,
    actor: User,
    gpu_request: GpuRequest,
    values: Mapping[str, int | str],
    notes: Mapping[str, str] | None = None,
) -> list[Score]:
    """Record (or revise) the actor's 0–10 scores of one request, a value per member-scored criterion, at once.

    `values` maps a criterion to an int or the text a member typed (score_value); `notes`, a criterion to its note.
    All or nothing: refused (ScoreForbidden, a PermissionDenied) unless the actor has a committee seat, is not a
    member of the request's team and is not recused from it; refused (ScoreInvalid, a ValidationError keyed by field,
    its `criterion` the one at fault) unless every criterion is member-scored, every value a whole number 0–10 and
    every note short enough; refused (ScoreConflict, a StateConflict) unless the cycle is in review and the request
    submitted. The checks, the locks and the ranking's new version are paid once for the request, not once a
    criterion (the grid saves a member's row of cells this way). Fairness is computed, never scored. Scoring clears
    the member's "stale" mark on the request (the team changed it after they scored).
    """
    try:
        selectors.decide_guard(actor=actor, gpu_request=gpu_request, act=selectors.Act.SCORE)
    except PermissionDenied as exc:
        seated = selectors.user_is_committee(user=actor)
        refusal = ScoreRefusal.CONFLICT_OF_INTEREST if seated else ScoreRefusal.NO_SEAT
        raise ScoreForbidden(refusal, str(exc)) from exc
    checked: list[tuple[str, int, str]] = []
    for criterion, raw in values.items():
        try:
            checked.append((criterion, *_checked(criterion, raw, (notes or {}).get(criterion, ""))))
        except ScoreInvalid as exc:
            exc.criterion = criterion
            raise
    try:
        locked, cycle = lock_request_in_review(gpu_request=gpu_request, doing=_("score"))
    except StateConflict as exc:
        raise ScoreConflict(" ".join(exc.messages)) from exc
    name = actor_name(actor)
    scores = [
        Score.objects.update_or_create(
            member=actor,
            request=locked,
            criterion=criterion,
            defaults={"value": value, "note": note, "member_name": name},
        )[0]
        for criterion, value, note in checked
    ]
    cycle_ranking_changed(cycle=cycle)
    scores_clear_stale(member=actor, gpu_request=locked)
    return scores


def _checked(criterion: str, raw: int | str, note: str) -> tuple[int, str]:
    """The value and the note of one criterion's score, or ScoreInvalid."""
    if criterion not in scoring.MEMBER_SCORED:
        raise ScoreInvalid(
            ScoreRefusal.CRITERION, _("“%(criterion)s” is not scored by members.") % {"criterion": str(criterion)[:30]}
        )
    value = score_value(raw)
    note = (note or "").strip()
    too_long = limits.length_errors("note", note, limits.SCORE_NOTE_MAX_LENGTH)
    if too_long:
        raise ScoreInvalid(ScoreRefusal.NOTE, " ".join(ValidationError(too_long["note"]).messages))
    return value, note
