"""The policy lab's vocabulary: the names a proposal changes and a replay overrides.

The parameters are declared once, in governed.params (label, type, bounds, unit); this module expands that list for
the lab, with the committee's criteria and today's pools. A key names one parameter. Pool parameters carry the
pool's slug here (the store keeps "cluster/slug": `store_key`), elastic ones the name of the threshold:

    rubric.business_impact, rubric.feasibility, rubric.urgency, rubric.fairness   whole percents, sum 100
    pool.<slug>.burst_reserve_pct, pool.<slug>.standby_pct                        whole percents
    fairshare.half_life_weeks, fairshare.trailing_weeks                           weeks (the half-life may be 2.5)
    review.quorum                                                                 member scores per criterion
    elastic.<threshold>                                                           the elastic policy's numbers

A pool's slug is `GpuPool.slug` ("a100") while no other cluster has a pool of that slug, else the pool's key
("atlas/a100"); `pool_resolve` accepts either.

Besides the names, this module reads the value each parameter has now (`current_values`), says what each is
called and what it may be (`parameter_list`), and checks a set of changes against all of that at once
(`changes_errors`): the proposal form, the services and the replay share it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from django.core.exceptions import ValidationError
from django.utils import timezone
from django.utils.translation import gettext as _

from allocations import selectors as allocation_selectors
from allocations.models import GpuPool
from committee import scoring, selectors, weeks
from committee.models import criterion_label
from core import numbers
from governed import params
from governed.selectors import policy_values

# The keys and their declarations are governed.params' (the one list, beneath every app): these names are kept
# for the policy lab's modules.
RUBRIC_PREFIX = params.RUBRIC_PREFIX
POOL_PREFIX = params.POOL_PREFIX
ELASTIC_PREFIX = params.ELASTIC_PREFIX
FAIRSHARE_HALF_LIFE = params.FAIRSHARE_HALF_LIFE
FAIRSHARE_TRAILING = params.FAIRSHARE_TRAILING
QUORUM = params.QUORUM
# A pool's reserves, its fast-lane reserve, its billing weight in the common unit (A100-equivalents) and its price per
# GPU-hour.
POOL_FIELDS = (*params.POOL_FIELDS, params.FAST_LANE, params.BILLING_WEIGHT, params.PRICE)
# The elastic policy's thresholds a proposal may change (the numbers; the night's hours and the on/off are changed
# on the elastic policy page), with their bounds, from the declarations.
ELASTIC_FIELDS: dict[str, tuple[int, int]] = {
    p.key.removeprefix(params.ELASTIC_PREFIX): (int(p.minimum or 0), int(p.maximum or 0))
    for p in params.PARAMS if p.key.startswith(params.ELASTIC_PREFIX) and p.kind == "int"
}
# Governance parameters by key: the field of committee.selectors.Governance each is.
GOVERNANCE_FIELDS = {
    QUORUM: "score_quorum",
    FAIRSHARE_HALF_LIFE: "fairshare_half_life_weeks",
    FAIRSHARE_TRAILING: "fairshare_trailing_weeks",
}

Number = int | Decimal


def pool_key(slug: str, field: str) -> str:
    """`pool.<slug>.<field>` for one of POOL_FIELDS."""
    if field not in POOL_FIELDS:
        raise ValueError(f"not a pool parameter: {field}")
    return f"{POOL_PREFIX}{slug}.{field}"


def pool_key_parse(key: str) -> tuple[str, str] | None:
    """(slug, field) of a pool key, None for any other key."""
    if not key.startswith(POOL_PREFIX):
        return None
    slug, _dot, field = key.removeprefix(POOL_PREFIX).rpartition(".")
    if not slug or field not in POOL_FIELDS:
        return None
    return slug, field


def pool_slugs(pools: list[GpuPool]) -> dict[int, str]:
    """Each pool's slug in keys: its own slug, or "cluster/slug" where two clusters share it."""
    counts: dict[str, int] = {}
    for pool in pools:
        counts[pool.slug] = counts.get(pool.slug, 0) + 1
    return {pool.pk: pool.slug if counts[pool.slug] == 1 else pool.key for pool in pools}


def store_key(key: str, pools: list[GpuPool]) -> str:
    """The key as the one store (governed) keeps it: a pool by its "cluster/slug", every other key as it is."""
    parsed = pool_key_parse(key)
    if parsed is None:
        return key
    pool = pool_resolve(parsed[0], pools)
    if pool is None:
        raise ValidationError(_("There is no pool “%(pool)s”.") % {"pool": parsed[0]})
    return f"{POOL_PREFIX}{pool.key}.{parsed[1]}"


