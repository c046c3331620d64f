"""The scores grid in a real browser: keyboard entry saves as the member goes, errors stay in their cell."""

from __future__ import annotations

import threading

import pytest

from committee.models import Score
from tests.browser import browser_page, sign_in  # noqa: F401
from tests.committee.reviewing import two_requests_in_review
from tests.factories import file_request

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_member_scores_with_the_keyboard_and_each_cell_saves_as_they_go(browser_page, world):  # noqa: F811
    from playwright.sync_api import expect

    a, b = two_requests_in_review(world)
    page = browser_page
    sign_in(page, "finance")
    page.goto(f"/review/{world.cycle.week}/")
    expect(page.locator("#my-queue")).to_contain_text("You have scored 0 of 2 requests.")
    page.locator("#open-grid").click()
    # The review page has a #queue-count too: wait for the grid itself, its script started (form.live).
    page.wait_for_url(f"**/review/{world.cycle.week}/grid/**")
    expect(page.locator("#grid-form.live")).to_be_attached()
    count = page.locator("#queue-count")
    expect(count).to_contain_text("You have scored 0 of 2 requests.")
    expect(page.get_by_role("button", name="Save the scores on this page")).to_be_hidden()  # saves as you go

    first = page.locator(f"#cell-{a.pk}-business_impact")
    first.click()
    # Type a digit, Tab on; 10 is two keys; Enter goes down the column; arrows move anywhere.
    # As a person types: each cell's save has answered before the next cell is typed into.
    steps = (("7", "Tab", "business_impact"), ("10", "Tab", "feasibility"), ("4", "Enter", "urgency"))
    for keys, move, criterion in steps:
        expect(page.locator(f"#cell-{a.pk}-{criterion}")).to_be_focused()
        page.keyboard.type(keys, delay=30)
        page.keyboard.press(move)
        expect(page.locator(f'td:has(#cell-{a.pk}-{criterion})')).to_have_attribute("data-state", "saved")
    expect(page.locator(f"#cell-{b.pk}-urgency")).to_be_focused()  # Enter went down the column
    for criterion, shown in (("business_impact", "7"), ("feasibility", "10"), ("urgency", "4")):
        cell = page.locator(f'td:has(#cell-{a.pk}-{criterion})')
        expect(cell).to_have_attribute("data-state", "saved")
        expect(cell.locator(".cell-state")).to_have_text("Saved.")
        expect(page.locator(f"#cell-{a.pk}-{criterion}")).to_have_value(shown)
    expect(count).to_contain_text("You have scored 1 of 2 requests.")
    page.keyboard.press("ArrowLeft")
    expect(page.locator(f"#cell-{b.pk}-feasibility")).to_be_focused()
    page.keyboard.press("ArrowUp")
    expect(page.locator(f"#cell-{a.pk}-feasibility")).to_be_focused()

    # Out of range: the cell shows the error, nothing is stored, the count stays.
    page.locator(f"#cell-{b.pk}-business_impact").click()
    page.keyboard.type("12")
    page.keyboard.press("Tab")
    bad = page.locator(f'td:has(#cell-{b.pk}-business_impact)')
    expect(bad).to_have_attribute("data-state", "error")
    expect(bad.locator(".cell-state")).to_have_text("A score is a whole number from 0 to 10.")
    expect(page.locator(f"#cell-{b.pk}-business_impact")).to_have_attribute("aria-invalid", "true")
    expect(count).to_contain_text("You have scored 1 of 2 requests.")
    assert not Score.objects.filter(request=b).exists()

    # Corrected, it saves.
    page.locator(f"#cell-{b.pk}-business_impact").click()  # focus selects what the cell holds
    page.keyboard.type("9")
    page.keyboard.press("Enter")
    expect(bad).to_have_attribute("data-state", "saved")
    assert sorted(Score.objects.filter(member=world.finance).values_list("request_id", "criterion", "value")) == [
        (a.pk, "business_impact", 7), (a.pk, "feasibility", 10), (a.pk, "urgency", 4), (b.pk, "business_impact", 9)]
    # The grid opened on "not scored by me": a, fully scored, leaves it when the page is loaded again.
    page.reload()
    expect(page.locator(f"#grid-row-{a.pk}")).to_have_count(0)
    expect(page.locator(f"#cell-{b.pk}-business_impact")).to_have_value("9")
    page.get_by_role("link", name="All requests").click()
    expect(page.locator(f"#cell-{a.pk}-feasibility")).to_have_value("10")


