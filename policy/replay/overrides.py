"""The overrides of a replay: `<key>=<value>` pairs in the vocabulary of policy.parameters, checked all at once.

Every problem is reported, each naming its key, and nothing is computed while there is one. Rules:

- `rubric.<criterion>`: whole percents 0–100. Criteria not given keep the current rubric's weight;
  the four together must add up to 100. The same weights then rank every replayed week.
- `pool.<pool>.burst_reserve_pct`, `pool.<pool>.standby_pct`: whole percents 0–99, and the pool's two
  reserves together below 100 (as the database holds them). `<pool>` is the pool's key ("atlas/a100")
  or, where only one pool has it, its slug ("a100").
- `pool.<pool>.billing_weight`, `pool.<pool>.price_per_gpu_hour`: accepted, and listed as not replayed (the usage
  is read as counted; the replay charges nothing).
- `fairshare.half_life_weeks`: a number of weeks above 0, at most 52; `fairshare.trailing_weeks` whole,
  1–52.
- `review.quorum`: whole, 1–50 member scores per criterion.
- `elastic.<field>`: a threshold of the elastic policy (governed.params). Accepted, and listed as not replayed:
  the elastic policy acts on running windows, not on the weekly placement.
- `weeks`: how many past weeks, 1–52 (default 8). An empty value means "not overridden".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from django.utils.translation import gettext as _

from committee import scoring
from core.isoweek import parse_iso_week
from governed.params import BILLING_WEIGHT, FAIRSHARE_LENT_FACTOR, FAST_LANE, PREEMPTIBLE_DISCOUNT, PRICE
from policy import parameters

DEFAULT_WEEKS = 8
MIN_WEEKS = 1
MAX_WEEKS = 52
MAX_QUORUM = 50
MAX_FAIRSHARE_WEEKS = 52
WEEKS_PARAM = "weeks"
BEFORE_PARAM = "before"


class ReplayErrors(ValueError):
    """Every problem with a replay's parameters, each a sentence naming its key."""

    def __init__(self, messages: Sequence[str]) -> None:
        super().__init__("; ".join(messages))
        self.messages = list(messages)


@dataclass(frozen=True)
class PoolReserves:
    """A pool as the override parser knows it: its key, slug and current reserves."""

    key: str
    slug: str
    burst_reserve_pct: int
    standby_pct: int


@dataclass(frozen=True)
class Overrides:
    """What a replay changes; None (or empty) keeps each week's own value."""

    weights: Mapping[str, int] | None = None
    quorum: int | None = None
    half_life_weeks: float | None = None
    trailing_weeks: int | None = None
    pools: Mapping[str, Mapping[str, int]] = field(default_factory=dict)  # pool key → {field: pct}
    not_replayed: tuple[str, ...] = ()  # accepted keys the replay does not model (elastic.*)
    given: tuple[tuple[str, str], ...] = ()  # the overrides as given, sorted: for the page and the fingerprint

    @property
    def empty(self) -> bool:
        return (
            self.weights is None
            and self.quorum is None
            and self.half_life_weeks is None
            and self.trailing_weeks is None
            and not self.pools
        )

    @property
    def fairshare_changed(self) -> bool:
        return self.half_life_weeks is not None or self.trailing_weeks is not None


def _number(key: str, text: str, errors: list[str]) -> Decimal | None:
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        errors.append(_("%(key)s: “%(value)s” is not a number.") % {"key": key, "value": text})
        return None
    if not value.is_finite():
        errors.append(_("%(key)s: “%(value)s” is not a number.") % {"key": key, "value": text})
        return None
    return value


def _whole(key: str, text: str, errors: list[str], *, low: int, high: int) -> int | None:
    value = _number(key, text, errors)
    if value is None:
        return None
    if value != value.to_integral_value():
        errors.append(_("%(key)s: give a whole number, not %(value)s.") % {"key": key, "value": text})
        return None
    if not low <= value <= high:
        errors.append(
            _("%(key)s: %(value)s is out of range (%(low)d to %(high)d).")
            % {"key": key, "value": text, "low": low, "high": high}
        )
        return None
    return int(value)


def _pool_for(name: str, pools: Sequence[PoolReserves]) -> PoolReserves | None:
    by_key = [p for p in pools if p.key == name]
    if by_key:
        return by_key[0]
    by_slug = [p for p in pools if p.slug == name]
    return by_slug[0] if len(by_slug) == 1 else None


def weeks_parse(text: str | None, errors: list[str]) -> int:
    """The number of weeks to replay (default 8), or the default with an error appended."""
    if text is None or not text.strip():
        return DEFAULT_WEEKS
    value = _whole(WEEKS_PARAM, text, errors, low=MIN_WEEKS, high=MAX_WEEKS)
    return DEFAULT_WEEKS if value is None else value


