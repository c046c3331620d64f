"""The replay page and its htmx fragment (anyone signed in, as the archive). Parse the overrides, load, replay, render.

/policy/replay/ is the form (which parameters, to what, how many weeks) with the results below it;
/policy/replay/partial/ is the results alone, for a proposal's page (`hx-get` with `<key>=<value>`
and `weeks=N`). Bad parameters answer 400 listing every problem, and nothing is loaded or computed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.formats import number_format
from django.utils.html import escape
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_GET

from committee import scoring
from committee.models import criterion_label
from committee.weeks import current_week_label
from policy import parameters
from policy.replay import ReplayErrors, ReplayResult, replay
from policy.replay.data import Measure, Note, ReplayInputs
from policy.replay.overrides import DEFAULT_WEEKS, PoolReserves, ReplayQuery, replay_query_parse
from policy.selectors.replay import replay_before, replay_inputs_load, replay_parameters

ERROR_HEADER = "X-Docket-Replay"  # static/docket/replay.js swaps a 400 that carries it: the errors are the answer


# ---------------------------------------------------------------------------------------------
# What the templates show


@dataclass(frozen=True)
class Cell:
    """A number of the side-by-side table: baseline, proposed, signed change, what happened."""

    baseline: str
    proposed: str
    change: str
    direction: str  # "better", "worse" or "same", for the colour
    actual: str = ""


def _number(value: Decimal, places: int = 0) -> str:
    return number_format(value, decimal_pos=places, use_l10n=True, force_grouping=True)


def _cell(measure: Measure, *, places: int = 0, more_is_better: bool = True) -> Cell:
    change = measure.change
    numbers = [measure.baseline, measure.proposed, change] + ([measure.actual] if measure.actual is not None else [])
    if all(n == n.to_integral_value() for n in numbers):
        places = 0  # the cell's numbers share their decimals: "4.00 → 3.71", "6,912 → 6,912"
    if change == 0:
        direction, signed = "same", "±0"
    else:
        better = (change > 0) == more_is_better
        direction = "better" if better else "worse"
        signed = ("+" if change > 0 else "−") + _number(abs(change), places)
    return Cell(
        baseline=_number(measure.baseline, places),
        proposed=_number(measure.proposed, places),
        change=signed,
        direction=direction,
        actual="" if measure.actual is None else _number(measure.actual, places),
    )


@dataclass(frozen=True)
class TeamView:
    name: str
    outcome: str
    outcome_label: str
    mean_rank: Cell
    decided: Cell
    placed: Cell
    values: list[tuple[str, Cell]]


@dataclass(frozen=True)
class PoolView:
    key: str
    placed: Cell
    idle: Cell
    contended: Cell


@dataclass(frozen=True)
class RequestView:
    title: str
    team: str
    pool: str
    baseline_rank: str
    proposed_rank: str
    rank_direction: str
    baseline_placed: str
    proposed_placed: str
    actual_placed: str
    placed_direction: str
    note: str


@dataclass(frozen=True)
class WeekView:
    week: str
    rubric_version: int
    requests: list[RequestView]
    notes: list[str]


def _outcome_label(outcome: str) -> str:
    return {"gains": _("gains"), "loses": _("loses"), "same": _("same placement")}[outcome]


def _titles(requests: Sequence[int], titles: Mapping[int, str]) -> str:
    return "; ".join(titles.get(ref, f"#{ref}") for ref in requests)


def note_text(note: Note, titles: Mapping[int, str]) -> str:
    """A note in the reader's language."""
    p: Mapping[str, Any] = note.params
    if note.code == "not_replayed":
        return _(
            "%(key)s is not replayed: the elastic policy acts on running windows, not on the weekly placement."
        ) % {"key": p["key"]}
    texts = {
        "not_published": lambda: _("Finalized, not published: nothing was placed; the replay places the decisions."),
        "later_version": lambda: _(
            "The current plan is version %(version)d: what happened includes its corrections; the replays start from "
            "the decisions as they stand."
        ) % {"version": p["version"]},
        "corrected": lambda: _("Decisions corrected after finalize (replayed as corrected): %(titles)s.")
        % {"titles": _titles(p["requests"], titles)},
        "emergency": lambda: ngettext(
            "%(count)d emergency window, %(hours)s GPU-hours, was placed beside the plan: not in the replays.",
            "%(count)d emergency windows, %(hours)s GPU-hours, were placed beside the plan: not in the replays.",
            p["windows"],
        ) % {"count": p["windows"], "hours": _number(Decimal(p["gpu_hours"]))},
        "baseline_rank_differs": lambda: _(
            "The baseline ranks differently from the archive (the quorum setting or the scores changed since): "
            "%(titles)s."
        ) % {"titles": _titles(p["requests"], titles)},
        "baseline_plan_differs": lambda: _(
            "The baseline places differently from plan version 1 (the pools changed since, or capacity history is "
            "missing): %(titles)s."
        ) % {"titles": _titles(p["requests"], titles)},
        "dropped_below_quorum": lambda: _(
            "Below the proposed quorum, so never granted (dropped from the proposal): %(titles)s."
        ) % {"titles": _titles(p["requests"], titles)},
        "ranked_kept_deferred": lambda: _(
            "Ranked under the proposal but deferred automatically in the week (no decision): kept deferred: "
            "%(titles)s."
        ) % {"titles": _titles(p["requests"], titles)},
    }
    return texts[note.code]()


