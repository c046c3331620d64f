"""The declarative list of governed parameters: each key's label, type, bounds and unit (NetBox's PARAMS).

A key is a dotted name. Two families carry a name of the app above in braces, which the app expands:

    rubric.{criterion}                       whole percents, all the criteria's adding up to 100 (committee.scoring)
    rubric_guidance.{criterion}              text: what a member weighs when scoring it (a change of it alone
                                             changes no number: it is exempt from one change a week)
    pool.{pool}.burst_reserve_pct            whole percents; {pool} is the pool's "cluster/slug"
    pool.{pool}.standby_pct                  whole percents; a pool's two stay below 100 together
    pool.{pool}.fast_lane_pct                whole percents of the pool's GPUs held back from the weekly plan for
                                             the fast lane (docs/fast-lane.md), default 0 (no fast lane); the
                                             pool's three reserves stay below 100 together
    fast_lane.max_gpu_hours                  the most GPU-hours (GPUs x hours) one fast-lane request may ask for
    pool.{pool}.billing_weight               A100-equivalents of one GPU-hour of the pool (the common unit), default 1
    pool.{pool}.price_per_gpu_hour           what one GPU-hour of the pool costs, in DOCKET_COST_CURRENCY, up to four
                                             decimals, default 0 (charges, statements, the dashboards' costs)
    fairshare.lent_usage_factor              how much a GPU-hour on lent capacity (a preemptible window) counts for
                                             fair share, 0 to 1, default 0
    fairshare.half_life_weeks                weeks, above 0, up to two decimals
    fairshare.trailing_weeks                 whole weeks
    review.quorum                            member scores per criterion
    elastic.<threshold>                      the elastic policy (allocations.elastic.evaluate)
    budget.{department}.quarterly            a department's budget per quarter, in DOCKET_COST_CURRENCY (0: none);
                                             {department} is its slug; set by finance (committee.services.budgets)
    budget.{department}.carry_over_pct       how much of last quarter's unspent budget carries over, as whole
                                             percents of last quarter's budget (0: none)
    budget.buffer_pct                        the share of each department's quarterly budget kept as its capacity
                                             buffer line, which emergencies draw on (whole percents, default 5)
    charges.preemptible_discount_pct         preemptible windows are charged this much less (whole percents)
    grants.max_weeks                         the most consecutive weeks one request may span (a run)
    grants.continuation_utilization_pct      a run's measured utilization in a week that confirms its next week
    charges.refuse_over_budget               a grant that would exceed its department's budget is refused (bool;
                                             default False: it is flagged and the committee may still grant it)
    outcomes.grace_days                      days after a grant's last window ends until its realized outcome is
                                             overdue (docs/outcomes.md), default 14
    outcomes.track_record_count              how many of a team's latest reported outcomes its track record reads,
                                             default 5
    outcomes.overdue_effect                  what an overdue outcome does: none, flag (the review marks the team's
                                             requests) or block (no new weekly request until it is reported)

A new parameter is one `Param` here; `default` is its value where no version sets it (version 1 is written as rows
by policy/migrations/0003_policy_values_from_versions.py from the settings and the old versions).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import time
from decimal import Decimal, InvalidOperation

from django.conf import settings
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _

Value = int | Decimal | bool | time | str

RUBRIC_PREFIX = "rubric."
RUBRIC_GUIDANCE_PREFIX = "rubric_guidance."
POOL_PREFIX = "pool."
ELASTIC_PREFIX = "elastic."
QUORUM = "review.quorum"
FAIRSHARE_HALF_LIFE = "fairshare.half_life_weeks"
FAIRSHARE_TRAILING = "fairshare.trailing_weeks"
FAIRSHARE_LENT_FACTOR = "fairshare.lent_usage_factor"
BILLING_WEIGHT = "billing_weight"  # pool.{pool}.billing_weight
BILLING_WEIGHT_MAX = 100
PRICE = "price_per_gpu_hour"  # pool.{pool}.price_per_gpu_hour
PRICE_MAX = 10**6
BUDGET_PREFIX = "budget."
BUDGET_MAX = 10**12
BUFFER_PCT = "budget.buffer_pct"
PREEMPTIBLE_DISCOUNT = "charges.preemptible_discount_pct"
GRANTS_MAX_WEEKS = "grants.max_weeks"
GRANTS_CONTINUATION_PCT = "grants.continuation_utilization_pct"
GRANTS_MAX_WEEKS_LIMIT = 26
REFUSE_OVER_BUDGET = "charges.refuse_over_budget"
OUTCOMES_GRACE_DAYS = "outcomes.grace_days"
OUTCOMES_TRACK_RECORD_COUNT = "outcomes.track_record_count"
OUTCOMES_OVERDUE_EFFECT = "outcomes.overdue_effect"
OVERDUE_EFFECTS = ("none", "flag", "block")
POOL_FIELDS = ("burst_reserve_pct", "standby_pct")
FAST_LANE = "fast_lane_pct"  # pool.{pool}.fast_lane_pct: held back from the weekly plan, like the two above
FAST_LANE_MAX_GPU_HOURS = "fast_lane.max_gpu_hours"
FAST_LANE_MAX_GPU_HOURS_LIMIT = 100_000
QUORUM_MAX = 50
HALF_LIFE_MAX_WEEKS = 520
TRAILING_MAX_WEEKS = 520
GUIDANCE_MAX_LENGTH = 2000
ELASTIC_SPAN_MAX_MINUTES = 10_080  # a week


# Version 1 of the rubric: the charter's weights, by criterion (committee.scoring.DEFAULT_WEIGHTS reads them here).
RUBRIC_CHARTER_WEIGHTS: dict[str, int] = {"business_impact": 40, "feasibility": 30, "urgency": 20, "fairness": 10}
# And its guidance (committee.scoring.DEFAULT_GUIDANCE reads it here). Stored text: what the charter says, in English.
RUBRIC_CHARTER_GUIDANCE: dict[str, str] = {
    "business_impact": "Revenue, retention or risk reduction the forecast shows, weighed by its confidence.",
    "feasibility": (
        "High when the request already is the efficient option (no cheaper variant works, or it adopted one "
        "that saves at least 30% GPU-hours); low when a feasible cheaper alternative exists and is not used."
    ),
    "urgency": "How soon the deadline is and what slips if it is missed.",
    "fairness": (
        "Computed: the team's recent share of GPU-hours against its entitled share, "
        "as the fair-share factor 10 × 2^(−usage share / entitled share)."
    ),
}


@dataclass(frozen=True)
class Param:
    key: str  # exact, or a pattern with one "{name}" part
    group: str | Promise
    label: str | Promise  # may name the pattern's part: "%(pool)s burst reserve"
    unit: str | Promise = ""
    kind: str = "int"  # "int", "decimal" (up to `decimals` decimals), "bool", "time" (HH:MM), "text" (not empty)
    choices: tuple[str, ...] = ()  # a text that must be one of these (outcomes.overdue_effect)
    decimals: int = 2  # a decimal's most decimals (a price per GPU-hour has four)
    minimum: int | Decimal | None = None
    maximum: int | Decimal | None = None
    above_minimum: bool = False  # the minimum itself is not allowed (a half-life above 0)
    max_length: int = 0  # a text's longest
    default: Callable[[], Value] | None = None
    # For a pattern: the parts that exist without any row, each with its value (the rubric's criteria).
    part_defaults: Callable[[], dict[str, Value]] | None = None

    def matches(self, key: str) -> str | None:
        """The pattern's part in `key` ("atlas/a100"), "" for an exact match, None when the key is not this one."""
        if "{" not in self.key:
            return "" if key == self.key else None
        head, _brace, rest = self.key.partition("{")
        tail = rest.partition("}")[2]
        if key.startswith(head) and key.endswith(tail) and len(key) > len(head) + len(tail):
            return key[len(head): len(key) - len(tail)]
        return None

    def expand(self, part: str) -> str:
        head, _brace, rest = self.key.partition("{")
        return head + part + rest.partition("}")[2]


