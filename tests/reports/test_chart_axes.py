"""Charts read at a glance: GPU-hours of different pools never share an axis, one meaning of "utilization" per chart."""

from __future__ import annotations

from decimal import Decimal
from types import SimpleNamespace

from reports import charts
from reports.dashboards import charts as dashboard_charts
from reports.dashboards.capacity import PeakToMean, WeekDemand
from reports.dashboards.selectors import Column, Table


def _pool_plan(label: str, demands: list[int]) -> SimpleNamespace:
    weeks = tuple(WeekDemand(week=f"2026-W{40 + i}", requested_gpu_hours=Decimal(d), not_rejected_gpu_hours=Decimal(d),
                             granted_gpu_hours=Decimal(d), published=True) for i, d in enumerate(demands))
    mean = Decimal(sum(demands)) / len(demands)
    return SimpleNamespace(label=label, weeks=weeks, peak_to_mean=PeakToMean(mean=mean, peak=Decimal(max(demands)),
                                                                              ratio=Decimal(max(demands)) / mean))


def test_capacity_planning_draws_each_pool_on_its_own_gpu_hours_axis():
    plan = SimpleNamespace(pools=(_pool_plan("atlas/a100", [9000, 12000]), _pool_plan("orion/h100", [300, 400])))
    figure = dashboard_charts.capacity_figure(plan)
    axes = {trace["name"]: trace.get("yaxis", "y") for trace in figure["data"]}
    assert axes["atlas/a100 demand"] == axes["atlas/a100 mean"] == "y"
    assert axes["orion/h100 demand"] == axes["orion/h100 mean"] == "y2"
    top, bottom = figure["layout"]["yaxis"]["domain"], figure["layout"]["yaxis2"]["domain"]
    assert bottom[1] < top[0]
    titles = [a["text"] for a in figure["layout"]["annotations"]]
    assert titles == ["atlas/a100: GPU-hours requested", "orion/h100: GPU-hours requested"]


def test_the_decision_records_demand_chart_is_a_share_of_each_pools_capacity():
    chart = charts.demand_capacity_figure({"capacity": [
        {"pool": "atlas/a100", "capacity_gpu_hours": 10752, "requested_gpu_hours": 12000, "granted_gpu_hours": 9000},
        {"pool": "orion/h100", "capacity_gpu_hours": 400, "requested_gpu_hours": 200, "granted_gpu_hours": 0},
        {"pool": "empty/pool", "capacity_gpu_hours": 0, "requested_gpu_hours": 5, "granted_gpu_hours": 0},
    ]})
    assert chart is not None
    requested, granted = chart.figure.data
    assert requested.y == (111.6, 50.0, None) and granted.y == (83.7, 0.0, None)  # no capacity: no share
    assert requested.text == ("12,000 GPU-h", "200 GPU-h", "5 GPU-h")  # the hours, written as the pages do
    assert granted.text == ("9,000 GPU-h", "", "")  # a bar of nothing has no label to run into its neighbour's
    assert chart.figure.layout.uniformtext.mode == "hide"  # nor one too wide for its bar
    assert [shape.y0 for shape in chart.figure.layout.shapes] == [100]  # the capacity line


def _pool_table(key: str, column: str) -> Table:
    return Table(key=key, title="", columns=(Column("week", ""), Column("pool", ""), Column(column, "")),
                 rows=(("2026-W40", "atlas/a100", Decimal("51.5")), ("2026-W40", "orion/h100", Decimal("88.0"))))


def test_the_share_of_capacity_used_and_gpu_busy_time_are_two_charts():
    used = dashboard_charts.utilization_figure(_pool_table("utilization", "used_of_capacity_pct"))
    busy = dashboard_charts.gpu_busy_figure(_pool_table("gpu-busy", "mean_utilization_pct"))
    assert [t["name"] for t in used["data"]] == [t["name"] for t in busy["data"]] == ["atlas/a100", "orion/h100"]
    used_title, busy_title = used["layout"]["yaxis"]["title"]["text"], busy["layout"]["yaxis"]["title"]["text"]
    assert used_title == "share of pool capacity used, %"
    assert busy_title == "GPU busy time while in use, %"
    assert "utiliz" not in (used_title + busy_title).lower()


def test_a_long_weeks_scores_print_in_slices_of_thirty_on_one_axis():
    criteria = [{"key": "impact", "label": "Impact", "weight_pct": 60}, {"key": "urgency", "label": "Urgency",
                                                                         "weight_pct": 40}]
    ranking = [{"rank": n, "team": "A", "title": f"Run {n}", "scores": {"impact": 5, "urgency": 10}}
               for n in range(1, 36)]
    first, second = charts.decision_record_print_charts({"ranking": ranking, "rubric": {"criteria": criteria}})
    assert (first.key, second.key) == ("scores-1", "scores-2")
    assert first.title == "Weighted scores by request (0–100), ranks 1–30 of 35"
    assert second.title == first.figure.layout.title.text.replace("1–30", "31–35") == second.figure.layout.title.text
    layout = second.figure.layout
    assert (layout.height, layout.bargap, layout.barmode, layout.title.x) == (600, 0.25, "stack", 0.02)
    assert (layout.yaxis.autorange, layout.yaxis.tickfont.size, tuple(layout.xaxis.range)) == ("reversed", 9, (0, 100))
    impact, urgency = second.figure.data
    assert (impact.name, urgency.name) == ("Impact (60%)", "Urgency (40%)")
    assert impact.y == tuple(f"#{n} A: Run {n}" for n in range(31, 36)) and impact.x == (30.0,) * 5
    assert urgency.x == (40.0,) * 5 and impact.marker.color == charts.PALETTE[0]
