"""Plotly figures of the dashboards' tables. Each figure is drawn from its `Table` alone (plain data in, figure out).

The browser draws them with the plotly.js the app serves (static/plotly/plotly.min.js, from the plotly
package); the capacity-planning PDF has tables only.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import plotly.graph_objects as go
from django.utils import formats
from django.utils.html import escape
from django.utils.translation import gettext as _

from reports.charts import PALETTE
from reports.dashboards.selectors import Table

HEIGHT = 380


def separators() -> str:
    """Plotly's `separators`: the reader's decimal mark, then its thousands separator."""
    return str(formats.get_format("DECIMAL_SEPARATOR")) + str(formats.get_format("THOUSAND_SEPARATOR"))


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, Decimal | int | float) else None


def _layout(**extra: Any) -> dict[str, Any]:
    return {
        # Hover text and ticks group thousands with the reader's separators (core/formats/), as the tables do.
        "separators": separators(),
        "height": HEIGHT,
        "margin": {"l": 60, "r": 20, "t": 20, "b": 50},
        "legend": {"orientation": "h", "y": -0.2},
        "font": {"family": "system-ui, sans-serif", "size": 12},
        **extra,
    }


def _series(table: Table, group: str, x: str, y: str) -> dict[str, tuple[list[Any], list[float | None]]]:
    """{group value: (x values, y values)} in the table's row order."""
    series: dict[str, tuple[list[Any], list[float | None]]] = {}
    for row in table.as_dicts():
        xs, ys = series.setdefault(str(row[group]), ([], []))
        xs.append(row[x])
        ys.append(_num(row[y]))
    return series


# The dashboards index's figures are plain dicts, built as plotly.js reads them: a `go.Figure` validates and
# deep-copies every property it is given (124,000 deepcopy calls for the index at 250 teams, docs/benchmarks.md).
# `tests/reports/test_dashboards.py` checks each against plotly's own validation and serialization.
Figure = dict[str, Any]


@functools.cache
def _template() -> dict[str, Any]:
    """The look plotly gives a new figure (its default template), as JSON data, read once per process."""
    template: dict[str, Any] = json.loads(go.Figure().to_json())["layout"]["template"]
    return template


def _figure(traces: list[dict[str, Any]], **layout: Any) -> Figure:
    return {"data": traces, "layout": {"template": _template(), **_layout(**layout)}}


def _bar(**trace: Any) -> dict[str, Any]:
    return {"type": "bar", **trace}


def _scatter(**trace: Any) -> dict[str, Any]:
    return {"type": "scatter", **trace}


def _granted_used_figure(table: Table, group: str) -> Figure:
    """Per `group` (a team, a department): what the committee decided, what the plans placed, what was used."""
    traces = []
    decided = _series(table, group, "week", "decided_a100_gpu_hours")
    placed = _series(table, group, "week", "placed_a100_gpu_hours")
    used = _series(table, group, "week", "used_a100_gpu_hours")
    for index, key in enumerate(placed):
        color = PALETTE[index % len(PALETTE)]
        name = escape(key)  # Plotly reads a few HTML tags (<a href>) in legends: a team's name is text
        traces += [
            _bar(name=_("%(team)s decided") % {"team": name}, x=decided[key][0], y=decided[key][1],
                 offsetgroup=f"{key} decided", marker={"color": color, "opacity": 0.2,
                                                    "line": {"color": color, "width": 1}}),
            _bar(name=_("%(team)s placed") % {"team": name}, x=placed[key][0], y=placed[key][1],
                 offsetgroup=key, marker={"color": color, "opacity": 0.5}),
            _bar(name=_("%(team)s used") % {"team": name}, x=used[key][0], y=used[key][1],
                 offsetgroup=key, marker={"color": color}, width=0.08),
        ]
    return _figure(traces, barmode="group", yaxis={"title": {"text": _("A100-equivalent GPU-h")}, "tickformat": ","})


def granted_used_figure(table: Table) -> Figure:
    """Per team: what the committee decided, what the plans placed, what was used."""
    return _granted_used_figure(table, "team")


def department_used_figure(table: Table) -> Figure:
    """Per department: the same three figures, its teams summed."""
    return _granted_used_figure(table, "department")


def _pool_lines(table: Table, y: str, *, hover: bool = True) -> list[dict[str, Any]]:
    """One line per pool of the table's column `y` by week."""
    return [
        _scatter(name=pool, x=xs, y=ys, mode="lines+markers", line={"color": PALETTE[index % len(PALETTE)]},
                 **({"hovertemplate": _pct_hover(pool)} if hover else {}))
        for index, (pool, (xs, ys)) in enumerate(_series(table, "pool", "week", y).items())
    ]