def _rank(rank: int | None) -> str:
    return "—" if rank is None else str(rank)


def _weeks_view(*, inputs: ReplayInputs, result: ReplayResult, titles: Mapping[int, str]) -> list[WeekView]:
    views = []
    for week, detail in zip(inputs.weeks, result.detail, strict=True):
        by_id = {r.request_id: r for r in week.requests}
        proposed = {r.request_id: r for r in detail.proposed.requests}
        rows = []
        for base in detail.baseline.requests:
            prop = proposed[base.request_id]
            request = by_id[base.request_id]
            if base.rank is not None and prop.rank is not None:
                rank_direction = "same" if base.rank == prop.rank else ("better" if prop.rank < base.rank else "worse")
            else:
                rank_direction = "same" if base.rank == prop.rank else ("worse" if prop.rank is None else "better")
            placed_change = prop.placed_gpu_hours - base.placed_gpu_hours
            rows.append(
                RequestView(
                    title=request.title,
                    team=request.team_name,
                    pool=request.pool,
                    baseline_rank=_rank(base.rank),
                    proposed_rank=_rank(prop.rank),
                    rank_direction=rank_direction,
                    baseline_placed=_number(Decimal(base.placed_gpu_hours)),
                    proposed_placed=_number(Decimal(prop.placed_gpu_hours)),
                    actual_placed=_number(Decimal(detail.actual_placed.get(base.request_id, 0))),
                    placed_direction="same" if placed_change == 0 else ("better" if placed_change > 0 else "worse"),
                    note=_("dropped: below quorum") if prop.dropped else "",
                )
            )
        views.append(
            WeekView(
                week=week.week,
                rubric_version=week.rubric_version,
                requests=rows,
                notes=[note_text(n, titles) for n in result.notes if n.week == week.week],
            )
        )
    return views


def change_figure(teams: Sequence[TeamView], result: ReplayResult) -> dict[str, Any]:
    """A Plotly figure (plain dict): each team's change of placed GPU-hours, green up, red down."""
    rows = [(t.team_name, int(t.placed_gpu_hours.change)) for t in result.teams]
    return {
        "data": [
            {
                "type": "bar",
                "orientation": "h",
                "y": [escape(name) for name, _change in rows],  # Plotly reads <a href> in labels: names are text
                "x": [change for _name, change in rows],
                "marker": {"color": ["#2e7d32" if c > 0 else "#c62828" if c < 0 else "#9e9e9e" for _n, c in rows]},
                "hovertemplate": "%{y}: %{x:+,} " + _("GPU-hours") + "<extra></extra>",
            }
        ],
        "layout": {
            "title": {"text": _("Placed GPU-hours: proposal against baseline"), "font": {"size": 14}},
            "xaxis": {"zeroline": True, "zerolinewidth": 2, "tickformat": ",", "automargin": True},
            "yaxis": {"automargin": True, "autorange": "reversed"},
            "height": max(160, 36 * len(rows) + 80),
            "margin": {"l": 10, "r": 10, "t": 40, "b": 30},
            "paper_bgcolor": "rgba(0,0,0,0)",
            "plot_bgcolor": "rgba(0,0,0,0)",
        },
    }