def test_own_teams_request_is_shown_as_not_scorable(browser_page, world):  # noqa: F811
    from playwright.sync_api import expect

    _a, b = two_requests_in_review(world)
    page = browser_page
    sign_in(page, "tech")  # team B
    page.goto(f"/review/{world.cycle.week}/grid/")
    own = page.locator(f"#grid-row-{b.pk}")
    expect(own).to_contain_text("Not scorable: You are a member of Team B: you do not score its requests.")
    expect(own.locator("input")).to_have_count(0)
    expect(page.locator("#queue-count")).to_contain_text("You have scored 0 of 1 request.")


def _answer_503(times: int | None):
    """A route handler: the first `times` saves (every save when None) meet a server that cannot take them."""
    seen = []

    def handle(route):
        seen.append(route.request.post_data)
        if times is None or len(seen) <= times:
            # What Docket answers when its database cannot be reached (core.middleware): a 503 page, Retry-After.
            route.fulfill(status=503, content_type="text/html", headers={"Retry-After": "5"},
                          body="<!doctype html><title>Docket is briefly unavailable</title>")
        else:
            route.continue_()

    return handle, seen


def _retry_pauses_pass(page, done, limit_ms: int = 20000) -> None:
    """The page's clock (installed before it loaded) moves on 100 ms at a time until `done()`: the grid's pauses
    between tries (0.5, 1, 2, 4 s) pass in order, on the page's clock, without waiting them out."""
    for _ in range(limit_ms // 100):
        if done():
            return
        page.clock.run_for(100)
    assert done(), f"still not done after {limit_ms} ms on the page's clock"


def test_a_save_the_server_could_not_take_is_sent_again_and_then_saved(browser_page, world):  # noqa: F811
    from playwright.sync_api import expect

    a, _b = two_requests_in_review(world)
    page = browser_page
    sign_in(page, "finance")
    handle, seen = _answer_503(times=2)  # a restart, a database failing over: two 503s, then it answers
    page.route("**/grid/cell/", handle)
    page.clock.install()
    page.goto(f"/review/{world.cycle.week}/grid/")
    expect(page.locator("#grid-form.live")).to_be_attached()
    page.locator(f"#cell-{a.pk}-business_impact").click()
    page.keyboard.type("8")
    page.keyboard.press("Tab")
    _retry_pauses_pass(page, lambda: len(seen) >= 3)
    cell = page.locator(f"td:has(#cell-{a.pk}-business_impact)")
    expect(cell).to_have_attribute("data-state", "saved")
    assert len(seen) == 3 and all("value=8" in body for body in seen)
    assert list(Score.objects.filter(request=a, member=world.finance).values_list("criterion", "value")) == [
        ("business_impact", 8)]


def test_a_save_the_server_never_takes_says_so_in_its_cell_and_stores_nothing(browser_page, world):  # noqa: F811
    from playwright.sync_api import expect

    a, _b = two_requests_in_review(world)
    page = browser_page
    sign_in(page, "finance")
    handle, seen = _answer_503(times=None)
    page.route("**/grid/cell/", handle)
    page.clock.install()
    page.goto(f"/review/{world.cycle.week}/grid/")
    expect(page.locator("#grid-form.live")).to_be_attached()
    page.locator(f"#cell-{a.pk}-business_impact").click()
    page.keyboard.type("8")
    page.keyboard.press("Tab")
    _retry_pauses_pass(page, lambda: len(seen) >= 5)  # four more tries, 7.5 s apart in all
    cell = page.locator(f"td:has(#cell-{a.pk}-business_impact)")
    expect(cell).to_have_attribute("data-state", "error")
    expect(cell.locator(".cell-state")).to_have_text("Not saved: the server could not be reached.")
    assert len(seen) == 5
    assert not Score.objects.filter(request=a).exists()


def test_a_whole_grid_typed_at_speed_on_a_slow_server_keeps_every_score(browser_page, world, monkeypatch):  # noqa: F811
    """Tab moves from score to score only (a row's end goes on to the next row's first cell, past the request's
    link; Shift-Tab comes back), saves queue while the server is slow, leaving with unsaved scores asks first, and
    once the server answers every score typed is stored under its own criterion."""
    from playwright.sync_api import expect

    from committee import services
    from tests.committee.reviewing import CRITERIA, close

    rows = [file_request(world, title="Ranker retrain"),
            file_request(world, team=world.team_b, pool=world.h100, title="Vision model", gpu_count=8,
                         min_gpu_count=4),
            file_request(world, pool=world.h100, title="Speech distillation", gpu_count=4, min_gpu_count=2)]
    close(world)
    # A slow server: every save waits at the gate until the test opens it (no timer), so the whole grid is typed
    # while the first save is still unanswered and the others wait in the page's queue.
    gate = threading.Event()
    held = []
    score_record = services.score_record

    def slow_score_record(**kwargs):
        held.append(kwargs["criterion"])
        gate.wait(timeout=60)
        return score_record(**kwargs)

    monkeypatch.setattr(services, "score_record", slow_score_record)
    page = browser_page
    sign_in(page, "finance")
    page.goto(f"/review/{world.cycle.week}/grid/")
    expect(page.locator("#grid-form.live")).to_be_attached()
    ids = [int(pk) for pk in page.locator("tbody tr[data-request]").evaluate_all(
        "trs => trs.map(tr => tr.dataset.request)")]
    assert sorted(ids) == sorted(r.pk for r in rows)
    values = [8, 6, 9, 7, 5, 6, 10, 0, 3]
    page.locator("input.grid-cell").first.click()
    for index, value in enumerate(values):  # as fast as Playwright types: nothing waited for between cells
        if index:
            page.keyboard.press("Tab")  # (keyboard.type("\t") would insert a tab character, not press the key)
        page.keyboard.type(str(value))
    expect(page.locator(f"#cell-{ids[-1]}-urgency")).to_be_focused()
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Shift+Tab")
    page.keyboard.press("Shift+Tab")
    expect(page.locator(f"#cell-{ids[1]}-urgency")).to_be_focused()  # back over the row's start, past its link
    page.keyboard.press("Tab")
    expect(page.locator(f"#cell-{ids[2]}-business_impact")).to_be_focused()
    saves = page.locator("#grid-saves")
    expect(saves).to_have_text("Saving your scores…")

    # Leaving now asks first; staying keeps the page and its queue.
    dialogs = []

    def stay(dialog):
        dialogs.append(dialog.type)
        dialog.dismiss()

    page.on("dialog", stay)
    with page.expect_event("dialog"):
        page.evaluate("() => { setTimeout(() => { window.location.href = '/inbox/'; }); }")
    assert dialogs == ["beforeunload"]
    assert "/grid/" in page.url

    gate.set()
    expect(saves).to_have_text("All your scores are saved.", timeout=30000)
    expect(page.locator("td.cell[data-state=saved]")).to_have_count(len(values))
    stored = {(r, c): v for r, c, v in Score.objects.filter(member=world.finance).values_list(
        "request_id", "criterion", "value")}
    assert stored == {(pk, criterion): values[3 * row + column]
                      for row, pk in enumerate(ids) for column, criterion in enumerate(CRITERIA)}
    page.remove_listener("dialog", stay)
    page.goto("/inbox/")  # everything stored: no question asked
    assert dialogs == ["beforeunload"]
