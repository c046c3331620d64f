"""The priority matrix of the weekly review, as a Plotly figure (plain JSON, drawn by the app's plotly.min.js).

Business impact (mean member score, 0–10) against compute intensity (requested GPU-hours), split
at impact 5 and at each pool's median GPU-hours of the week into the four quadrants of the committee's charter.

Read at a glance:
- one panel per GPU pool, stacked, each with its own GPU-hours axis: an A100 hour and an H100 hour are not the
  same amount of compute and never share an axis, nor a median (the dotted split is that pool's median request
  of the week, as the quadrants are computed);
- no text on the points, so labels never overlap: a point's title, team, rank and numbers are in its hover text
  and in the legend table beside the chart (figure["legend"], rendered by committee/_matrix_data.html);
- the quadrants' names are the figure's legend (one entry per quadrant, in its colour), not corner
  annotations that print over each other on a phone.
"""

from __future__ import annotations

import re
from typing import Any

from django.utils.html import escape
from django.utils.translation import gettext as _

from committee import scoring
from committee.selectors import CycleReview
from core import numbers

QUADRANT_COLOURS = {
    scoring.DO_FIRST: "#2e7d32",
    scoring.COST_BENEFIT: "#ef6c00",
    scoring.WHEN_FREE: "#1565c0",
    scoring.DEFER_OR_REDESIGN: "#c62828",
}
QUADRANT_SYMBOLS = {
    scoring.DO_FIRST: "circle",
    scoring.COST_BENEFIT: "diamond",
    scoring.WHEN_FREE: "square",
    scoring.DEFER_OR_REDESIGN: "x",
}
PANEL_HEIGHT = 240
GAP = 0.08  # between two panels, as a share of the figure's plot height


def _impact(row: Any) -> float:
    return float(row.result.criterion(scoring.BUSINESS_IMPACT).score or 0)


def _legend_name(label: str) -> str:
    """A quadrant's name on two lines (what it is: what to do), so a phone's legend does not cut it off."""
    return re.sub(r"([:：])\s*", r"\1<br>", label, count=1)


# The legend table lists the top of the ranking only: a week of 1,000 requests would otherwise send 1,000 rows with
# every review page (the chart's hover still names every point, and the ranking lists them all, a page at a time).
MATRIX_LEGEND_ROWS = 30


def matrix_legend(review: CycleReview) -> list[dict[str, Any]]:
    """The matrix's points as table rows, ranked first: rank ("#1"), title, team, pool, impact, GPU-hours, quadrant;
    the first MATRIX_LEGEND_ROWS of them."""
    labels = scoring.quadrant_labels()
    rows = [row for row in review.rows if row.quadrant is not None]
    rows.sort(key=lambda row: (row.result.rank is None, row.result.rank or 0, row.request.pk))
    return [
        {
            "rank": numbers.rank_ref(row.result.rank) or "—",
            "request": numbers.request_ref(row.request.pk),
            "request_id": row.request.pk,
            "title": row.request.title,
            "team": row.request.team.name,
            "pool": row.request.pool.key,
            "impact": numbers.format_number(_impact(row), 1),
            "gpu_hours": numbers.format_gpu_hours(row.request.requested_gpu_hours),
            "quadrant": row.quadrant,
            "quadrant_label": labels[row.quadrant or ""],
        }
        for row in rows[:MATRIX_LEGEND_ROWS]
    ]


def priority_matrix_figure(review: CycleReview) -> dict[str, Any]:
    labels = scoring.quadrant_labels()
    placed = [row for row in review.rows if row.quadrant is not None]
    pools: list[str] = sorted({row.request.pool.key for row in placed}) or [""]
    impact = float(scoring.MATRIX_IMPACT_THRESHOLD)
    count = len(pools)
    panel = (1 - GAP * (count - 1)) / count
    traces: list[dict[str, Any]] = []
    layout: dict[str, Any] = {
        "height": 80 + PANEL_HEIGHT * count,
        "margin": {"l": 60, "r": 20, "t": 30, "b": 40},
        "showlegend": True,
        "legend": {"orientation": "h", "x": 0, "y": -0.08 if count > 1 else -0.2, "yanchor": "top",
                   "font": {"size": 11}},
        "hovermode": "closest",
        "shapes": [],
        "annotations": [],
    }
    # Plotly leaves an empty trace out of the legend: each quadrant's entry is on the first panel that has a point.
    legend_pool = {quadrant: next((p for p in pools if any(r.quadrant == quadrant and r.request.pool.key == p
                                                            for r in placed)), pools[0]) for quadrant in labels}
    for index, pool in enumerate(pools):
        suffix = "" if index == 0 else str(index + 1)
        top = 1 - index * (panel + GAP)
        rows = [row for row in placed if row.request.pool.key == pool]
        threshold = float(review.intensity_thresholds.get(pool, 0))
        x_max = max([row.request.requested_gpu_hours for row in rows] + [threshold, 1]) * 1.15
        for quadrant, label in labels.items():
            mine = [row for row in rows if row.quadrant == quadrant]
            traces.append({
                "type": "scatter", "mode": "markers", "name": _legend_name(label), "legendgroup": quadrant,
                "showlegend": legend_pool[quadrant] == pool, "xaxis": f"x{suffix}", "yaxis": f"y{suffix}",
                "x": [row.request.requested_gpu_hours for row in mine],
                "y": [_impact(row) for row in mine],
                # Plotly reads a few HTML tags (<a href>, <b>) in hover text: a request's and a team's name are text.
                "customdata": [[
                    numbers.rank_ref(row.result.rank) or "—", escape(row.request.title), escape(row.request.team.name),
                    pool,
                    numbers.format_gpu_hours(row.request.requested_gpu_hours), numbers.format_number(_impact(row), 1),
                ] for row in mine],
                "hovertemplate": "%{customdata[0]} · %{customdata[1]}<br>%{customdata[2]} · %{customdata[3]}<br>"
                + _("impact %(impact)s, %(hours)s GPU-hours") % {"impact": "%{customdata[5]}",
                                                                 "hours": "%{customdata[4]}"}
                + "<extra></extra>",
                "marker": {"size": 12, "color": QUADRANT_COLOURS[quadrant], "symbol": QUADRANT_SYMBOLS[quadrant],
                           "line": {"width": 1, "color": "#fff"}, "opacity": 0.85},
            })
        layout[f"xaxis{suffix}"] = {
            "title": {"text": _("%(pool)s: requested GPU-hours") % {"pool": pool} if pool
                      else _("Compute intensity (requested GPU-hours)"), "standoff": 4},
            "range": [0, x_max], "zeroline": False, "anchor": f"y{suffix}", "tickformat": ",d",
        }
        layout[f"yaxis{suffix}"] = {
            "title": {"text": _("Impact")}, "range": [-0.5, 10.5], "zeroline": False, "anchor": f"x{suffix}",
            "domain": [max(0.0, top - panel), top], "dtick": 2,
        }
        layout["shapes"] += [
            {"type": "line", "xref": f"x{suffix}", "yref": f"y{suffix}", "x0": threshold, "x1": threshold,
             "y0": -0.5, "y1": 10.5, "line": {"dash": "dot", "color": "#888"}},
            {"type": "line", "xref": f"x{suffix}", "yref": f"y{suffix}", "x0": 0, "x1": x_max, "y0": impact,
             "y1": impact, "line": {"dash": "dot", "color": "#888"}},
        ]
    points = sum(1 for row in review.rows if row.quadrant is not None)
    return {"data": traces, "layout": layout, "legend": matrix_legend(review),
            "legend_more": max(0, points - MATRIX_LEGEND_ROWS)}