def overrides_parse(
    params: Iterable[tuple[str, str]],
    *,
    current_weights: Mapping[str, int],
    pools: Sequence[PoolReserves],
    elastic_fields: Iterable[str],
    ignore: Iterable[str] = (BEFORE_PARAM, WEEKS_PARAM),
) -> Overrides:
    """The overrides in `params`, or ReplayErrors listing every problem. Empty values are not overrides."""
    errors: list[str] = []
    skipped = set(ignore)
    elastic = set(elastic_fields)
    given: dict[str, str] = {}
    for key, value in params:
        if key in skipped or not str(value).strip():
            continue
        given[key] = str(value).strip()

    weights: dict[str, int] = {}
    quorum: int | None = None
    half_life: float | None = None
    trailing: int | None = None
    reserves: dict[str, dict[str, int]] = {}
    not_replayed: list[str] = []
    for key in sorted(given):
        text = given[key]
        if key.startswith(parameters.RUBRIC_PREFIX):
            criterion = key.removeprefix(parameters.RUBRIC_PREFIX)
            if criterion not in scoring.CRITERIA:
                errors.append(_("%(key)s: not a criterion of the rubric.") % {"key": key})
                continue
            pct = _whole(key, text, errors, low=0, high=100)
            if pct is not None:
                weights[criterion] = pct
        elif key == parameters.QUORUM:
            quorum = _whole(key, text, errors, low=1, high=MAX_QUORUM)
        elif key == parameters.FAIRSHARE_HALF_LIFE:
            number = _number(key, text, errors)
            if number is not None:
                if not 0 < number <= MAX_FAIRSHARE_WEEKS:
                    errors.append(
                        _("%(key)s: %(value)s is out of range (above 0, at most %(high)d weeks).")
                        % {"key": key, "value": text, "high": MAX_FAIRSHARE_WEEKS}
                    )
                else:
                    half_life = float(number)
        elif key == parameters.FAIRSHARE_TRAILING:
            trailing = _whole(key, text, errors, low=1, high=MAX_FAIRSHARE_WEEKS)
        elif key == FAIRSHARE_LENT_FACTOR:  # usage is read as counted in the week it was measured
            if _number(key, text, errors) is not None:
                not_replayed.append(key)
        elif key == PREEMPTIBLE_DISCOUNT:  # charges: the replay places and ranks, it charges nothing
            if _whole(key, text, errors, low=0, high=100) is not None:
                not_replayed.append(key)
        elif key.startswith(parameters.ELASTIC_PREFIX):
            if key.removeprefix(parameters.ELASTIC_PREFIX) not in elastic:
                errors.append(_("%(key)s: not a parameter of the elastic policy.") % {"key": key})
            else:
                not_replayed.append(key)
        elif (parsed := parameters.pool_key_parse(key)) is not None:
            name, pool_field = parsed
            pool = _pool_for(name, pools)
            if pool is None:
                errors.append(_("%(key)s: there is no pool “%(pool)s”.") % {"key": key, "pool": name})
                continue
            if pool_field == BILLING_WEIGHT:  # the common unit: not replayed (the usage is read as counted)
                not_replayed.append(key)
                continue
            if pool_field == FAST_LANE:  # held back from the weekly plan: not replayed yet (docs/fast-lane.md)
                if _whole(key, text, errors, low=0, high=99) is not None:
                    not_replayed.append(key)
                continue
            if pool_field == PRICE:  # charges: the replay places and ranks, it charges nothing
                if _number(key, text, errors) is not None:
                    not_replayed.append(key)
                continue
            pct = _whole(key, text, errors, low=0, high=99)
            if pct is not None:
                reserves.setdefault(pool.key, {})[pool_field] = pct
        else:
            errors.append(_("%(key)s: not a policy parameter.") % {"key": key})

    if weights:
        merged = {c: weights.get(c, current_weights[c]) for c in scoring.CRITERIA}
        total = sum(merged.values())
        if total != 100:
            errors.append(
                _("rubric: the weights must add up to 100%%; with the current rubric's other weights they add up "
                  "to %(total)d%%.")
                % {"total": total}
            )
    for key, changed in reserves.items():
        pool = next(p for p in pools if p.key == key)
        burst = changed.get("burst_reserve_pct", pool.burst_reserve_pct)
        standby = changed.get("standby_pct", pool.standby_pct)
        if burst + standby >= 100:
            errors.append(
                _("pool %(pool)s: burst reserve and cold standby must stay below 100%% together; they would be "
                  "%(burst)d%% + %(standby)d%%.")
                % {"pool": key, "burst": burst, "standby": standby}
            )
    if errors:
        raise ReplayErrors(errors)
    return Overrides(
        weights={c: weights.get(c, current_weights[c]) for c in scoring.CRITERIA} if weights else None,
        quorum=quorum,
        half_life_weeks=half_life,
        trailing_weeks=trailing,
        pools=reserves,
        not_replayed=tuple(not_replayed),
        given=tuple(sorted(given.items())),
    )


@dataclass(frozen=True)
class ReplayQuery:
    """A replay as asked for: the overrides, how many weeks, and the week the replay stops before (None: now)."""

    overrides: Overrides
    weeks: int
    before: str | None


def replay_query_parse(
    params: Sequence[tuple[str, str]],
    *,
    current_weights: Mapping[str, int],
    pools: Sequence[PoolReserves],
    elastic_fields: Iterable[str],
) -> ReplayQuery:
    """`weeks`, `before` and the overrides of a replay's GET parameters; ReplayErrors lists every problem."""
    errors: list[str] = []
    values = dict(params)
    weeks = weeks_parse(values.get(WEEKS_PARAM), errors)
    before = (values.get(BEFORE_PARAM) or "").strip() or None
    if before is not None:
        try:
            parse_iso_week(before)
        except ValueError:
            errors.append(_("before: write an ISO week that exists as YYYY-Www, e.g. 2026-W49."))
            before = None
    overrides = Overrides()
    try:
        overrides = overrides_parse(
            params, current_weights=current_weights, pools=pools, elastic_fields=elastic_fields
        )
    except ReplayErrors as exc:
        errors.extend(exc.messages)
    if errors:
        raise ReplayErrors(errors)
    return ReplayQuery(overrides=overrides, weeks=weeks, before=before)
