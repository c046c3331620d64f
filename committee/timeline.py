"""A pool's week as the engine would place it, as a Plotly figure (plain JSON, drawn by the app's plotly.min.js).

Hours of the week run along x (0 = the week's Monday 00:00 UTC, ticks at each day); GPUs up y.
Each window is a stack of one-hour bars, coloured by team (the same colour in every pool), crossed
when priority, hatched when preemptible, against three horizontal lines: the standard capacity (priority and standard
windows stay below it), the top of the burst reserve (preemptible windows may reach it) and the
pool's size (the cold standby, above the burst reserve, is never placed).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.utils.dates import WEEKDAYS_ABBR
from django.utils.html import escape
from django.utils.translation import gettext as _

from allocations import engine
from allocations.explanations import tier_label
from committee.selectors.placement import PoolPlacement

TEAM_COLOURS = ("#1565c0", "#2e7d32", "#ef6c00", "#6a1b9a", "#00838f", "#ad1457", "#5d4037", "#827717")
TIER_PATTERNS = {engine.TIER_PRIORITY: "x", engine.TIER_STANDARD: "", engine.TIER_PREEMPTIBLE: "/"}
_HOUR = timedelta(hours=1)


def _hour(instant: datetime, week_start: datetime) -> int:
    return int((instant - week_start) // _HOUR)


def team_colours(pools: list[PoolPlacement]) -> dict[str, str]:
    """One colour per team, the same in every pool's figure (teams by name)."""
    names = sorted({p.team_name for pool in pools for p in pool.placements})
    return {name: TEAM_COLOURS[i % len(TEAM_COLOURS)] for i, name in enumerate(names)}


def pool_timeline_figure(
    *, pool: PoolPlacement, week_start: datetime, hours: int, colours: dict[str, str] | None = None
) -> dict[str, Any]:
    """The figure of one pool's placement preview; `hours` is the cycle's length (168, or 167/169 at DST)."""
    colours = colours if colours is not None else team_colours([pool])
    shown: set[tuple[str, str]] = set()
    traces = []
    for placement in pool.placements:
        window = placement.window
        if window is None:
            continue
        colour = colours.get(placement.team_name, TEAM_COLOURS[0])
        first, last = _hour(window.start, week_start), _hour(window.end, week_start)
        legend = (placement.team_name, window.tier)
        traces.append(
            {
                "type": "bar",
                # Plotly reads a few HTML tags in labels: a team's or request's name is text, escaped.
                "name": escape(f"{placement.team_name} · {tier_label(window.tier)}"),
                "legendgroup": f"{placement.team_name}/{window.tier}",
                "showlegend": legend not in shown,
                "x": [h + 0.5 for h in range(first, last)],
                "y": [window.gpu_count] * (last - first),
                "width": 1,
                "text": escape(placement.title),
                "textposition": "none",
                "hovertemplate": "%{text}<br>" + placement.text + "<extra></extra>",
                "marker": {
                    "color": colour,
                    "opacity": 0.6 if window.tier == engine.TIER_PREEMPTIBLE else 0.9,
                    "pattern": {
                        "shape": TIER_PATTERNS.get(window.tier, ""),
                        "fillmode": "overlay",
                        "fgcolor": "#ffffff",
                        "fgopacity": 0.6,
                        "size": 6,
                    },
                    "line": {"width": 0},
                },
            }
        )
        shown.add(legend)
    lines = [
        (pool.standard_gpus, _("standard capacity"), "#424242", "solid"),
        (pool.burst_top_gpus, _("burst reserve top"), "#ef6c00", "dash"),
        (pool.pool.gpu_count, _("standby top (all GPUs)"), "#9e9e9e", "dot"),
    ]
    days = range(0, hours + 1, 24)
    layout = {
        "barmode": "stack",
        "bargap": 0,
        "height": 300,
        "margin": {"l": 50, "r": 10, "t": 10, "b": 40},
        "legend": {"orientation": "h", "y": -0.18},
        "xaxis": {
            "range": [0, hours],
            "tickvals": list(days),
            "ticktext": [str(WEEKDAYS_ABBR[(week_start + timedelta(hours=h)).weekday()]) for h in days],
            "zeroline": False,
        },
        "yaxis": {"title": {"text": _("GPUs")}, "range": [0, pool.pool.gpu_count * 1.08], "rangemode": "tozero"},
        "shapes": [
            {"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": y, "y1": y,
             "line": {"color": colour, "dash": dash, "width": 1.5}}
            for y, _label, colour, dash in lines
        ],
        "annotations": [
            {"xref": "paper", "x": 1, "y": y, "xanchor": "right", "yanchor": "bottom", "showarrow": False,
             "text": f"{label} ({y})", "font": {"size": 10, "color": colour}}
            for y, label, colour, _dash in lines
        ],
    }
    return {"data": traces, "layout": layout}