# How long before a granted window ends its team is told (the "window.ending" event, docs/events.md).
WINDOW_ENDING_NOTICE = "lifecycle.ending_notice_hours"

PARAMS: tuple[Param, ...] = (
    Param("rubric.{criterion}", _("Rubric weights"), _("%(criterion)s weight"), "%", minimum=0, maximum=100,
          part_defaults=lambda: dict(RUBRIC_CHARTER_WEIGHTS)),
    Param("rubric_guidance.{criterion}", _("Rubric guidance"), _("%(criterion)s guidance"), kind="text",
          max_length=GUIDANCE_MAX_LENGTH, part_defaults=lambda: dict(RUBRIC_CHARTER_GUIDANCE)),
    Param("pool.{pool}.burst_reserve_pct", _("Pools"), _("%(pool)s burst reserve"), "%", minimum=0, maximum=99,
          default=lambda: 20),
    Param("pool.{pool}.standby_pct", _("Pools"), _("%(pool)s cold standby"), "%", minimum=0, maximum=99,
          default=lambda: 10),
    Param("pool.{pool}.fast_lane_pct", _("Pools"), _("%(pool)s fast-lane reserve"), "%", minimum=0, maximum=99,
          default=lambda: 0),
    Param(FAST_LANE_MAX_GPU_HOURS, _("Fast lane"), _("most GPU-hours of a fast-lane request"), _("GPU-hours"),
          minimum=1, maximum=FAST_LANE_MAX_GPU_HOURS_LIMIT, default=lambda: 96),
    Param("pool.{pool}.billing_weight", _("Pools"), _("%(pool)s billing weight"), _("A100-equivalents"),
          kind="decimal", minimum=0, maximum=BILLING_WEIGHT_MAX, above_minimum=True, default=lambda: 1),
    Param("pool.{pool}.price_per_gpu_hour", _("Pools"), _("%(pool)s price per GPU-hour"), _("per GPU-hour"),
          kind="decimal", minimum=0, maximum=PRICE_MAX, decimals=4, default=lambda: 0),
    Param(FAIRSHARE_HALF_LIFE, _("Fair share"), _("Fair-share half-life"), _("weeks"), kind="decimal", minimum=0,
          maximum=HALF_LIFE_MAX_WEEKS, above_minimum=True,
          default=lambda: value_parse("decimal", str(settings.DOCKET_FAIRSHARE_HALF_LIFE_WEEKS))),
    Param(FAIRSHARE_TRAILING, _("Fair share"), _("Fair-share trailing window"), _("weeks"), minimum=1,
          maximum=TRAILING_MAX_WEEKS, default=lambda: settings.DOCKET_FAIRSHARE_TRAILING_WEEKS),
    Param(FAIRSHARE_LENT_FACTOR, _("Fair share"), _("Fair-share factor of usage on lent GPUs"), "", kind="decimal",
          minimum=0, maximum=1, default=lambda: 0),
    Param("budget.{department}.quarterly", _("Budgets"), _("%(department)s quarterly budget"), _("per quarter"),
          kind="decimal", minimum=0, maximum=BUDGET_MAX, default=lambda: 0),
    Param("budget.{department}.carry_over_pct", _("Budgets"), _("%(department)s carry-over"), "%", minimum=0,
          maximum=100, default=lambda: 0),
    Param(BUFFER_PCT, _("Budgets"), _("Capacity buffer kept of each department's budget"), "%", minimum=0,
          maximum=100, default=lambda: 5),
    Param(PREEMPTIBLE_DISCOUNT, _("Budgets"), _("Discount on preemptible windows"), "%", minimum=0, maximum=100,
          default=lambda: 50),
    Param(REFUSE_OVER_BUDGET, _("Budgets"), _("Refuse a grant over the department's budget"), kind="bool",
          default=lambda: False),
    Param(QUORUM, _("Review"), _("Score quorum"), _("member scores"), minimum=1, maximum=QUORUM_MAX,
          default=lambda: settings.DOCKET_SCORE_QUORUM),
    Param("elastic.idle_threshold_pct", _("Elastic pools"), _("idle below utilization %"), "%", minimum=0,
          maximum=100, default=lambda: 25),
    Param("elastic.idle_span_minutes", _("Elastic pools"), _("idle span (minutes)"), _("minutes"), minimum=1,
          maximum=ELASTIC_SPAN_MAX_MINUTES, default=lambda: 5),
    Param("elastic.offer_idle_to_preemptible", _("Elastic pools"), _("offer idle GPUs to preemptible work"),
          kind="bool", default=lambda: True),
    Param("elastic.promote_utilization_pct", _("Elastic pools"), _("promote above pool utilization %"), "%",
          minimum=0, maximum=100, default=lambda: 80),
    Param("elastic.promote_queue_wait_minutes", _("Elastic pools"), _("promote above queue wait (minutes)"),
          _("minutes"), minimum=0, maximum=10_080, default=lambda: 30),
    Param("elastic.recent_span_minutes", _("Elastic pools"), _("recent span (minutes)"), _("minutes"), minimum=1,
          maximum=ELASTIC_SPAN_MAX_MINUTES, default=lambda: 10),
    Param("elastic.night_start", _("Elastic pools"), _("night starts"), kind="time", default=lambda: time(22, 0)),
    Param("elastic.night_end", _("Elastic pools"), _("night ends"), kind="time", default=lambda: time(6, 0)),
    Param("elastic.night_utilization_pct", _("Elastic pools"), _("open at night below utilization %"), "%",
          minimum=0, maximum=100, default=lambda: 30),
    Param("elastic.standby_wake_minutes", _("Elastic pools"), _("cold standby wakeable within (minutes)"),
          _("minutes"), minimum=1, maximum=ELASTIC_SPAN_MAX_MINUTES, default=lambda: 5),
    Param(WINDOW_ENDING_NOTICE, _("Lifecycle events"), _("notice before a window ends"), _("hours"), minimum=1,
          maximum=48, default=lambda: 1),
    Param(GRANTS_MAX_WEEKS, _("Runs over several weeks"), _("most weeks a request may span"), _("weeks"),
          minimum=1, maximum=GRANTS_MAX_WEEKS_LIMIT, default=lambda: 4),
    Param(GRANTS_CONTINUATION_PCT, _("Runs over several weeks"),
          _("measured utilization that confirms a run's next week"), "%", minimum=0, maximum=100,
          default=lambda: 50),
    Param(OUTCOMES_GRACE_DAYS, _("Outcomes against forecasts"),
          _("days after a grant's last window until its outcome is overdue"), _("days"), minimum=0, maximum=365,
          default=lambda: 14),
    Param(OUTCOMES_TRACK_RECORD_COUNT, _("Outcomes against forecasts"),
          _("latest outcomes a team's track record reads"), _("outcomes"), minimum=1, maximum=50, default=lambda: 5),
    Param(OUTCOMES_OVERDUE_EFFECT, _("Outcomes against forecasts"), _("what an overdue outcome does"), kind="text",
          choices=OVERDUE_EFFECTS, default=lambda: "flag"),
)