def utilization_figure(table: Table) -> Figure:
    """The share of each pool's capacity used: one meaning on this chart (GPU busy time has its own)."""
    return _figure(_pool_lines(table, "used_of_capacity_pct"),
                   yaxis={"title": {"text": _("share of pool capacity used, %")}, "rangemode": "tozero"})


def gpu_busy_figure(table: Table) -> Figure:
    """How busy the GPUs were while jobs held them (the schedulers' figure), per pool."""
    return _figure(_pool_lines(table, "mean_utilization_pct"),
                   yaxis={"title": {"text": _("GPU busy time while in use, %")}, "range": [0, 100]})


def _pct_hover(name: str) -> str:
    return f"{name}<br>%{{x}}: %{{y:.1f}}%<extra></extra>"


def queue_wait_figure(table: Table) -> Figure:
    return _figure(_pool_lines(table, "mean_queue_wait_minutes", hover=False),
                   yaxis={"title": {"text": _("minutes")}, "rangemode": "tozero"})


def demand_capacity_figure(table: Table) -> Figure:
    rows = table.as_dicts()
    week = [r["week"] for r in rows]
    traces = [
        _bar(name=_("requested"), x=week, y=[_num(r["requested_a100_gpu_hours"]) for r in rows],
             marker={"color": "#fb8c00"}),
        _bar(name=_("decided"), x=week, y=[_num(r["decided_a100_gpu_hours"]) for r in rows],
             marker={"color": "#a5d6a7"}),
        _bar(name=_("placed"), x=week, y=[_num(r["placed_a100_gpu_hours"]) for r in rows],
             marker={"color": "#43a047"}),
        _scatter(name=_("allocatable capacity"), x=week, y=[_num(r["allocatable_a100_gpu_hours"]) for r in rows],
                 mode="lines+markers", line={"color": "#546e7a", "dash": "dash"}),
    ]
    return _figure(traces, barmode="group", yaxis={"title": {"text": _("A100-equivalent GPU-h")}, "tickformat": ","})


def fair_share_figure(table: Table) -> Figure:
    traces = [
        _scatter(name=escape(team), x=xs, y=ys, mode="lines+markers", line={"color": PALETTE[index % len(PALETTE)]})
        for index, (team, (xs, ys)) in enumerate(_series(table, "team", "week", "factor").items())
    ]
    return _figure(traces, yaxis={"title": {"text": "F"}, "range": [0, 1.05]})


def scores_figure(table: Table) -> Figure:
    traces = [
        _bar(name=escape(criterion), x=xs, y=ys, marker={"color": PALETTE[index % len(PALETTE)]})
        for index, (criterion, (xs, ys)) in enumerate(_series(table, "criterion", "score", "count").items())
    ]
    return _figure(traces, barmode="group", xaxis={"title": {"text": _("score")}, "dtick": 1},
                   yaxis={"title": {"text": _("scores given")}})


FIGURES: dict[str, Callable[[Table], Figure]] = {
    "granted-used": granted_used_figure,
    "department-used": department_used_figure,
    "utilization": utilization_figure,
    "gpu-busy": gpu_busy_figure,
    "queue-wait": queue_wait_figure,
    "demand-capacity": demand_capacity_figure,
    "fair-share": fair_share_figure,
    "scores": scores_figure,
}


def figure_json(table: Table) -> Figure:
    """The figure as JSON-ready data, for the page to embed with json_script and draw in the browser."""
    return FIGURES[table.key](table)


def forward_calendar_figure(pool_calendar: Any) -> Figure:
    """A pool's weeks ahead (a committee.selectors.PoolCalendar in) as one horizontal bar a week, the first on top:
    GPU-hours committed, held back by the reserves, and free, stacked to the pool's capacity that week.

    Horizontal, so a week's label stays readable on a phone and the bars share one GPU-hours axis."""
    weeks_ahead = list(pool_calendar.weeks)
    labels = [w.week for w in weeks_ahead]
    parts = [
        (_("committed"), "#1e88e5", [w.committed_gpu_hours for w in weeks_ahead]),
        (_("reserved"), "#90a4ae", [w.reserved_gpu_hours for w in weeks_ahead]),
        (_("free"), "#c8e6c9", [w.free_gpu_hours for w in weeks_ahead]),
    ]
    traces = [
        _bar(name=name, orientation="h", y=labels, x=values, marker={"color": color},
             hovertemplate=f"%{{y}}: %{{x:,d}} GPU-h {name}<extra></extra>")
        for name, color, values in parts
    ]
    return _figure(traces, barmode="stack", height=max(180, 90 + 42 * len(labels)),
                   margin={"l": 80, "r": 20, "t": 10, "b": 40},
                   legend={"orientation": "h", "y": -0.25, "traceorder": "normal"},
                   xaxis={"title": {"text": _("GPU-h")}, "tickformat": ",d", "rangemode": "tozero"},
                   yaxis={"autorange": "reversed", "type": "category"})


