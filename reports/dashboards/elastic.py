"""A pool's elastic history as a chart: the GPUs each kind of action moved, hour by hour, over the trailing days."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import plotly.graph_objects as go
from django.utils.translation import gettext as _

from allocations.models import ElasticAction, ElasticActionKind
from reports.charts import PALETTE
from reports.dashboards.charts import _layout

_HOUR = timedelta(hours=1)
MAX_CHART_HOURS = 24 * 28


def elastic_figure(actions: Sequence[ElasticAction], *, now: datetime, hours: int = 24 * 7) -> dict[str, Any]:
    """Per kind, the GPUs its actions in force held at each hour of the last `hours` (a step line)."""
    hours = min(hours, MAX_CHART_HOURS)
    end = now.replace(minute=0, second=0, microsecond=0) + _HOUR
    ticks = [end - (hours - i) * _HOUR for i in range(hours + 1)]
    figure = go.Figure()
    for index, kind in enumerate(ElasticActionKind):
        mine = [a for a in actions if a.kind == kind.value]
        if not mine:
            continue
        ys = [
            sum(a.gpus for a in mine if a.started_at <= tick and (a.ended_at is None or a.ended_at > tick))
            for tick in ticks
        ]
        figure.add_scatter(
            name=str(kind.label), x=[t.isoformat() for t in ticks], y=ys, mode="lines", line_shape="hv",
            line={"color": PALETTE[index % len(PALETTE)]},
        )
    figure.update_layout(**_layout(yaxis={"title": {"text": _("GPUs")}, "rangemode": "tozero"}))
    result: dict[str, Any] = json.loads(figure.to_json())
    return result