def results_context(*, query: ReplayQuery) -> dict[str, Any]:
    """Load and replay; everything the results fragment shows."""
    inputs = replay_inputs_load(
        before=replay_before(week=query.before), weeks=query.weeks, usage_weeks=query.overrides.trailing_weeks
    )
    result = replay(inputs=inputs, overrides=query.overrides)
    titles = {r.request_id: r.title for w in inputs.weeks for r in w.requests}
    teams = [
        TeamView(
            name=t.team_name,
            outcome=t.outcome,
            outcome_label=_outcome_label(t.outcome),
            mean_rank=_cell(t.mean_rank, places=2, more_is_better=False),
            decided=_cell(t.decided_gpu_hours),
            placed=_cell(t.placed_gpu_hours),
            values=[(unit, _cell(m, places=2, more_is_better=False)) for unit, m in t.unplaced_value.items()],
        )
        for t in result.teams
    ]
    pools = [
        PoolView(
            key=p.pool,
            placed=_cell(p.placed_gpu_hours),
            idle=_cell(p.idle_gpu_hours, more_is_better=False),
            contended=_cell(p.contended_hours, more_is_better=False),
        )
        for p in result.pools
    ]
    return {
        "result": result,
        "weeks_asked": query.weeks,
        "overrides": query.overrides.given,
        "teams": teams,
        "pools": pools,
        "weeks": _weeks_view(inputs=inputs, result=result, titles=titles),
        "general_notes": [note_text(n, titles) for n in result.notes if not n.week],
        "figure": change_figure(teams, result) if result.teams else None,
        "gains": [t.team_name for t in result.gains],
        "losses": [t.team_name for t in result.losses],
    }


# ---------------------------------------------------------------------------------------------
# The form's fields


@dataclass(frozen=True)
class FieldView:
    name: str
    label: str
    value: str
    current: str
    step: str = "1"


def _fields(
    *, params: Mapping[str, str], weights: Mapping[str, int], pools: Sequence[PoolReserves]
) -> dict[str, list[FieldView]]:
    def field(name: str, label: str, current: object, step: str = "1") -> FieldView:
        return FieldView(name=name, label=label, value=params.get(name, ""), current=str(current), step=step)

    return {
        "rubric": [
            field(f"{parameters.RUBRIC_PREFIX}{c}", criterion_label(c), weights[c]) for c in scoring.CRITERIA
        ],
        "review": [
            field(parameters.QUORUM, _("Quorum (member scores per criterion)"), settings.DOCKET_SCORE_QUORUM),
            field(
                parameters.FAIRSHARE_HALF_LIFE,
                _("Fair-share half-life (weeks)"),
                settings.DOCKET_FAIRSHARE_HALF_LIFE_WEEKS,
                step="any",
            ),
            field(
                parameters.FAIRSHARE_TRAILING,
                _("Fair-share trailing window (weeks)"),
                settings.DOCKET_FAIRSHARE_TRAILING_WEEKS,
            ),
        ],
        "pools": [
            f
            for p in pools
            for f in (
                field(
                    parameters.pool_key(p.key, "burst_reserve_pct"),
                    _("%(pool)s burst reserve %%") % {"pool": p.key},
                    p.burst_reserve_pct,
                ),
                field(
                    parameters.pool_key(p.key, "standby_pct"),
                    _("%(pool)s cold standby %%") % {"pool": p.key},
                    p.standby_pct,
                ),
            )
        ],
    }


def _params(request: HttpRequest) -> dict[str, str]:
    """The GET parameters, the last value of each (as a form sends them)."""
    return {key: request.GET.get(key, "") or "" for key in request.GET}


def _parse(request: HttpRequest) -> tuple[ReplayQuery | None, list[str], Any]:
    weights, pools, elastic = replay_parameters()
    try:
        query = replay_query_parse(
            list(_params(request).items()), current_weights=weights, pools=pools, elastic_fields=elastic
        )
    except ReplayErrors as exc:
        return None, exc.messages, (weights, pools)
    return query, [], (weights, pools)


@login_required
@require_GET
def replay_page(request: HttpRequest) -> HttpResponse:
    """The form and, once asked (any parameter given), the replay beside its baseline."""
    query, errors, (weights, pools) = _parse(request)
    params = _params(request)
    context: dict[str, Any] = {
        "errors": errors,
        "fields": _fields(params=params, weights=weights, pools=pools),
        "weeks_value": params.get("weeks", ""),
        "before_value": params.get("before", ""),
        "default_weeks": DEFAULT_WEEKS,
        "example_week": current_week_label(timezone.now()),
        "asked": bool(request.GET),
    }
    if query is not None and request.GET:
        context.update(results_context(query=query))
    return render(request, "policy/replay.html", context, status=400 if errors else 200)


@login_required
@require_GET
def replay_partial(request: HttpRequest) -> HttpResponse:
    """The results alone (htmx): the overrides as `<key>=<value>`, `weeks=N` (default 8), `before=YYYY-Www`."""
    query, errors, _current = _parse(request)
    if query is None:
        response = render(request, "policy/_replay_errors.html", {"errors": errors}, status=400)
        response[ERROR_HEADER] = "errors"
        return response
    return render(request, "policy/_replay_results.html", results_context(query=query))