def pool_resolve(slug: str, pools: list[GpuPool] | None = None) -> GpuPool | None:
    """The pool a key's slug names ("a100" when unique, or "atlas/a100"), None when none or several match."""
    pools = pools if pools is not None else list(GpuPool.objects.select_related("cluster"))
    matches = [p for p in pools if p.key == slug] or [p for p in pools if p.slug == slug]
    return matches[0] if len(matches) == 1 else None


@dataclass(frozen=True)
class Parameter:
    key: str
    group: str
    label: str
    unit: str
    minimum: Number
    maximum: Number
    whole: bool = True  # a whole number; else up to `decimals` decimals
    decimals: int = 2
    above_minimum: bool = False  # the minimum itself is not allowed (a half-life above 0)

    def bounds_text(self) -> str:
        bounds = {"min": numbers.format_figure(self.minimum), "max": numbers.format_figure(self.maximum)}
        if self.above_minimum:
            return _("above %(min)s, at most %(max)s") % bounds
        return _("%(min)s to %(max)s") % bounds


def parameter_list() -> list[Parameter]:
    """Every parameter a proposal may change today, in the order the form shows them: the declarations of
    governed.params, the rubric's expanded for each criterion and the pools' for each pool. One query (the pools)."""
    out: list[Parameter] = []
    pools = list(GpuPool.objects.select_related("cluster").order_by("cluster__slug", "slug"))
    slugs = pool_slugs(pools)
    pool_params = [p for p in params.PARAMS if p.key.startswith(params.POOL_PREFIX)]
    for declared in params.PARAMS:
        if declared.kind not in ("int", "decimal"):
            continue  # not a number: changed on its own page (the elastic policy's night and on/off)
        if declared.key.startswith(params.RUBRIC_PREFIX):
            for criterion in scoring.CRITERIA:
                label = str(declared.label) % {"criterion": criterion_label(criterion)}
                out.append(_parameter(declared, key=declared.expand(criterion), label=label))
        elif declared is pool_params[0]:
            for pool in pools:  # each pool's parameters together
                for pool_param in pool_params:
                    field = pool_param.key.rpartition(".")[2]
                    out.append(_parameter(pool_param, key=pool_key(slugs[pool.pk], field),
                                          label=str(pool_param.label) % {"pool": pool.key}))
        elif declared in pool_params:
            continue
        elif "{" in declared.key:
            continue  # a department's budget: finance sets it on the budgets page (committee.services.budgets)
        else:
            out.append(_parameter(declared, key=declared.key, label=str(declared.label)))
    return out


def _parameter(declared: params.Param, *, key: str, label: str) -> Parameter:
    return Parameter(
        key=key, group=str(declared.group), label=label, unit=str(declared.unit), minimum=declared.minimum or 0,
        maximum=declared.maximum or 0, whole=declared.kind == "int", above_minimum=declared.above_minimum,
        decimals=declared.decimals,
    )


def _number(value: object) -> Number:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else value.normalize()
    if isinstance(value, float):
        decimal = Decimal(str(value))
        return int(decimal) if decimal == decimal.to_integral_value() else decimal.normalize()
    return int(value)  # type: ignore[call-overload]


def current_values(*, week: str | None = None) -> dict[str, Number]:
    """What every parameter is now: the rubric in force for `week` (by default that of the next cycle to open), and
    each pool's reserves, the quorum, fair share and elastic thresholds in force for `week` (by default the current
    week). A few queries, whatever the count."""
    values: dict[str, Number] = {}
    rubric = selectors.rubric_for_week(week=week) if week else selectors.rubric_current()
    for criterion, weight in rubric.weights.items():
        values[RUBRIC_PREFIX + criterion] = int(weight)
    pools = allocation_selectors.pool_reserves_for_week(
        week=week or weeks.current_week_label(timezone.now()), pools=GpuPool.objects.select_related("cluster"))
    slugs = pool_slugs(pools)
    pool_values = policy_values(week=week or weeks.current_week_label(timezone.now()), prefix=POOL_PREFIX)
    for pool in pools:
        for field in (*params.POOL_FIELDS, params.FAST_LANE):
            values[pool_key(slugs[pool.pk], field)] = int(getattr(pool, field))
        values[pool_key(slugs[pool.pk], params.BILLING_WEIGHT)] = _number(params.billing_weight(pool_values, pool.key))
        values[pool_key(slugs[pool.pk], params.PRICE)] = _number(params.pool_price(pool_values, pool.key))
    rules = selectors.governance_for_week(week=week or weeks.current_week_label(timezone.now()))
    for key, field in GOVERNANCE_FIELDS.items():
        values[key] = _number(getattr(rules, field))
    # The elastic thresholds and every other declared number (a parameter added to governed.params): the value in
    # force that week, else its declared default.
    others = [p for p in params.PARAMS if "{" not in p.key and p.key not in values and p.kind in ("int", "decimal")]
    if others:
        stored = policy_values(week=week or weeks.current_week_label(timezone.now()))
        for declared in others:
            value = stored.get(declared.key, declared.default() if declared.default else None)
            if value is not None:
                values[declared.key] = _number(value)
    return values