def as_int(value: object) -> int:
    """A numeric value as a whole number (a stored "15" read back as 15)."""
    if isinstance(value, bool) or not isinstance(value, int | Decimal | float):
        raise TypeError(f"not a number: {value!r}")
    return int(value)


def as_float(value: object) -> float:
    """A numeric value as a float (the fair-share half-life, 2.5)."""
    if isinstance(value, bool) or not isinstance(value, int | Decimal | float):
        raise TypeError(f"not a number: {value!r}")
    return float(value)


def defaults() -> dict[str, Value]:
    """Every value version 1 has where no row says otherwise: each exact key's default, each declared part's."""
    out: dict[str, Value] = {}
    for param in PARAMS:
        if param.part_defaults is not None:
            out.update({param.expand(part): value for part, value in param.part_defaults().items()})
        elif "{" not in param.key and param.default is not None:
            out[param.key] = param.default()
    return out


def param_for(key: str) -> tuple[Param, str] | None:
    """The declaration of `key` and the part its pattern matched ("" for an exact key); None for an unknown key."""
    for param in PARAMS:
        part = param.matches(key)
        if part is not None:
            return param, part
    return None


def value_parse(kind: str, raw: str) -> Value:
    """A stored value (text) as its type; ValueError when it is not one."""
    raw = str(raw).strip()
    if kind == "text":
        if not raw:
            raise ValueError(raw)
        return raw
    if kind == "bool":
        if raw not in ("true", "false"):
            raise ValueError(raw)
        return raw == "true"
    if kind == "time":
        return time.fromisoformat(raw)
    try:
        number = Decimal(raw)
    except InvalidOperation:
        raise ValueError(raw) from None
    if not number.is_finite():
        raise ValueError(raw)
    if number == number.to_integral_value():
        return int(number)
    if kind == "int":
        raise ValueError(raw)
    return number