def capacity_figure(plan: Any) -> dict[str, Any]:
    """Weekly demand per pool over the trailing weeks, each pool's mean as a dashed line (a CapacityPlan in).

    One panel per pool, each with its own GPU-hours axis: A100 and H100 hours never share one.
    """
    pools = list(plan.pools)
    count = max(1, len(pools))
    gap = 0.12 if count > 1 else 0.0
    panel = (1 - gap * (count - 1)) / count
    figure = go.Figure()
    layout: dict[str, Any] = {}
    annotations: list[dict[str, Any]] = []
    for index, pool_plan in enumerate(pools):
        suffix = "" if index == 0 else str(index + 1)
        color = PALETTE[index % len(PALETTE)]
        xs = [w.week for w in pool_plan.weeks]
        figure.add_bar(name=_("%(pool)s demand") % {"pool": pool_plan.label}, x=xs,
                       y=[float(w.requested_gpu_hours) for w in pool_plan.weeks], marker_color=color,
                       xaxis=f"x{suffix}", yaxis=f"y{suffix}")
        if pool_plan.peak_to_mean is not None:
            figure.add_scatter(name=_("%(pool)s mean") % {"pool": pool_plan.label}, x=xs,
                               y=[float(pool_plan.peak_to_mean.mean)] * len(xs), mode="lines",
                               line={"color": color, "dash": "dash"}, xaxis=f"x{suffix}", yaxis=f"y{suffix}")
        top = 1 - index * (panel + gap)
        layout[f"yaxis{suffix}"] = {"title": {"text": _("GPU-h")}, "domain": [max(0.0, top - panel), top],
                                    "anchor": f"x{suffix}", "rangemode": "tozero", "tickformat": ",d"}
        annotations.append({"xref": "paper", "yref": "paper", "x": 0, "y": top, "xanchor": "left",
                            "yanchor": "bottom", "showarrow": False, "font": {"size": 13},
                            "text": _("%(pool)s: GPU-hours requested") % {"pool": pool_plan.label}})
        layout[f"xaxis{suffix}"] = {"anchor": f"y{suffix}", **({"matches": "x"} if suffix else {})}
    figure.update_layout(**_layout(barmode="group", height=max(HEIGHT, 80 + 230 * count), annotations=annotations,
                                   **{**layout, "margin": {"l": 60, "r": 20, "t": 30, "b": 50}}))
    result: dict[str, Any] = json.loads(figure.to_json())
    return result


def heatmap_figure(pool: Any, *, day_labels: list[str]) -> go.Figure:
    """A pool's hour-of-week utilization (a heatmap.PoolHeatmap in): Monday on top, hours 00–23 across, 0–100%."""
    figure = go.Figure(go.Heatmap(
        z=pool.grid(), x=[f"{hour:02d}" for hour in range(24)], y=day_labels, zmin=0, zmax=100,
        colorscale="YlOrRd", colorbar={"title": {"text": "%"}},
        hovertemplate=_("%{y} %{x}:00: %{z:.1f}% used") + "<extra></extra>", xgap=1, ygap=1,
    ))
    figure.update_layout(**_layout(height=300, margin={"l": 50, "r": 20, "t": 10, "b": 40}),
                         yaxis={"autorange": "reversed"}, xaxis={"title": {"text": _("hour (committee time)")},
                                                             "dtick": 3})
    return figure


def tco_figure(comparison: Any) -> go.Figure:
    """Each option's cumulative cost week by week (a tco.Comparison in)."""
    figure = go.Figure()
    for index, option in enumerate(comparison.options):
        # An option's name comes from the page's query string: text, never markup (<a href> in a legend).
        figure.add_scatter(name=escape(option.option.name), x=[w.week for w in option.weeks],
                           y=[float(v) for v in option.cumulative()], mode="lines+markers",
                           line={"color": PALETTE[index % len(PALETTE)], "shape": "hv"})
    figure.update_layout(**_layout(xaxis={"title": {"text": _("week")}, "dtick": 2},
                                   yaxis={"title": {"text": _("cumulative cost")}, "rangemode": "tozero"}))
    return figure


def as_json(figure: go.Figure) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(figure.to_json())
    return result
