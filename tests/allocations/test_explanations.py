"""The engine's reason codes in words: the renderer, and the pages that read a plan's explanations.

The week starts Monday 2024-01-01 00:00 UTC; the "a100" pool has 20 GPUs (14 standard, 18 in
total with the burst reserve).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest
from django.utils import translation

from allocations.engine import Demand, PoolCapacity, Reason, allocate
from allocations.explanations import explanation_text, placement_text, reasons_as_json
from allocations.models import PlanExplanation
from committee import services
from tests.allocations.plans import W, publish, this_week
from tests.committee.reviewing import close, decide, score
from tests.factories import file_request

WEEK = datetime(2024, 1, 1, tzinfo=UTC)
A100 = PoolCapacity(key="a100", gpu_count=20, gpu_model="A100")


def at(day: int, hour: int = 0, minute: int = 0) -> datetime:
    return WEEK + timedelta(days=day, hours=hour, minutes=minute)


def demand(ref: int, gpus: int, hours: int, earliest: datetime, latest: datetime, **extra: object) -> Demand:
    fields: dict = {"min_gpu_count": gpus, **extra}
    return Demand(ref=ref, pool="a100", gpu_count=gpus, duration_hours=hours, earliest_start=earliest,
                  latest_end=latest, **fields)


def explained(*demands: Demand, hours: int = 168) -> list[str]:
    result = allocate(week_start=WEEK, pools=[A100], demands=demands, hours=hours)
    return [explanation_text(e.reasons, week_start=WEEK) for e in result.explanations]


# --- the renderer -------------------------------------------------------------------------


def test_a_window_without_a_whole_hour_is_explained_with_its_dates():
    assert explained(demand(1, 2, 1, at(0, 8, 10), at(0, 8, 50))) == [
        "not placed: its window 2024-01-01 08:10–2024-01-01 08:50 UTC holds no whole hour, so cannot hold 1 h"
    ]


def test_a_preemptible_demand_above_the_pool_names_the_burst_reserve():
    assert explained(demand(1, 19, 24, at(0), at(7), preemptible_ok=True)) == [
        "not placed: needs at least 19 GPUs, the a100 pool has 18 including the burst reserve; no fit this week"
    ]


def test_instants_two_weeks_on_read_with_the_number_of_weeks():
    three_weeks = 3 * 168
    assert explained(demand(1, 14, 24, at(14), at(15)), hours=three_weeks) == [
        "placed Mon 00:00 (+2 weeks)–Tue 00:00 (+2 weeks) on 14 A100"
    ]


def test_reasons_stored_as_json_render_as_the_engine_reasons_do():
    result = allocate(week_start=WEEK, pools=[A100], demands=[
        demand(1, 14, 48, at(0), at(2)),
        demand(2, 8, 24, at(0), at(1), min_gpu_count=2, preemptible_ok=True),  # 4 in the burst reserve
        demand(3, 16, 24, at(0), at(7), min_gpu_count=3),  # 14 from Wed
        demand(4, 4, 24, at(1), at(2)),  # pool full, next fit Thu
    ])
    rendered = []
    for explanation in result.explanations:
        stored = json.loads(json.dumps(reasons_as_json(explanation.reasons)))  # as the database keeps it
        assert explanation_text(stored, week_start=WEEK) == explanation_text(explanation.reasons, week_start=WEEK)
        rendered.append([reason["code"] for reason in stored])
    assert rendered == [["placed"], ["shortened", "placed"], ["shortened", "placed", "queued"], ["pool_full"]]
    assert explanation_text(result.explanations[1].reasons, week_start=WEEK).endswith(
        "preemptible (in the burst reserve)"
    )
    assert result.explanations[3].reasons[0].params["next_fit"]["start"] == "2024-01-04T00:00:00Z"


def test_a_window_moved_for_lower_ranks_says_when_it_could_have_started():
    result = allocate(week_start=WEEK, pools=[A100], demands=[
        demand(1, 10, 24, at(0), at(2)),  # could run Monday, runs Tuesday
        demand(2, 8, 12, at(0), at(0, 12)),
        demand(3, 8, 12, at(0, 12), at(1)),
    ])
    reasons = result.explanations[0].reasons
    stored = json.loads(json.dumps(reasons_as_json(reasons)))

    assert stored[-1] == {"code": "moved", "params": {"pool": "a100", "could_start": "2024-01-01T00:00:00Z"}}
    assert explanation_text(stored, week_start=WEEK) == (
        "placed Tue 00:00–Wed 00:00 on 10 A100; "
        "moved later so that lower-ranked requests fit too: it could have started Mon 00:00"
    )


def test_a_language_without_a_catalogue_falls_back_to_the_english_text():
    demands = (demand(1, 14, 48, at(0), at(2)), demand(2, 8, 24, at(0), at(7)), demand(3, 4, 24, at(1), at(2)))
    english = explained(*demands)
    with translation.override("xx"):
        assert explained(*demands) == english
    assert english == [
        "placed Mon 00:00–Wed 00:00 on 14 A100",
        "placed Wed 00:00–Thu 00:00 on 8 A100; queued: a100 pool full from Mon 00:00 to Wed 00:00",
        "not placed: a100 pool full from Tue 00:00 to Wed 00:00 (needs 4 GPUs for 24 h by Wed 00:00); "
        "next fit would be Wed 00:00–Thu 00:00 on 4 A100",
    ]


def test_weekdays_are_read_in_the_active_language():
    # Django's catalogue names weekdays in German; Docket's own words have no German yet. The same hours read in
    # English before and after: a label once made is kept for its language only.
    placed = demand(1, 10, 48, at(1, 8), at(7))
    assert explained(placed) == ["placed Tue 08:00–Thu 08:00 on 10 A100"]
    with translation.override("de"):
        assert explained(placed) == ["placed Di 08:00–Do 08:00 on 10 A100"]
    assert explained(placed) == ["placed Tue 08:00–Thu 08:00 on 10 A100"]


def test_an_unknown_code_is_refused():
    with pytest.raises(ValueError, match="unknown reason code 'gremlins'"):
        explanation_text([Reason("gremlins", {})], week_start=WEEK)


# --- stored explanations on the pages -----------------------------------------------------


def _stored_row(world, *, ref: int, reasons: list, text: str, placed: bool) -> PlanExplanation:
    """A plan of this week with one window for `ref`, its explanation row then set as given."""
    plan = publish([W(world.a100, world.team_a, 16, 32, 80, ref=ref)])
    row = plan.explanations.get(request_ref=ref)
    row.reasons, row.text, row.placed = reasons, text, placed
    row.save()
    return row


def test_publishing_stores_the_reason_codes_and_the_rendered_text(world):
    plan = publish([W(world.a100, world.team_a, 16, 32, 80, ref=1)])

    row = plan.explanations.get()

    assert [reason["code"] for reason in row.reasons] == ["placed"]
    assert row.reasons[0]["params"]["start"] == (plan.week_starts_at + timedelta(hours=32)).strftime(
        "%Y-%m-%dT%H:%M:%SZ"
    )
    assert row.text == "placed Tue 08:00–Thu 08:00 on 16 GPUs"


def test_the_windows_page_renders_not_placed_reasons_from_their_codes(world, client):
    unknown = [{"code": "unknown_pool", "params": {"pool": "atlas/v100"}}]
    _stored_row(world, ref=1, reasons=unknown, text="words stored at publish", placed=False)
    client.force_login(world.chair)

    html = client.get(f"/windows/?week={this_week()}").content.decode()

    assert "R-1</a>: not placed: unknown pool &#x27;atlas/v100&#x27;" in html
    assert "words stored at publish" not in html


def test_the_windows_page_shows_the_published_text_of_a_row_without_reasons(world, client):
    _stored_row(world, ref=1, reasons=[], text="not placed: published before reason codes", placed=False)
    client.force_login(world.chair)

    html = client.get(f"/windows/?week={this_week()}").content.decode()

    assert "R-1</a>: not placed: published before reason codes" in html


def test_the_request_page_renders_the_explanation_from_its_codes(world, client):
    request = file_request(world, title="Ranker retrain", gpu_count=16, min_gpu_count=8)
    row = _stored_row(world, ref=request.pk, reasons=[], text="", placed=True)
    row.reasons = reasons_as_json(
        [Reason("shortened", {"gpu_count": 16, "duration_hours": 48, "earliest_start": _iso(row, 0),
                              "latest_end": _iso(row, 168)}),
         Reason("placed", {"start": _iso(row, 32), "end": _iso(row, 80), "gpu_count": 16, "gpu_model": "A100",
                           "preemptible": False})]
    )
    row.text = "placed some time on 16 A100"  # what was said at publish
    row.save()
    client.force_login(world.member_a)

    html = client.get(f"/requests/{request.pk}/").content.decode()

    assert (
        "shortened to 16 GPUs: only 16 free for 48 h between Mon 00:00 and next Mon 00:00; "
        "placed Tue 08:00–Thu 08:00 on 16 A100"
    ) in html
    assert "placed some time" not in html
    assert PlanExplanation.objects.get(pk=row.pk).text == "placed some time on 16 A100"  # the archive keeps it


def _iso(row: PlanExplanation, hour: int) -> str:
    return (row.plan.week_starts_at + timedelta(hours=hour)).strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_correction_explains_a_running_window_as_kept(world, client):
    request = file_request(world, title="Ranker retrain", gpu_count=16, min_gpu_count=8)
    close(world)
    for member in (world.chair, world.reviewer, world.finance):
        score(member, request, 9, 8, 9)
    decide(world, request)
    cycle = services.cycle_finalize(cycle=world.cycle, actor=world.chair)
    first = services.cycle_publish(actor=world.chair, cycle=cycle)
    window = first.windows.get()
    services.cycle_publish(actor=world.chair, cycle=cycle, reason="A node died.", now=window.start + timedelta(hours=1))
    client.force_login(world.member_a)

    html = client.get(f"/requests/{request.pk}/").content.decode()

    assert f"kept as published: running since {window.start:%a %H:%M} on 16 GPUs" in html
    event = request.events.filter(action="published").order_by("-id").first()
    assert event is not None
    assert event.detail == f"plan version 2: kept as published: running since {window.start:%a %H:%M} on 16 GPUs"


def test_placement_text_names_gpus_span_and_tier() -> None:
    week_start = datetime(2026, 11, 30, tzinfo=UTC)
    text = placement_text(
        gpu_count=16,
        gpu_model="A100",
        start=week_start + timedelta(days=2, hours=12),
        end=week_start + timedelta(days=4, hours=4),
        tier="standard",
        week_start=week_start,
    )
    assert text == "16 A100, Wed 12:00\u2013Fri 04:00, standard"


def test_placement_text_without_model_and_into_next_week() -> None:
    week_start = datetime(2026, 11, 30, tzinfo=UTC)
    text = placement_text(
        gpu_count=1,
        gpu_model="",
        start=week_start + timedelta(days=6, hours=20),
        end=week_start + timedelta(days=7, hours=2),
        tier="preemptible",
        week_start=week_start,
    )
    assert text == "1 GPU, Sun 20:00\u2013next Mon 02:00, preemptible"


def test_placement_text_refuses_an_unknown_tier() -> None:
    week_start = datetime(2026, 11, 30, tzinfo=UTC)
    with pytest.raises(ValueError, match="unknown tier"):
        placement_text(gpu_count=1, gpu_model="", start=week_start, end=week_start, tier="gold", week_start=week_start)


def test_a_kept_window_that_has_not_started_is_not_said_to_be_running() -> None:
    week_start = datetime(2026, 11, 30, tzinfo=UTC)
    running = [{"code": "kept", "params": {"start": "2026-12-01T08:00:00Z", "gpu_count": 16, "started": True}}]
    waiting = [{"code": "kept", "params": {"start": "2026-12-02T15:00:00Z", "gpu_count": 8, "started": False}}]
    before_the_flag = [{"code": "kept", "params": {"start": "2026-12-01T08:00:00Z", "gpu_count": 1}}]
    assert explanation_text(running, week_start=week_start) == "kept as published: running since Tue 08:00 on 16 GPUs"
    assert explanation_text(waiting, week_start=week_start) == (
        "kept as published: an approved emergency, from Wed 15:00 on 8 GPUs"
    )
    assert explanation_text(before_the_flag, week_start=week_start) == (
        "kept as published: running since Tue 08:00 on 1 GPU"
    )
