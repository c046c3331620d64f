"""The priority matrix of the weekly review, as a Plotly figure (plain JSON, drawn by the app's plotly.min.js).

Business impact (mean member score, 0–10) against compute intensity (requested GPU-hours), split
at impact 5 and at the cycle's median GPU-hours into the four quadrants of the committee's charter.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _

from committee import scoring
from committee.selectors import CycleReview

QUADRANT_COLOURS = {
    scoring.DO_FIRST: "#2e7d32",
    scoring.COST_BENEFIT: "#ef6c00",
    scoring.WHEN_FREE: "#1565c0",
    scoring.DEFER_OR_REDESIGN: "#c62828",
}


def priority_matrix_figure(review: CycleReview) -> dict[str, Any]:
    labels = scoring.quadrant_labels()
    traces = []
    for quadrant, label in labels.items():
        rows = [row for row in review.rows if row.quadrant == quadrant]
        traces.append(
            {
                "type": "scatter",
                "mode": "markers+text",
                "name": label,
                "x": [row.request.requested_gpu_hours for row in rows],
                "y": [float(row.result.criterion(scoring.BUSINESS_IMPACT).score or 0) for row in rows],
                "text": [f"#{row.result.rank}" if row.result.rank else "·" for row in rows],
                "textposition": "top center",
                "customdata": [[row.request.title, row.request.team.name] for row in rows],
                "hovertemplate": "%{customdata[0]}<br>%{customdata[1]}<br>"
                + _("impact %{y:.2f}, %{x:,} GPU-hours")
                + "<extra></extra>",
                "marker": {"size": 12, "color": QUADRANT_COLOURS[quadrant]},
            }
        )
    gpu_hours = [row.request.requested_gpu_hours for row in review.rows] or [1]
    x_max = max(gpu_hours) * 1.1
    threshold = float(review.intensity_threshold)
    impact = float(scoring.MATRIX_IMPACT_THRESHOLD)
    corners = [
        (0.01, 0.99, "left", "top", labels[scoring.DO_FIRST]),
        (0.99, 0.99, "right", "top", labels[scoring.COST_BENEFIT]),
        (0.01, 0.01, "left", "bottom", labels[scoring.WHEN_FREE]),
        (0.99, 0.01, "right", "bottom", labels[scoring.DEFER_OR_REDESIGN]),
    ]
    layout = {
        "height": 460,
        "margin": {"l": 60, "r": 20, "t": 20, "b": 50},
        "showlegend": False,
        "xaxis": {"title": {"text": _("Compute intensity (requested GPU-hours)")}, "range": [0, x_max],
                  "zeroline": False},
        "yaxis": {"title": {"text": _("Business impact (mean score)")}, "range": [-0.5, 10.5], "zeroline": False},
        "shapes": [
            {"type": "line", "x0": threshold, "x1": threshold, "y0": -0.5, "y1": 10.5,
             "line": {"dash": "dot", "color": "#888"}},
            {"type": "line", "x0": 0, "x1": x_max, "y0": impact, "y1": impact,
             "line": {"dash": "dot", "color": "#888"}},
        ],
        "annotations": [
            {"xref": "paper", "yref": "paper", "x": x, "y": y, "xanchor": xa, "yanchor": ya, "text": text,
             "showarrow": False, "font": {"size": 11, "color": "#555"}}
            for x, y, xa, ya, text in corners
        ],
    }
    return {"data": traces, "layout": layout}