def value_text(value: object) -> str:
    """A value as the store keeps it: "15", "2.5", "true", "22:00", a text as it is."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, time):
        return value.strftime("%H:%M")
    if isinstance(value, float):
        value = Decimal(str(value))
    if isinstance(value, Decimal):
        value = value.normalize()
        return str(int(value)) if value == value.to_integral_value() else format(value, "f")
    return str(int(value))  # type: ignore[call-overload]


def value_errors(key: str, raw: object) -> tuple[Value | None, str]:
    """(the value, "") or (None, the problem in words) for one key and its value as given."""
    found = param_for(key)
    if found is None:
        return None, str(_("“%(key)s” is not a policy parameter.") % {"key": key})
    param, _part = found
    try:
        value = value_parse(param.kind, value_text(raw) if not isinstance(raw, str) else raw)
    except (ValueError, TypeError):
        return None, str(_("%(key)s: “%(value)s” is not a value of this parameter.") % {"key": key, "value": raw})
    if isinstance(value, str) and param.choices and value not in param.choices:
        return None, str(_("%(key)s is one of: %(choices)s.") % {"key": key, "choices": ", ".join(param.choices)})
    if isinstance(value, str) and param.max_length and len(value) > param.max_length:
        return None, str(_("%(key)s: at most %(n)d characters.") % {"key": key, "n": param.max_length})
    if isinstance(value, Decimal) and value != value.quantize(Decimal(1).scaleb(-param.decimals)):
        if param.decimals == 2:
            return None, str(_("%(key)s has at most two decimals.") % {"key": key})
        return None, str(_("%(key)s has at most %(n)d decimals.") % {"key": key, "n": param.decimals})
    if isinstance(value, int | Decimal) and not isinstance(value, bool):
        low_ok = param.minimum is None or (value > param.minimum if param.above_minimum else value >= param.minimum)
        high_ok = param.maximum is None or value <= param.maximum
        if not (low_ok and high_ok):
            return None, str(_("%(key)s is out of range: %(value)s.") % {"key": key, "value": value_text(value)})
    return value, ""


def _or_default(values: Mapping[str, Value], key: str) -> Value:
    """`key`'s value among `values`, else its declared default (a pool no change names yet), else 0."""
    if key in values:
        return values[key]
    found = param_for(key)
    return found[0].default() if found and found[0].default else 0