def value_text(value: Number) -> str:
    """A value as a proposal stores and shows it: "15", "2.5"."""
    if isinstance(value, Decimal):
        value = value.normalize()
        return str(int(value)) if value == value.to_integral_value() else format(value, "f")
    return str(value)


def value_parse(raw: str) -> Number:
    """A stored value back as a number; ValueError if it is not one."""
    try:
        decimal = Decimal(str(raw).strip())
    except InvalidOperation:
        raise ValueError(raw) from None
    if not decimal.is_finite():
        raise ValueError(raw)
    return int(decimal) if decimal == decimal.to_integral_value() else decimal


def changes_errors(
    changes: Mapping[str, str], *, current: Mapping[str, Number] | None = None,
    parameters: list[Parameter] | None = None, check_unchanged: bool = True,
) -> tuple[dict[str, Number], list[str]]:
    """Check proposed changes (key → value as typed) against the vocabulary and today's values, all at once.

    Returns (the parsed changes, every problem in words). A problem: an unknown key, a value that is not a
    number, a fraction where a whole number is due, a value out of range, rubric weights that would not add up
    to 100, a pool whose burst reserve and cold standby would reach 100 %, a value equal to today's (no change),
    or no change at all. `check_unchanged=False` (at adoption) lets a value equal today's pass.
    """
    current = dict(current if current is not None else current_values())
    known = {p.key: p for p in (parameters if parameters is not None else parameter_list())}
    problems: list[str] = []
    parsed: dict[str, Number] = {}
    for key, raw in changes.items():
        param = known.get(key)
        if param is None:
            problems.append(_("“%(key)s” is not a policy parameter.") % {"key": key})
            continue
        try:
            value = value_parse(raw)
        except ValueError:
            problems.append(_("%(label)s: “%(value)s” is not a number.") % {"label": param.label, "value": raw})
            continue
        if param.whole and not isinstance(value, int):
            problems.append(_("%(label)s is a whole number.") % {"label": param.label})
            continue
        if isinstance(value, Decimal) and value != value.quantize(Decimal(1).scaleb(-param.decimals)):
            if param.decimals == 2:
                problems.append(_("%(label)s has at most two decimals.") % {"label": param.label})
            else:
                problems.append(_("%(label)s has at most %(n)d decimals.") % {"label": param.label,
                                                                             "n": param.decimals})
            continue
        low_ok = value > param.minimum if param.above_minimum else value >= param.minimum
        if not low_ok or value > param.maximum:
            problems.append(_("%(label)s must be %(bounds)s %(unit)s; got %(value)s.") % {
                "label": param.label, "bounds": param.bounds_text(), "unit": param.unit, "value": value_text(value)})
            continue
        if check_unchanged and key in current and value == current[key]:
            problems.append(_("%(label)s is already %(value)s %(unit)s: propose another value.") % {
                "label": param.label, "value": value_text(value), "unit": param.unit})
            continue
        parsed[key] = value
    if not changes:
        problems.append(_("Change at least one parameter."))
    merged = {**current, **parsed}
    problems.extend(message for message in params.combined_errors(merged, set(parsed)) if message not in problems)
    return parsed, problems


def group_of(key: str) -> str:
    """Which policy a key belongs to: "rubric", "pool", "governance" or "elastic"."""
    if key.startswith(RUBRIC_PREFIX):
        return "rubric"
    if key.startswith(POOL_PREFIX):
        return "pool"
    if key.startswith(ELASTIC_PREFIX):
        return "elastic"
    return "governance"
