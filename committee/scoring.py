"""The rubric's arithmetic: plain data in, plain data out; no ORM, no clock.

Everything the weekly review shows as a number comes from here, so it can be checked by hand
(docs/rubric.md works the examples) and tested without a database:

- weighted totals and their arithmetic, quorum, and the deterministic ranking;
- the fair-share factor F = 2^(−U/S) with usage decayed by age;
- the suggestions beside the score inputs (time urgency, feasibility of alternatives);
- the priority matrix quadrant of a request.

Member scores are whole numbers 0–10; means and totals are exact fractions, rounded once (to
two decimals) for display and ranking, so two requests that show the same total are tied.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

from django.utils.translation import gettext as _

from governed.params import RUBRIC_CHARTER_GUIDANCE, RUBRIC_CHARTER_WEIGHTS

BUSINESS_IMPACT = "business_impact"
FEASIBILITY = "feasibility"
URGENCY = "urgency"
FAIRNESS = "fairness"

CRITERIA: tuple[str, ...] = (BUSINESS_IMPACT, FEASIBILITY, URGENCY, FAIRNESS)
MEMBER_SCORED: tuple[str, ...] = (BUSINESS_IMPACT, FEASIBILITY, URGENCY)
COMPUTED: tuple[str, ...] = (FAIRNESS,)

# The charter's weights: version 1 of the rubric, declared with the governed parameters.
DEFAULT_WEIGHTS: dict[str, int] = {
    c: RUBRIC_CHARTER_WEIGHTS[c] for c in (BUSINESS_IMPACT, FEASIBILITY, URGENCY, FAIRNESS)
}
# And its guidance, declared there too.
DEFAULT_GUIDANCE: dict[str, str] = {c: RUBRIC_CHARTER_GUIDANCE[c] for c in CRITERIA}

SCORE_MIN = 0
SCORE_MAX = 10
TWO_PLACES = Decimal("0.01")

# The "efficiency lever" of the charter: a saving of at least this share of GPU-hours matters.
LEVER_PCT = 30
# Time urgency: full marks when the deadline falls inside the allocation week; after it, the
# suggestion halves every URGENCY_HALF_LIFE_DAYS days, and never drops below URGENCY_FLOOR.
URGENCY_HALF_LIFE_DAYS = 14
URGENCY_FLOOR = 1
URGENCY_NO_DEADLINE = 1
# The priority matrix: business impact at or above this mean counts as high.
MATRIX_IMPACT_THRESHOLD = Decimal(5)


def rounded(value: Fraction | Decimal | float) -> Decimal:
    """Two decimals, half away from zero: the one rounding every displayed number goes through."""
    if isinstance(value, Fraction):
        return (Decimal(value.numerator) / Decimal(value.denominator)).quantize(TWO_PLACES, ROUND_HALF_UP)
    return Decimal(str(value)).quantize(TWO_PLACES, ROUND_HALF_UP)


def percent_text(value: Fraction | Decimal | float) -> str:
    """A percentage for a sentence: rounded to two decimals, trailing zeros dropped ("40", "33.33", "12.5").

    Not ``Decimal.normalize()``, which writes 40 as "4E+1".
    """
    text = f"{rounded(value):f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


# ---------------------------------------------------------------------------------------------
# Weights


def weights_errors(weights: Mapping[str, object]) -> dict[str, str]:
    """What is wrong with a set of weights, by criterion ("__all__" for the sum); empty when valid."""
    errors: dict[str, str] = {}
    whole: dict[str, int] = {}
    for criterion in CRITERIA:
        value = weights.get(criterion)
        if isinstance(value, bool) or not isinstance(value, int):
            errors[criterion] = _("Give a whole percent.")
        elif not 0 <= value <= 100:
            errors[criterion] = _("A weight is between 0 and 100%.")
        else:
            whole[criterion] = value
    unknown = set(weights) - set(CRITERIA)
    if unknown:
        errors["__all__"] = _("Unknown criteria: %(names)s.") % {"names": ", ".join(sorted(unknown))}
    elif not errors:
        total = sum(whole.values())  # every criterion is in `whole`: there are no errors
        if total != 100:
            errors["__all__"] = _("The weights must add up to 100%%; they add up to %(total)d%%.") % {"total": total}
    return errors


# ---------------------------------------------------------------------------------------------
# Totals, quorum and ranking


@dataclass(frozen=True)
class ScoreTally:
    """How many member scores a criterion has and their sum: all its mean and quorum need (SQL's COUNT, SUM)."""

    count: int
    total: int


@dataclass(frozen=True)
class ScoreSheet:
    """One request's inputs: every member's scores per member-scored criterion, the computed scores.

    `member_tallies`, when given, stands for `member_scores` (leave that empty): each criterion's count and sum
    as the database aggregates them, so a week of 12,000 scores ranks from 3,000 numbers. The results are the
    same: the mean is the exact fraction sum / count either way.
    """

    request_id: int
    submitted_at: datetime
    member_scores: Mapping[str, Sequence[int]]
    computed_scores: Mapping[str, Decimal]
    member_tallies: Mapping[str, ScoreTally] | None = None

    def tally(self, criterion: str) -> ScoreTally:
        if self.member_tallies is not None:
            return self.member_tallies.get(criterion, ScoreTally(0, 0))
        values = self.member_scores.get(criterion, ())
        return ScoreTally(len(values), sum(values))


@dataclass(frozen=True)
class CriterionResult:
    criterion: str
    weight_pct: int
    score: Decimal | None  # mean of the members' scores (or the computed score), 0–10
    count: int  # how many member scores; 0 for a computed criterion
    points: Decimal | None  # weight_pct × score / 10, the criterion's part of the 0–100 total
    computed: bool
    below_quorum: bool


@dataclass(frozen=True)
class RequestResult:
    request_id: int
    submitted_at: datetime
    criteria: tuple[CriterionResult, ...]
    total: Decimal | None  # 0–100; None when below quorum
    rank: int | None = None  # 1-based among complete requests; None when below quorum

    @property
    def complete(self) -> bool:
        return self.total is not None

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(c.criterion for c in self.criteria if c.below_quorum)

    def criterion(self, name: str) -> CriterionResult:
        return next(c for c in self.criteria if c.criterion == name)

    @property
    def arithmetic(self) -> str:
        """The sum as a person would write it: "40% × 7.50 + 30% × 6.00 + … = 63.70"."""
        terms = [
            f"{c.weight_pct}% × {c.score if c.score is not None else '?'}" for c in self.criteria if c.weight_pct
        ]
        return " + ".join(terms) + f" = {self.total if self.total is not None else '?'}"


def weighted_total(*, weights: Mapping[str, int], scores: Mapping[str, Fraction | Decimal]) -> Fraction:
    """Σ weight% × score / 10 over the criteria, exactly: 0–100 when the weights add up to 100."""
    return sum((Fraction(weights[c]) * Fraction(scores[c]) / 10 for c in CRITERIA), Fraction(0))


def quorum_missing(
    *, member_scores: Mapping[str, Sequence[int]], weights: Mapping[str, int], quorum: int
) -> tuple[str, ...]:
    """The member-scored criteria with fewer than `quorum` scores (a criterion weighted 0% needs none)."""
    return tuple(c for c in MEMBER_SCORED if weights[c] > 0 and len(member_scores.get(c, ())) < quorum)


def request_result(*, sheet: ScoreSheet, weights: Mapping[str, int], quorum: int) -> RequestResult:
    """A request's breakdown and total; no total while a member-scored criterion has fewer than `quorum` scores.

    Each criterion's points are the exact fraction weight × sum / (10 × count) (`weighted_total`'s terms, one
    fraction each), summed exactly and rounded once: a week of 1,000 requests ranks in a few milliseconds.
    """
    lines: list[CriterionResult] = []
    total_exact = Fraction(0)
    complete = True
    for criterion in CRITERIA:
        weight = weights[criterion]
        mean: Fraction | Decimal | None
        if criterion in COMPUTED:
            mean = sheet.computed_scores.get(criterion)
            count, below = 0, mean is None
            points = None if mean is None else Fraction(mean) * weight / 10
        else:
            tally = sheet.tally(criterion)
            count = tally.count
            mean = Fraction(tally.total, count) if count else None
            points = Fraction(weight * tally.total, 10 * count) if count else None
            below = weight > 0 and count < quorum  # quorum_missing
        if points is not None:
            total_exact += points
        complete = complete and not below
        lines.append(
            CriterionResult(
                criterion=criterion,
                weight_pct=weight,
                score=rounded(mean) if mean is not None else None,
                count=count,
                points=rounded(points) if points is not None else None,
                computed=criterion in COMPUTED,
                below_quorum=below,
            )
        )
    total = rounded(total_exact) if complete else None
    return RequestResult(
        request_id=sheet.request_id, submitted_at=sheet.submitted_at, criteria=tuple(lines), total=total
    )


def rank_results(results: Iterable[RequestResult]) -> list[RequestResult]:
    """Complete requests by total, highest first; a tie goes to the earlier submission, then the lower id.

    Requests below quorum follow, unranked, in submission order.
    """
    items = list(results)
    ranked = sorted(
        (r for r in items if r.complete),
        key=lambda r: (-(r.total or Decimal(0)), r.submitted_at, r.request_id),
    )
    incomplete = sorted((r for r in items if not r.complete), key=lambda r: (r.submitted_at, r.request_id))
    numbered = [replace(r, rank=index) for index, r in enumerate(ranked, start=1)]
    return numbered + incomplete


def rank_requests(*, sheets: Iterable[ScoreSheet], weights: Mapping[str, int], quorum: int) -> list[RequestResult]:
    return rank_results(request_result(sheet=s, weights=weights, quorum=quorum) for s in sheets)


def rank_moves(*, before: Sequence[RequestResult], after: Sequence[RequestResult]) -> dict[int, int]:
    """How many places each ranked request moves from `before` to `after` (positive = up); 0 if it stays."""
    old = {r.request_id: r.rank for r in before if r.rank is not None}
    moves: dict[int, int] = {}
    for r in after:
        if r.rank is not None and r.request_id in old:
            moves[r.request_id] = old[r.request_id] - r.rank
    return moves


# ---------------------------------------------------------------------------------------------
# Fair share


@dataclass(frozen=True)
class FairShare:
    """One team's fair-share factor, as Slurm's classic hierarchical fair share computes it over the account tree
    department → team (docs/rubric.md works it by hand). A team with no department stands at the top level beside the
    departments, and its factor is the flat one: F = 2^(−U/S).

    `weight` and `total_weight` are the team's and its siblings' (its department's teams', or the top level's);
    for a team in a department, `department_weight` is the department's, `top_total_weight` the top level's, and
    `department_decayed_gpu_hours` the department's teams' usage together (0 and 0 for a team with none).
    """

    team_id: int
    decayed_gpu_hours: float
    total_decayed_gpu_hours: float
    weight: int
    total_weight: int
    department_weight: int = 0
    top_total_weight: int = 0
    department_decayed_gpu_hours: float = 0.0

    @property
    def in_department(self) -> bool:
        return self.department_weight > 0 and self.top_total_weight > 0

    @property
    def usage_share(self) -> float:
        """U: the team's share of all decayed GPU-hours used (0 when nobody used any)."""
        if self.total_decayed_gpu_hours <= 0:
            return 0.0
        return self.decayed_gpu_hours / self.total_decayed_gpu_hours

    @property
    def department_usage_share(self) -> float:
        """The department's share of all decayed GPU-hours used (its effective usage: it sits at the top level)."""
        if self.total_decayed_gpu_hours <= 0:
            return 0.0
        return self.department_decayed_gpu_hours / self.total_decayed_gpu_hours

    @property
    def sibling_share(self) -> float:
        """The team's weight over its siblings' (its department's teams', or the top level's)."""
        return self.weight / self.total_weight

    @property
    def department_share(self) -> float:
        """The department's weight over the top level's."""
        return self.department_weight / self.top_total_weight if self.in_department else 1.0

    @property
    def entitled_share(self) -> float:
        """S: the team's normalized share: its sibling share, times its department's share of the whole."""
        return self.department_share * self.sibling_share

    @property
    def effective_usage(self) -> float:
        """UE: U at the top level; in a department, U + (U_department − U) × the team's sibling share (Slurm's
        classic effective usage: a team inherits part of its department's usage)."""
        if not self.in_department:
            return self.usage_share
        return self.usage_share + (self.department_usage_share - self.usage_share) * self.sibling_share

    @property
    def factor(self) -> float:
        """F = 2^(−UE/S): 1 for a team that used nothing (in a department that used nothing), ½ for one that used
        exactly its share."""
        return math.pow(2.0, -self.effective_usage / self.entitled_share)

    @property
    def score(self) -> Decimal:
        """The fairness criterion: 10 × F, two decimals."""
        return rounded(10 * self.factor)

    def explanation(self) -> str:
        if self.in_department:
            return _(
                "Fair share: the team used %(u).1f%% of the recent A100-equivalent GPU-hours the schedulers measured "
                "(decayed; usage on lent GPUs counted at the policy's factor), its department %(ud).1f%%; "
                "effective usage %(u_f).3f + (%(ud_f).3f − %(u_f).3f) × %(ws).3f = %(ue).3f, against an entitled "
                "%(s).1f%% (department weight %(dw)d of %(tdw)d, team weight %(w)d of %(tw)d in it); "
                "F = 2^(−%(ue).3f / %(s_f).3f) = %(f).3f, score 10 × F = %(score)s."
            ) % {
                "u": 100 * self.usage_share, "ud": 100 * self.department_usage_share,
                "u_f": self.usage_share, "ud_f": self.department_usage_share, "ws": self.sibling_share,
                "ue": self.effective_usage, "s": 100 * self.entitled_share, "dw": self.department_weight,
                "tdw": self.top_total_weight, "w": self.weight, "tw": self.total_weight,
                "s_f": self.entitled_share, "f": self.factor, "score": self.score,
            }
        return _(
            "Fair share: the team used %(u).1f%% of the recent A100-equivalent GPU-hours the schedulers measured "
            "(decayed; usage on lent GPUs counted at the policy's factor; not the usage teams state on their "
            "requests) against an entitled %(s).1f%% "
            "(weight %(w)d of %(tw)d); F = 2^(−%(u_f).3f / %(s_f).3f) = %(f).3f, score 10 × F = %(score)s."
        ) % {
            "u": 100 * self.usage_share,
            "s": 100 * self.entitled_share,
            "w": self.weight,
            "tw": self.total_weight,
            "u_f": self.usage_share,
            "s_f": self.entitled_share,
            "f": self.factor,
            "score": self.score,
        }


def decay_factor(*, weeks_ago: int, half_life_weeks: float) -> float:
    """How much usage from `weeks_ago` whole weeks back counts: 2^(−weeks_ago / half_life)."""
    if half_life_weeks <= 0:
        raise ValueError("the fair-share half-life must be a positive number of weeks")
    return math.pow(2.0, -weeks_ago / half_life_weeks)


def decayed_usage(
    *, weekly_usage: Sequence[Mapping[int, float | Decimal]], half_life_weeks: float
) -> dict[int, float]:
    """Per team, Σ GPU-hours × decay; `weekly_usage[k]` holds the usage of the week k weeks back (0 = latest)."""
    totals: dict[int, float] = {}
    for weeks_ago, week in enumerate(weekly_usage):
        weight = decay_factor(weeks_ago=weeks_ago, half_life_weeks=half_life_weeks)
        for team_id, gpu_hours in week.items():
            totals[team_id] = totals.get(team_id, 0.0) + float(gpu_hours) * weight
    return totals


def fair_shares(
    *, decayed: Mapping[int, float], weights: Mapping[int, int],
    departments: Mapping[int, tuple[int, int]] | None = None,
) -> dict[int, FairShare]:
    """Each team's fair-share factor over the tree department → team. U counts every team's usage.

    `departments` maps a team id to (its department's id, the department's weight); a team not in it stands at the
    top level. The top level's weights are every department's (once) and every such team's; a team's siblings are its
    department's teams. Without departments this is the flat factor: S = weight over every team's weight.
    """
    departments = departments or {}
    total_usage = sum(decayed.values())
    department_weight = dict(departments.values())
    top_total = sum(department_weight.values()) + sum(w for t, w in weights.items() if t not in departments)
    sibling_total: dict[int, int] = {}
    department_usage: dict[int, float] = {}
    for team_id, weight in weights.items():
        if team_id in departments:
            dept = departments[team_id][0]
            sibling_total[dept] = sibling_total.get(dept, 0) + weight
            department_usage[dept] = department_usage.get(dept, 0.0) + decayed.get(team_id, 0.0)
    if top_total <= 0:
        return {}
    out: dict[int, FairShare] = {}
    for team_id, weight in weights.items():
        usage = decayed.get(team_id, 0.0)
        if team_id in departments:
            dept, dept_weight = departments[team_id]
            out[team_id] = FairShare(
                team_id=team_id, decayed_gpu_hours=usage, total_decayed_gpu_hours=total_usage, weight=weight,
                total_weight=sibling_total[dept], department_weight=dept_weight, top_total_weight=top_total,
                department_decayed_gpu_hours=department_usage[dept],
            )
        else:
            out[team_id] = FairShare(team_id=team_id, decayed_gpu_hours=usage, total_decayed_gpu_hours=total_usage,
                                     weight=weight, total_weight=top_total)
    return out


# ---------------------------------------------------------------------------------------------
# Suggestions


@dataclass(frozen=True)
class Suggestion:
    """A value offered beside a score input, with the sentence that explains it. Never applied by itself."""

    criterion: str
    value: int
    explanation: str
    numbers: Mapping[str, object] = field(default_factory=dict)


def urgency_suggestion(*, deadline: datetime | None, window_end: datetime) -> Suggestion:
    """Time urgency from the deadline; `window_end` is the end of the allocation week.

    Due inside the allocation week (or already past): 10. Later: 10 × 2^(−days after the week / 14),
    rounded, at least 1, so 2 weeks after the week → 5, 4 weeks → 3 (2.5 rounds up), 6 weeks → 1.
    No deadline: 1.
    """
    if deadline is None:
        return Suggestion(URGENCY, URGENCY_NO_DEADLINE, _("No deadline given: nothing slips on a date."))
    days_after = (deadline - window_end).total_seconds() / 86400
    if days_after <= 0:
        return Suggestion(
            URGENCY, SCORE_MAX, _("Due within the allocation week: the work must run now."), {"days_after": 0}
        )
    raw = SCORE_MAX * math.pow(2.0, -days_after / URGENCY_HALF_LIFE_DAYS)
    value = max(URGENCY_FLOOR, int(Decimal(str(raw)).quantize(Decimal(1), ROUND_HALF_UP)))
    return Suggestion(
        URGENCY,
        value,
        _(
            "Due %(days).0f days after the allocation week: 10 × 2^(−%(days).0f/%(half)d) = %(raw).1f, so %(value)d."
        )
        % {"days": days_after, "half": URGENCY_HALF_LIFE_DAYS, "raw": raw, "value": value},
        {"days_after": round(days_after, 1)},
    )


@dataclass(frozen=True)
class AlternativeOption:
    description: str
    gpu_hours: int
    feasible: bool


FEASIBILITY_LEVER_USED = 9
FEASIBILITY_NO_CHEAPER = 8
FEASIBILITY_SMALL_SAVING = 5
FEASIBILITY_LEVER_UNUSED = 2


def feasibility_suggestion(
    *, requested_gpu_hours: int, baseline_gpu_hours: int | None, alternatives: Sequence[AlternativeOption]
) -> Suggestion:
    """The efficiency lever, checked in this order:

    1. the request saves ≥ 30% GPU-hours against the team's baseline plan → 9;
    2. a feasible alternative would save ≥ 30% of the request and is not used → 2;
    3. no feasible alternative is cheaper than the request → 8;
    4. a feasible alternative is cheaper, by less than 30% → 5.
    """
    if baseline_gpu_hours and requested_gpu_hours < baseline_gpu_hours:
        saving = baseline_gpu_hours - requested_gpu_hours
        pct = Decimal(100 * saving) / Decimal(baseline_gpu_hours)
        if pct >= LEVER_PCT:
            return Suggestion(
                FEASIBILITY,
                FEASIBILITY_LEVER_USED,
                _(
                    "Already efficient: it saves %(saving)s GPU-hours (%(pct)s%%) against the team's baseline "
                    "plan of %(baseline)s."
                )
                % {"saving": f"{saving:,}", "pct": percent_text(pct), "baseline": f"{baseline_gpu_hours:,}"},
                {"saving_gpu_hours": saving, "saving_pct": rounded(pct)},
            )
    cheaper = [a for a in alternatives if a.feasible and a.gpu_hours < requested_gpu_hours]
    if not cheaper:
        return Suggestion(
            FEASIBILITY,
            FEASIBILITY_NO_CHEAPER,
            _("No feasible alternative is cheaper than the %(requested)s GPU-hours requested.")
            % {"requested": f"{requested_gpu_hours:,}"},
        )
    best = min(cheaper, key=lambda a: a.gpu_hours)
    saving = requested_gpu_hours - best.gpu_hours
    pct = Decimal(100 * saving) / Decimal(requested_gpu_hours)
    numbers = {"saving_gpu_hours": saving, "saving_pct": rounded(pct), "alternative": best.description}
    params = {"alt": best.description, "saving": f"{saving:,}", "pct": percent_text(pct)}
    if pct >= LEVER_PCT:
        return Suggestion(
            FEASIBILITY,
            FEASIBILITY_LEVER_UNUSED,
            _("“%(alt)s” is feasible and would save %(saving)s GPU-hours (%(pct)s%%); the request does not use it.")
            % params,
            numbers,
        )
    return Suggestion(
        FEASIBILITY,
        FEASIBILITY_SMALL_SAVING,
        _("“%(alt)s” is feasible but would save only %(saving)s GPU-hours (%(pct)s%%), under the 30%% lever.")
        % params,
        numbers,
    )


# ---------------------------------------------------------------------------------------------
# Priority matrix

DO_FIRST = "do_first"
COST_BENEFIT = "cost_benefit"
WHEN_FREE = "when_free"
DEFER_OR_REDESIGN = "defer_or_redesign"


def quadrant_labels() -> dict[str, str]:
    return {
        DO_FIRST: _("High impact, low intensity: do first"),
        COST_BENEFIT: _("High impact, high intensity: cost-benefit review, consider the alternative"),
        WHEN_FREE: _("Low impact, low intensity: schedule when free"),
        DEFER_OR_REDESIGN: _("Low impact, high intensity: defer or redesign"),
    }


def intensity_threshold(gpu_hours: Sequence[int]) -> Decimal:
    """Compute intensity counts as high at or above the median requested GPU-hours of the cycle."""
    if not gpu_hours:
        return Decimal(0)
    ordered = sorted(gpu_hours)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return Decimal(ordered[middle])
    return Decimal(ordered[middle - 1] + ordered[middle]) / 2


def matrix_quadrant(*, impact: Decimal | None, gpu_hours: int, threshold_gpu_hours: Decimal) -> str | None:
    """Which quadrant of the priority matrix a request sits in; None until its impact has been scored."""
    if impact is None:
        return None
    high_impact = impact >= MATRIX_IMPACT_THRESHOLD
    high_intensity = gpu_hours >= threshold_gpu_hours
    if high_impact:
        return COST_BENEFIT if high_intensity else DO_FIRST
    return DEFER_OR_REDESIGN if high_intensity else WHEN_FREE