def pool_reserves(values: Mapping[str, Value], pool: str) -> tuple[int, int, int]:
    """(burst reserve %, cold standby %, fast-lane reserve %) of `pool` ("cluster/slug") in a week's `values`
    (governed.selectors.policy_values), its declared default where no change names the pool."""
    reserves = []
    for field in (*POOL_FIELDS, FAST_LANE):
        key = f"{POOL_PREFIX}{pool}.{field}"
        found = param_for(key)
        reserves.append(as_int(values.get(key, found[0].default() if found and found[0].default else 0)))
    return reserves[0], reserves[1], reserves[2]


def billing_weight(values: Mapping[str, Value], pool: str) -> Decimal:
    """A100-equivalent GPU-hours of one GPU-hour of `pool` ("cluster/slug") in a week's `values`, 1 where no change
    names the pool."""
    return Decimal(value_text(values.get(f"{POOL_PREFIX}{pool}.{BILLING_WEIGHT}", 1)))


def pool_price(values: Mapping[str, Value], pool: str) -> Decimal:
    """What one GPU-hour of `pool` ("cluster/slug") costs in a week's `values`, 0 where no change names the pool."""
    return Decimal(value_text(values.get(f"{POOL_PREFIX}{pool}.{PRICE}", 0)))


def combined_errors(merged: Mapping[str, Value], changed: set[str]) -> list[str]:
    """The rules between keys, for the `changed` keys among the values `merged` (in force, with the changes): the
    rubric weights add up to 100, a pool's reserve and standby stay below 100, the elastic policy's night ends at
    another time than it starts. Every problem in words."""
    problems: list[str] = []
    if any(k.startswith(RUBRIC_PREFIX) for k in changed):
        total = sum(as_int(v) for k, v in merged.items() if k.startswith(RUBRIC_PREFIX))
        if total != 100:
            problems.append(_("The rubric weights must add up to 100; these add up to %(total)d.") % {"total": total})
    pools = {k.removeprefix(POOL_PREFIX).rpartition(".")[0] for k in changed if k.startswith(POOL_PREFIX)}
    for pool in sorted(pools):
        reserve = as_int(_or_default(merged, f"{POOL_PREFIX}{pool}.burst_reserve_pct"))
        standby = as_int(_or_default(merged, f"{POOL_PREFIX}{pool}.standby_pct"))
        fast = as_int(_or_default(merged, f"{POOL_PREFIX}{pool}.{FAST_LANE}"))
        if reserve + standby + fast >= 100 and not fast:
            problems.append(_("Pool %(pool)s: burst reserve %(reserve)s %% plus cold standby %(standby)s %% must stay "
                              "below 100 %%.") % {"pool": pool, "reserve": reserve, "standby": standby})
        elif reserve + standby + fast >= 100:
            problems.append(_("Pool %(pool)s: burst reserve %(reserve)s %% plus cold standby %(standby)s %% plus "
                              "fast-lane reserve %(fast)s %% must stay below 100 %%.")
                            % {"pool": pool, "reserve": reserve, "standby": standby, "fast": fast})
    night = (f"{ELASTIC_PREFIX}night_start", f"{ELASTIC_PREFIX}night_end")
    if changed & set(night) and merged.get(night[0]) == merged.get(night[1]):
        problems.append(str(_("The night must end at another time than it starts.")))
    return problems
