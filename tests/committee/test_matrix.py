"""The priority matrix reads at a glance: a panel and an axis per GPU pool, no text on the points, a legend table."""

from __future__ import annotations

import json
import re

from django.urls import reverse

from tests.committee.reviewing import score, two_requests_in_review


def review_page(client, world) -> str:
    client.force_login(world.reviewer)
    return client.get(reverse("committee:review-cycle", args=[world.cycle.week])).content.decode()


def matrix_of(body: str) -> dict:
    data = re.search(r'<script id="matrix-data" type="application/json">(.*?)</script>', body, re.S)
    assert data is not None
    return json.loads(data[1])


def test_a100_and_h100_hours_never_share_an_axis(client, world):
    a, b = two_requests_in_review(world)  # a on atlas/a100, b on orion/h100
    for member in (world.chair, world.reviewer):
        score(member, a, 7, 6, 5)
        score(member, b, 5, 5, 5)
    figure = matrix_of(review_page(client, world))
    layout = figure["layout"]
    assert layout["xaxis"]["title"]["text"] == "atlas/a100: requested GPU-hours"
    assert layout["xaxis2"]["title"]["text"] == "orion/h100: requested GPU-hours"
    axes = {(trace["xaxis"], trace["yaxis"]) for trace in figure["data"] if trace["x"]}
    assert axes == {("x", "y"), ("x2", "y2")}
    top, bottom = layout["yaxis"]["domain"], layout["yaxis2"]["domain"]
    assert bottom[1] < top[0]  # stacked panels that do not overlap
    # The ranges are each pool's own: the h100 panel's axis is not stretched to the a100's 768 GPU-hours.
    assert layout["xaxis2"]["range"][1] < layout["xaxis"]["range"][1]


def test_points_carry_no_text_and_the_legend_table_names_each_one(client, world):
    a, b = two_requests_in_review(world)
    for member in (world.chair, world.reviewer):
        score(member, a, 7, 6, 5)
        score(member, b, 5, 5, 5)
    body = review_page(client, world)
    figure = matrix_of(body)
    assert all(trace["mode"] == "markers" and "text" not in trace for trace in figure["data"])
    assert not figure["layout"]["annotations"]  # quadrant names are the legend, not corner labels
    legend = {trace["name"] for trace in figure["data"] if trace["showlegend"]}
    assert len(legend) == 4
    table = re.search(r'<table class="striped cards-on-phone" id="matrix-legend">(.*?)</table>', body, re.S)
    assert table is not None
    rows = re.findall(r"<tr data-request=\"(\d+)\">(.*?)</tr>", table[1], re.S)
    assert [int(pk) for pk, _row in rows] == [a.pk, b.pk]  # ranked order: a first (higher total)
    first = re.sub(r"<[^>]+>", " ", rows[0][1])
    assert "#1" in first and "Ranker retrain" in first and f"R-{a.pk}" in first and "atlas/a100" in first
    assert "768" in first and "cost-benefit" in first
    assert 'data-label="GPU-hours"' in rows[0][1]
    hover = next(trace for trace in figure["data"] if trace["x"] == [768])
    assert hover["customdata"][0][:2] == ["#1", "Ranker retrain"]


def test_with_nothing_scored_the_table_says_so(client, world):
    two_requests_in_review(world)
    body = review_page(client, world)
    assert "No request is scored on impact yet." in body
    assert matrix_of(body)["legend"] == []
