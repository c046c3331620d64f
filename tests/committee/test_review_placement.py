"""The review page's placement preview (the engine's dry run on the decisions so far) and the chair's confirmations.

The preview must be what publishing then places: same windows, same explanations. A grant that
cannot be honoured as decided is flagged with the engine's reason; close intake, finalize and
publish change nothing until the chair confirms (`confirm=1`).
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from allocations.explanations import explanation_text
from allocations.models import AllocationPlan, AllocationWindow, PlanExplanation
from allocations.selectors import plan_for_week
from committee import selectors, services
from committee.models import CycleStatus, Decision, GpuRequest, RequestStatus, ReviewCycle
from tests.committee.reviewing import bulk_requests, bulk_teams, close, contended, score
from tests.factories import file_request

HTMX = {"HTTP_HX_REQUEST": "true"}


def url(world: Any, name: str, *args: Any) -> str:
    return reverse(f"committee:{name}", args=[world.cycle.week, *args])


def _windows(pairs: Any) -> set[tuple[int, str, int, Any, Any, str]]:
    return {(w.ref, w.pool, w.gpu_count, w.start, w.end, w.tier) for w in pairs}


# --- the selector: the preview is what publishing places --------------------------------------


def test_the_preview_is_what_publish_then_places_for_a_contended_week(world):
    requests = contended(world)
    preview = selectors.cycle_placement(cycle=world.cycle)
    by_title = {p.title: p for p in preview.placements}
    assert [p.title for p in preview.placements] == ["Ranker", "Search", "Vision", "Speech"]  # ranking order
    assert {t: (p.status, p.window.gpu_count if p.window else 0) for t, p in by_title.items()} == {
        "Ranker": ("placed", 32), "Search": ("shortened", 14), "Vision": ("shortened", 12), "Speech": ("unplaced", 0),
    }
    assert by_title["Vision"].window is not None and by_title["Vision"].window.tier == "preemptible"
    assert [p.title for p in preview.flagged] == ["Search", "Vision", "Speech"]

    cycle = services.cycle_finalize(cycle=world.cycle, actor=world.chair)
    finalized = selectors.cycle_placement(cycle=cycle)
    summary = selectors.publish_summary(cycle=cycle, now=timezone.now())
    plan = services.cycle_publish(actor=world.chair, cycle=cycle)

    published = [
        (w.request_ref, w.pool.key, w.gpu_count, w.start, w.end, w.tier)
        for w in AllocationWindow.objects.filter(plan=plan).select_related("pool__cluster")
    ]
    preview_windows = {(p.window.ref, p.pool_key, p.window.gpu_count, p.window.start, p.window.end, p.window.tier)
                       for p in preview.placements if p.window}
    assert set(published) == preview_windows == _windows(
        p.window for p in finalized.placements if p.window
    ) == _windows(p.window for p in summary.by_request.values() if p.window)
    stored = {e.request_ref: e for e in PlanExplanation.objects.filter(plan=plan)}
    for placement in preview.placements:
        explanation = stored[placement.request_id]
        assert explanation.text == placement.reason == explanation_text(explanation.reasons, week_start=cycle.starts_at)
        assert (explanation.placed, explanation.shortened) == (placement.explanation.placed,
                                                                placement.explanation.shortened)
    assert summary.version == plan.version == 1 and summary.window_count == 3
    assert set(requests) == {"ranker", "search", "vision", "speech"}


def test_the_preview_orders_grants_by_the_live_ranking_not_by_when_they_were_decided(world):
    requests = contended(world)
    # Speech's scores rise above everyone's: it now ranks first and takes its 8 GPUs first.
    for member in (world.chair, world.reviewer):
        score(member, requests["speech"], 10, 10, 10)
    preview = selectors.cycle_placement(cycle=world.cycle)
    assert preview.placements[0].title == "Speech"
    by_title = {p.title: p for p in preview.placements}
    # Ranker then takes 32 of the 46 standard GPUs; 6 are left, below Search's minimum of 8.
    assert by_title["Speech"].status == "placed" and by_title["Ranker"].status == "placed"
    assert by_title["Search"].status == "unplaced" and by_title["Search"].window is None


# --- the review page -------------------------------------------------------------------------


def test_the_review_page_shows_what_each_grant_would_get_and_flags_the_engines_reason(client, world):
    requests = contended(world)
    client.force_login(world.reviewer)
    body = client.get(url(world, "review-cycle")).content.decode()
    preview = selectors.cycle_placement(cycle=world.cycle)
    ranker, search, speech = (preview.by_request[requests[k].pk] for k in ("ranker", "search", "speech"))

    line = re.search(rf'<div class="would-get[^"]*" id="would-get-{requests["ranker"].pk}">(.*?)</div>', body, re.S)
    assert line is not None and "flagged" not in line.group(0)
    assert f"would get <strong class=\"placed\">{ranker.text}</strong>" in line.group(1)
    assert ranker.text.startswith("32 A100, ") and ranker.text.endswith(", priority")

    line = re.search(rf'<div class="would-get[^"]*" id="would-get-{requests["search"].pk}">(.*?)</div>', body, re.S)
    assert line is not None and "flag-shortened" in line.group(0)
    assert "⚠ Shortened:" in line.group(1) and search.text.startswith("14 A100, ")
    assert f"The engine: {search.reason}." in line.group(1) and "shortened" in search.reason

    line = re.search(rf'<div class="would-get[^"]*" id="would-get-{requests["speech"].pk}">(.*?)</div>', body, re.S)
    assert line is not None and "⚠ Not placed:" in line.group(1) and "nothing" in line.group(1)
    assert speech.reason.startswith("not placed: ") and speech.reason in line.group(1)
    assert "3 grants cannot be honoured as decided:" in body


def test_each_pool_is_a_timeline_against_the_standard_burst_and_standby_lines(client, world):
    contended(world)
    client.force_login(world.chair)
    body = client.get(url(world, "review-cycle")).content.decode()
    assert 'data-timeline="atlas/a100"' in body and 'data-timeline="orion/h100"' not in body  # h100 has no grant
    # The first screen carries no figure: each pool's timeline is fetched when its <details> is opened.
    assert "placement-data" not in body and "burst reserve top" not in body
    timeline = url(world, "review-placement-pool", "atlas", "a100")
    assert f'<details class="pool-timeline" data-timeline-url="{timeline}">' in body
    a100 = client.get(timeline).json()
    assert [t["name"] for t in a100["data"]] == ["Team A · priority", "Team B · standard", "Team C · preemptible"]
    assert [t["y"][0] for t in a100["data"]] == [32, 14, 12] and len(a100["data"][0]["x"]) == 48
    assert [s["y0"] for s in a100["layout"]["shapes"]] == [46, 58, 64]
    assert [a["text"] for a in a100["layout"]["annotations"]] == [
        "standard capacity (46)", "burst reserve top (58)", "standby top (all GPUs) (64)"
    ]
    assert "decided 3,840 GPU-hours, placed 2,784" in body  # (32+24+16+8)×48 decided; (32+14+12)×48 placed


def test_the_flag_disappears_when_the_chair_grants_the_part_that_fits(client, world):
    requests = contended(world)
    client.force_login(world.chair)
    search = requests["search"]
    response = client.post(
        url(world, "review-decision", search.pk),
        {"outcome": "partial", "granted_gpu_count": "14", "rationale": "The 14 GPUs that fit."},
        **HTMX,
    )
    body = response.content.decode()
    assert response.status_code == 200 and "Decision saved." in body and response["HX-Trigger"] == "ranking-changed"
    # The page then asks for the preview again: the placement section and the cards' lines, out of band.
    body = client.get(url(world, "review-ranking"), **HTMX).content.decode()
    assert '<section id="placement" hx-swap-oob="true">' in body
    line = re.search(rf'<div class="would-get[^"]*" id="would-get-{search.pk}" hx-swap-oob="true">(.*?)</div>',
                     body, re.S)
    assert line is not None and "flagged" not in line.group(0) and "⚠" not in line.group(1)
    assert "would get <strong class=\"placed\">14 A100, " in line.group(1) and "(decided: 14 GPUs)" in line.group(1)
    assert "2 grants cannot be honoured as decided:" in body
    client.post(url(world, "review-decision", requests["speech"].pk),
                {"outcome": "reject", "rationale": "No room this week."}, **HTMX)
    body = client.get(url(world, "review-cycle")).content.decode()
    assert "1 grant cannot be honoured as decided:" in body  # Vision: only preemptible, the chair may accept it


def test_a_score_saved_inline_refreshes_the_preview(client, world):
    requests = contended(world)
    client.force_login(world.finance)
    saved = client.post(url(world, "review-score", requests["speech"].pk),
                        {"criterion": "business_impact", "value": "10"}, **HTMX)
    assert saved["HX-Trigger"] == "ranking-changed" and 'id="placement"' not in saved.content.decode()
    body = client.get(url(world, "review-ranking"), **HTMX).content.decode()
    assert '<section id="placement" hx-swap-oob="true">' in body
    assert "placement-data" not in body  # the open timelines are fetched again by the page's script


def test_the_open_week_has_no_preview(client, world):
    file_request(world)
    client.force_login(world.chair)
    body = client.get(url(world, "review-cycle")).content.decode()
    assert '<section id="placement"></section>' in body and "would get" not in body


# --- confirmations ---------------------------------------------------------------------------


def _state() -> dict[str, list[str]]:
    models = (ReviewCycle, GpuRequest, Decision, AllocationPlan, AllocationWindow)
    return {m.__name__: sorted(map(repr, m.objects.values())) for m in models}


def test_close_intake_warns_of_an_early_close_and_stranded_drafts_and_changes_nothing_until_confirmed(client, world):
    file_request(world)
    file_request(world, team=world.team_b, title="Half written", submit=False)
    client.force_login(world.chair)
    before = _state()
    for response in (client.get(url(world, "cycle-close-intake")), client.post(url(world, "cycle-close-intake"))):
        body = response.content.decode()
        assert response.status_code == 200
        assert "1 submitted request goes to review." in body
        # The pinned clock (Wed 10:00) is before the intake deadline (Fri 18:00 in Berlin).
        assert "closing now closes it 2\xa0days, 7\xa0hours early" in body
        assert "1 draft would be stranded" in body and "(Team B)" in body
        assert 'name="confirm" value="1"' in body
    assert _state() == before
    response = client.post(url(world, "cycle-close-intake"), {"confirm": "1"}, follow=True)
    assert "is closed; the review is open" in response.content.decode()
    assert ReviewCycle.objects.get(pk=world.cycle.pk).status == CycleStatus.IN_REVIEW


def test_close_intake_after_its_deadline_without_drafts_has_no_warning(client, world, clock):
    file_request(world)
    clock.move_to(world.cycle.intake_closes_at + timedelta(minutes=1), tick=False)
    client.force_login(world.chair)
    body = client.get(url(world, "cycle-close-intake")).content.decode()
    assert 'id="close-intake-warning"' not in body and "Yes, close intake" in body


def test_finalize_shows_the_placement_and_the_automatic_deferrals_and_changes_nothing_until_confirmed(client, world):
    contended(world)
    late = GpuRequest.objects.create(  # submitted but scored by nobody: below quorum, no decision
        **{f.name: getattr(GpuRequest.objects.get(title="Speech"), f.name)
           for f in GpuRequest._meta.concrete_fields if f.name not in ("id", "title", "pool")},
        title="Unscored", pool=world.h100,
    )
    client.force_login(world.chair)
    before = _state()
    for response in (client.get(url(world, "cycle-finalize")), client.post(url(world, "cycle-finalize"))):
        body = response.content.decode()
        assert response.status_code == 200
        assert "3 grants are not placed as decided" in body
        cells = re.sub(r">\s+<", "><", re.sub(r' data-label="[^"]*"', "", body))  # a phone reads them as cards
        assert "<td>atlas/a100</td><td>4</td>" in cells and "<td>3,840</td><td>2,784</td>" in cells
        assert "Deferred automatically" in body and f"{late.title} (Team D)" in body
        assert 'id="confirm-finalize"' in body
    assert _state() == before
    response = client.post(url(world, "cycle-finalize"), {"confirm": "1"}, follow=True)
    assert "is finalized" in response.content.decode()
    assert ReviewCycle.objects.get(pk=world.cycle.pk).status == CycleStatus.FINALIZED
    assert Decision.objects.get(request=late).outcome == "defer"


def test_finalize_confirmation_names_the_ranked_requests_still_undecided_and_offers_no_button(client, world):
    a = file_request(world)
    close(world)
    for member in (world.chair, world.reviewer):
        score(member, a, 8, 6, 5)
    client.force_login(world.chair)
    body = client.get(url(world, "cycle-finalize")).content.decode()
    assert "The week cannot be finalized yet." in body and "Ranker retrain" in body
    assert 'id="confirm-finalize"' not in body


def test_publish_shows_what_goes_to_the_schedulers_and_changes_nothing_until_confirmed(client, world):
    contended(world)
    cycle = services.cycle_finalize(cycle=world.cycle, actor=world.chair)
    client.force_login(world.chair)
    body = client.get(url(world, "review-cycle")).content.decode()
    assert "What publishing will place" in body and "will get" in body
    before = _state()
    for response in (client.get(url(world, "cycle-publish")), client.post(url(world, "cycle-publish"))):
        body = response.content.decode()
        assert response.status_code == 200
        assert "Plan version 1 goes to the schedulers with 3 windows." in body
        windows, rest = body.split('<section id="confirm-placement">')
        assert "Team A — Ranker: 32 A100, " in windows and "Speech" not in windows  # no window, nothing to pull
        assert "<strong>Speech</strong> (Team D, atlas/a100): decided 8 GPUs — <small>not placed: " in rest
        assert 'id="confirm-publish"' in body
    assert _state() == before and plan_for_week(week=cycle.week) is None
    response = client.post(url(world, "cycle-publish"), {"confirm": "1"}, follow=True)
    assert "is published: plan version 1 with 3 new windows" in response.content.decode()


def test_a_correction_is_confirmed_with_its_reason(client, world):
    contended(world)
    cycle = services.cycle_finalize(cycle=world.cycle, actor=world.chair)
    services.cycle_publish(actor=world.chair, cycle=cycle)
    client.force_login(world.chair)
    body = client.post(url(world, "cycle-publish"), {"reason": "Atlas lost a node."}).content.decode()
    assert "Plan version 2 goes to the schedulers" in body and ">Atlas lost a node.</textarea>" in body
    assert AllocationPlan.objects.filter(week=cycle.week).count() == 1
    client.post(url(world, "cycle-publish"), {"reason": "Atlas lost a node.", "confirm": "1"})
    assert AllocationPlan.objects.filter(week=cycle.week).count() == 2


@pytest.mark.parametrize(
    ("step", "status"),
    [("cycle-close-intake", CycleStatus.IN_REVIEW), ("cycle-finalize", CycleStatus.OPEN),
     ("cycle-publish", CycleStatus.IN_REVIEW)],
)
def test_a_confirmation_in_the_wrong_state_says_so_and_changes_nothing(client, world, step, status):
    file_request(world)
    if status == CycleStatus.IN_REVIEW:
        close(world)
    client.force_login(world.chair)
    before = _state()
    response = client.get(url(world, step))
    body = response.content.decode()
    assert response.status_code == 409 and "Nothing was changed." in body and 'name="confirm"' not in body
    assert client.post(url(world, step)).status_code == 409
    response = client.post(url(world, step), {"confirm": "1"}, follow=True)
    assert "Cannot" in response.content.decode()
    assert _state() == before


@pytest.mark.parametrize("confirm", ["0", "yes", "", "1 "])
def test_anything_but_confirm_1_changes_nothing(client, world, confirm):
    contended(world)
    client.force_login(world.chair)
    before = _state()
    assert client.post(url(world, "cycle-finalize"), {"confirm": confirm}).status_code == 200
    assert _state() == before


@pytest.mark.parametrize("who", ["reviewer", "finance", "lead_a", "outsider"])
def test_only_the_chair_sees_the_confirmations(client, world, who):
    file_request(world)
    client.force_login(getattr(world, who))
    before = _state()
    for step in ("cycle-close-intake", "cycle-finalize", "cycle-publish"):
        assert client.get(url(world, step)).status_code == 403
        assert client.post(url(world, step), {"confirm": "1"}).status_code == 403
    assert _state() == before


# --- query counts ----------------------------------------------------------------------------


def _grant_every_other(world: Any) -> None:
    """The requests bulk_requests decided (every other one) granted whole; the rest stay undecided."""
    rows = list(Decision.objects.filter(cycle=world.cycle).select_related("request"))
    for decision in rows:
        decision.outcome, decision.granted_gpu_count = "grant", decision.requested_gpu_count
    Decision.objects.bulk_update(rows, ["outcome", "granted_gpu_count"])


def _grant_every_request(world: Any) -> None:
    """Every request of the week granted whole (bulk_requests decides every other one, and which of them a page of
    cards shows depends on the scores, which depend on the ids earlier tests left)."""
    decided = set(Decision.objects.filter(cycle=world.cycle).values_list("request_id", flat=True))
    Decision.objects.bulk_create(
        Decision(request=r, cycle=world.cycle, outcome="reject", requested_gpu_count=r.gpu_count,
                 rationale="Granted.", decided_by=world.chair, decided_by_name="Chair", team_name=r.team.name,
                 request_title=r.title, cycle_week=world.cycle.week)
        for r in GpuRequest.objects.filter(cycle=world.cycle).exclude(pk__in=decided).select_related("team")
    )
    rows = list(Decision.objects.filter(cycle=world.cycle))
    for decision in rows:
        decision.outcome, decision.granted_gpu_count = "grant", decision.requested_gpu_count
    Decision.objects.bulk_update(rows, ["outcome", "granted_gpu_count"])
    services.cycle_ranking_changed(cycle=world.cycle)


@pytest.mark.parametrize("page", ["review-cycle", "cycle-finalize"])
def test_the_preview_adds_no_query_per_request(client, world, page):
    teams = bulk_teams(50)
    close(world)
    bulk_requests(world, teams[:5], scored_by=(world.chair, world.reviewer))
    _grant_every_request(world)
    client.force_login(world.chair)
    client.get(url(world, page))  # warm the session
    services.cycle_ranking_changed(cycle=world.cycle)  # both reads rank the week (bulk_requests moves it too)
    with CaptureQueriesContext(connection) as ten:
        body = client.get(url(world, page)).content.decode()
    assert body.count("would get") == 10 or page == "cycle-finalize"
    bulk_requests(world, teams[5:], scored_by=(world.chair, world.reviewer))
    _grant_every_request(world)
    with CaptureQueriesContext(connection) as sixty:
        body = client.get(url(world, page)).content.decode()
    # The page shows one page of request cards (10), each granted, whatever the week holds beyond them.
    assert body.count("would get") == 10 or page == "cycle-finalize"
    assert len(sixty) == len(ten), "\n".join(q["sql"] for q in sixty.captured_queries)


def test_an_inline_decision_and_the_refresh_it_asks_for_run_the_same_queries_for_10_and_60(client, world):
    teams = bulk_teams(30)
    close(world)
    few = bulk_requests(world, teams[:5], scored_by=(world.chair, world.reviewer))
    _grant_every_other(world)
    client.force_login(world.chair)
    undecided = [r for r in few if not Decision.objects.filter(request=r).exists()]
    data = {"outcome": "reject", "rationale": "Not now."}
    client.post(url(world, "review-decision", undecided[0].pk), data, **HTMX)
    with CaptureQueriesContext(connection) as ten:
        client.post(url(world, "review-decision", undecided[1].pk), data, **HTMX)
    with CaptureQueriesContext(connection) as ten_refresh:
        client.get(url(world, "review-ranking"), **HTMX)
    many = bulk_requests(world, teams[5:], scored_by=(world.chair, world.reviewer))
    _grant_every_other(world)
    undecided = [r for r in many if not Decision.objects.filter(request=r).exists()]
    with CaptureQueriesContext(connection) as sixty:
        response = client.post(url(world, "review-decision", undecided[0].pk), data, **HTMX)
    assert 'id="ranking"' not in response.content.decode()  # the save answers with its own form only
    with CaptureQueriesContext(connection) as sixty_refresh:
        refresh = client.get(url(world, "review-ranking"), **HTMX).content.decode()
    # The refresh draws the placement of every grant and the "would get" line of the page's 10 cards.
    assert refresh.count('<div class="would-get') == 10 and '<section id="placement" hx-swap-oob="true">' in refresh
    assert len(sixty) == len(ten), "\n".join(q["sql"] for q in sixty.captured_queries)
    assert len(sixty_refresh) == len(ten_refresh)
    assert GpuRequest.objects.filter(status=RequestStatus.SUBMITTED).count() == 60


def test_names_in_the_timeline_are_text_not_markup(client, world):
    contended(world)
    GpuRequest.objects.filter(title="Ranker").update(title="<b onmouseover=alert(1)>Ranker</b>")
    client.force_login(world.chair)
    figure = client.get(url(world, "review-placement-pool", "atlas", "a100")).json()
    assert figure["data"][0]["text"] == "&lt;b onmouseover=alert(1)&gt;Ranker&lt;/b&gt;"


def test_a_timeline_is_for_the_committee_and_a_pool_with_grants_in_a_previewed_week(client, world):
    contended(world)
    timeline = url(world, "review-placement-pool", "atlas", "a100")
    client.force_login(world.lead_a)
    assert client.get(timeline).status_code == 403
    client.force_login(world.chair)
    assert client.get(url(world, "review-placement-pool", "orion", "h100")).status_code == 404  # no grant there
    assert client.get(url(world, "review-placement-pool", "atlas", "nowhere")).status_code == 404
    ReviewCycle.objects.filter(pk=world.cycle.pk).update(status=CycleStatus.PUBLISHED)
    assert client.get(timeline).status_code == 404  # a published week has its plan, not a preview
