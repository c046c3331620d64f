"""Plotly figures of a decision record, and the Chromium that prints charts for PDFs.

The figures are built from a decision record's structured data (the snapshot in its revision),
never from live tables, so a PDF of an old revision draws the charts as they were. Printing them
(reports/chart_printer.py) needs a Chromium: `settings.CHROMIUM_PATH` (environment `CHROMIUM_PATH`,
default Debian's /usr/bin/chromium). Without one, the PDF is made without charts and says so.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
from django.conf import settings
from django.utils.html import escape
from django.utils.translation import gettext as _

from core import numbers

CHART_WIDTH = 900
CHART_HEIGHT = 480
PALETTE = ["#1e88e5", "#43a047", "#fb8c00", "#8e24aa", "#e53935", "#00897b"]


@dataclass(frozen=True)
class Chart:
    key: str
    title: str
    figure: go.Figure


def chromium_path() -> str | None:
    """The Chromium binary to draw charts with, or None when there is none."""
    configured = getattr(settings, "CHROMIUM_PATH", "") or os.environ.get("CHROMIUM_PATH", "")
    if configured and Path(configured).is_file() and os.access(configured, os.X_OK):
        return configured
    return None


def _layout(title: str, **extra: Any) -> dict[str, Any]:
    return {
        "title": {"text": title, "x": 0.02},
        "font": {"family": "DejaVu Sans, Arial, sans-serif", "size": 13},
        "margin": {"l": 60, "r": 30, "t": 70, "b": 60},
        "legend": {"orientation": "h", "y": -0.15},
        **extra,
    }


def scores_figure(data: Mapping[str, Any], *, title: str = "", height: int = 0, tick_size: int = 0,
                  bargap: float | None = None) -> Chart | None:
    """Each request's weighted total, stacked by criterion (weight × mean score), in ranking order.

    `title`, `height`, `tick_size` (the requests' labels, pt) and `bargap` replace the chart's own (a print slice's).
    The figure is made in one go, its bars and layout given to `go.Figure`: adding each bar and then updating the
    layout took plotly five times as long (0.5 s of CPU for the 35 charts of a 1,000-request record's PDF;
    docs/benchmarks.md, "The decision record's PDF")."""
    ranking: Sequence[Mapping[str, Any]] = data.get("ranking") or []
    criteria: Sequence[Mapping[str, Any]] = (data.get("rubric") or {}).get("criteria") or []
    if not ranking or not criteria:
        return None
    # Plotly reads a few HTML tags (<a href>, <b>) in labels: a team's and a request's name are text, escaped.
    labels = [escape(f"#{row.get('rank', '?')} {row.get('team', '')}: {str(row.get('title', ''))[:40]}")
              for row in ranking]
    bars = []
    for index, criterion in enumerate(criteria):
        key = criterion.get("key")
        weight = float(criterion.get("weight_pct", 0))
        values = []
        for row in ranking:
            score = (row.get("scores") or {}).get(key)
            values.append(round(weight * float(score) / 10, 2) if score is not None else 0)
        bars.append(go.Bar(
            name=escape(f"{criterion.get('label', key)} ({weight:g}%)"),
            y=labels,
            x=values,
            orientation="h",
            marker_color=PALETTE[index % len(PALETTE)],
        ))
    chart_title = _("Weighted scores by request (0–100)")
    layout = _layout(title or chart_title, barmode="stack", height=height or max(CHART_HEIGHT, 60 + 28 * len(labels)))
    layout["yaxis"] = {"autorange": "reversed", "automargin": True}
    if tick_size:
        layout["yaxis"]["tickfont"] = {"size": tick_size}
    layout["xaxis"] = {"range": [0, 100], "title": {"text": _("weighted total")}}
    if bargap is not None:
        layout["bargap"] = bargap
    return Chart("scores", title or chart_title, go.Figure(data=bars, layout=layout))


def demand_capacity_figure(data: Mapping[str, Any]) -> Chart | None:
    """Per GPU pool: what was asked for and what was granted, as a share of the pool's allocatable GPU-hours.

    Normalized per pool (capacity = 100%), because an A100 hour and an H100 hour are not the same amount of
    compute and must not share one GPU-hours axis; the GPU-hours themselves are on each bar and in its hover.
    """
    pools: Sequence[Mapping[str, Any]] = data.get("capacity") or []
    if not pools:
        return None
    names = [escape(str(p.get("pool", ""))) for p in pools]
    title = _("Demand vs capacity, per pool (share of its allocatable GPU-hours)")
    figure = go.Figure()
    series = [
        (_("requested"), "requested_gpu_hours", "#fb8c00"),
        (_("granted"), "granted_gpu_hours", "#43a047"),
    ]
    for label, key, color in series:
        hours = [float(p.get(key) or 0) for p in pools]
        shares = [_share(h, p.get("capacity_gpu_hours")) for h, p in zip(hours, pools, strict=True)]
        written = [numbers.format_gpu_hours(h) for h in hours]
        # A bar of nothing gets no label: two "0 GPU-h" side by side ran into each other.
        labels = [_("%(hours)s GPU-h") % {"hours": w} if h else "" for h, w in zip(hours, written, strict=True)]
        figure.add_bar(
            name=label, x=names, y=shares, marker_color=color, text=labels, textposition="outside",
            customdata=written,
            hovertemplate="%{x}: %{y:.0f}% · %{customdata} " + _("GPU-h") + "<extra>" + label + "</extra>",
        )
    figure.add_hline(y=100, line={"dash": "dash", "color": "#546e7a"}, annotation_text=_("capacity"),
                     annotation_position="top left")
    figure.update_layout(
        **_layout(title, barmode="group", height=CHART_HEIGHT),
        yaxis={"title": {"text": _("share of the pool's allocatable GPU-hours, %")}, "rangemode": "tozero"},
        # A label wider than its bar (many pools) is left out rather than shrunk to a smudge or run into its
        # neighbour's; the GPU-hours stay in the hover and in the record's tables.
        uniformtext={"minsize": 10, "mode": "hide"},
    )
    return Chart("demand", title, figure)


def _share(hours: float, capacity: Any) -> float | None:
    total = float(capacity or 0)
    return round(100 * hours / total, 1) if total else None


def decision_record_charts(data: Mapping[str, Any]) -> list[Chart]:
    return [chart for chart in (scores_figure(data), demand_capacity_figure(data)) if chart is not None]


# 30 bars of 14 px and the chart's margins and legend: 600 px, one landscape page at the print width.
PRINT_ROWS_PER_CHART = 30
PRINT_ROW_PX = 14


def decision_record_print_charts(data: Mapping[str, Any]) -> list[Chart]:
    """The record's charts for its PDF: the scores chart in slices of at most PRINT_ROWS_PER_CHART requests.

    A PDF image is never split across pages, so one bar chart of a long week (28 px a request) ran off its page
    and lost every request after the first thirty or so; each slice fits one landscape page, in ranking order,
    on the same 0–100 axis, so the slices read as one chart.
    """
    ranking: Sequence[Mapping[str, Any]] = data.get("ranking") or []
    result: list[Chart] = []
    if len(ranking) <= PRINT_ROWS_PER_CHART:
        whole = scores_figure(data)
        if whole is not None:
            result.append(whole)
    else:
        title = _("Weighted scores by request (0–100)")
        for start in range(0, len(ranking), PRINT_ROWS_PER_CHART):
            rows = ranking[start:start + PRINT_ROWS_PER_CHART]
            sliced = _("%(title)s, ranks %(first)s–%(last)s of %(n)d") % {
                "title": title, "first": rows[0].get("rank", start + 1),
                "last": rows[-1].get("rank", start + len(rows)), "n": len(ranking)}
            chart = scores_figure({**data, "ranking": rows}, title=sliced,
                                  height=180 + PRINT_ROW_PX * PRINT_ROWS_PER_CHART, tick_size=9, bargap=0.25)
            if chart is None:
                continue
            result.append(Chart(f"scores-{start // PRINT_ROWS_PER_CHART + 1}", sliced, chart.figure))
    demand = demand_capacity_figure(data)
    if demand is not None:
        result.append(demand)
    return result
