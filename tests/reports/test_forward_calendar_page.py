"""The forward calendar's page (docs/multi-week-runs.md): every pool's weeks ahead, committed, free, reserved, from
the same selector as GET /api/v1/calendar/, for anyone signed in."""

from __future__ import annotations

import json
import re

from django.urls import reverse
from django.utils import timezone
from plotly import graph_objects as go

from allocations.models import Commitment, CommitmentState
from committee import selectors
from tests.committee.test_multiweek_runs import publish_week, run_fields
from tests.factories import file_request
from tests.readable import assert_readable

URL = reverse("reports:forward-calendar")


def pool_rows(html: str, pool_key: str) -> list[list[str]]:
    """The pool's table as text: one list of cells a week (the week's label, committed, free, reserved, capacity)."""
    section = html.split(f'id="calendar-{pool_key.replace("/", "")}"', 1)[1].split("</section>", 1)[0]
    body = section.split("<tbody>", 1)[1]
    rows = []
    for row in re.findall(r"<tr>(.*?)</tr>", body, flags=re.S):
        cells = re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, flags=re.S)
        rows.append([" ".join(re.sub(r"<[^>]+>", "", cell).split()) for cell in cells])
    return rows


def test_a_granted_run_shows_its_later_weeks_as_committed_on_the_calendar_page(world, client):
    run = file_request(world, **run_fields(world))  # 16 GPUs, the last 48 hours of its first week, then 2 weeks
    publish_week(world, (run, 6))
    client.force_login(world.member_b)  # another team reads it: pool numbers only

    response = client.get(URL)

    assert response.status_code == 200
    html = response.content.decode()
    assert_readable(html)
    weeks = {c.pool.key: c.weeks for c in selectors.forward_calendar(now=timezone.now())}
    a100 = pool_rows(html, "atlas/a100")
    assert [row[0].split()[0] for row in a100] == [w.week for w in weeks["atlas/a100"]]
    assert [row[1:4] for row in a100] == [
        [f"{c:,} ({p}%)", f"{r:,}", f"{f:,}"] for c, p, r, f in (  # in the chart's order: committed, reserved, free
            (w.committed_gpu_hours, w.committed_pct, w.reserved_gpu_hours, w.free_gpu_hours)
            for w in weeks["atlas/a100"])]
    assert [row[1].split()[0] for row in a100] == ["768", "2,688", "2,688", "0"]  # 16 × 48, then 16 × 168
    assert all(row[1].startswith("0 ") for row in pool_rows(html, "orion/h100"))
    # The chart's figure, drawn by the served plotly.js: plain data, yet exactly what plotly validates and writes.
    data = re.search(r'<script id="forward-0" type="application/json">(.*?)</script>', html, re.S)
    assert data is not None
    figure = json.loads(data.group(1))
    assert json.loads(go.Figure(figure).to_json()) == figure
    assert figure["data"][0]["x"][:2] == [768, 2688]  # committed, the first two weeks

    # A week the committee let go is free again, on the page as in the API.
    Commitment.objects.filter(request_ref=run.pk, week_number=3).update(state=CommitmentState.RELEASED)
    again = pool_rows(client.get(URL, {"weeks": "6"}).content.decode(), "atlas/a100")
    assert [row[1].split()[0] for row in again] == ["768", "2,688", "0", "0", "0", "0"]


def test_the_calendar_page_refuses_a_span_it_cannot_show_and_asks_for_a_sign_in(world, client):
    assert client.get(URL).status_code == 302  # to the sign-in page
    client.force_login(world.member_a)
    for odd in ("0", "27", "²", "4\n", "-1", "x"):
        response = client.get(URL, {"weeks": odd})
        assert response.status_code == 400, odd
        assert "from 1 to 26" in response.content.decode()


def test_the_calendar_page_is_linked_from_the_dashboards(world, client):
    client.force_login(world.member_a)
    assert f'href="{URL}"' in client.get(reverse("reports:dashboards")).content.decode()
