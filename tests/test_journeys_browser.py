"""A week of Docket end to end, in a real browser against a real server process.

gunicorn serves the app (tests.settings, on the test's PostgreSQL database, so the server
process and this one see the same committed rows); Playwright drives Debian's Chromium, one
browser context per person. A team member files a request, the chair closes intake, three
committee members score it, the chair decides, finalizes and publishes, a scheduler token pulls
the windows over HTTP, two committee members edit the week's decision record at once and one
meets the edit conflict, and the record's PDF downloads. When a step fails, every open page is
saved as a screenshot under test-results/<test>/ and the server's log is printed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, connections

from allocations.services import scheduler_client_create
from committee.models import GpuRequest, RequestStatus
from reports.models import Page, PageRevision
from tests.browser import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, fill_request_form, require_chromium, sign_in
from tests.committee.reviewing import score
from tests.conftest import require
from tests.factories import file_request
from tests.processes import Server, app_env, database_url, gunicorn, log_tail

pytestmark = [pytest.mark.browser, pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

TITLE = "Holiday ranker retrain"
RATIONALE = "Strongest revenue case this week; the distilled ranker misses the quality bar."


@pytest.fixture
def server(world: Any, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Server]:
    require(connection.vendor == "postgresql", "PostgreSQL (run with DATABASE_URL=postgres://…)")
    env = app_env(database_url(connection.settings_dict), DOCKET_PDF_ROOT=str(tmp_path / "pdf"),
                  MEDIA_ROOT=str(tmp_path / "media"))
    with gunicorn(env, log_dir=tmp_path, workers=2) as served:
        try:
            yield served
        finally:
            report = getattr(request.node, "rep_call", None)
            if report is not None and report.failed:
                print(f"--- gunicorn log ({served.log}) ---\n{log_tail(served.log, 80)}")


class People:
    """One browser context per person, each signed in; every page is screenshotted when the test fails."""

    def __init__(self, browser: Any, base_url: str) -> None:
        self.browser = browser
        self.base_url = base_url
        self.pages: dict[str, Any] = {}
        self.contexts: list[Any] = []

    def page(self, username: str) -> Any:
        if username not in self.pages:
            context = self.browser.new_context(base_url=self.base_url, viewport={"width": 1280, "height": 900},
                                               accept_downloads=True)
            self.contexts.append(context)
            page = context.new_page()
            page.set_default_timeout(20000)
            sign_in(page, username)
            self.pages[username] = page
        return self.pages[username]

    def screenshots(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        for username, page in self.pages.items():
            try:
                page.screenshot(path=str(folder / f"{username}.png"), full_page=True)
            except Exception as exc:  # a crashed page must not hide the test's own failure
                print(f"no screenshot of {username}'s page: {exc}")

    def close(self) -> None:
        for context in self.contexts:
            context.close()


@pytest.fixture
def people(server: Server, request: pytest.FixtureRequest) -> Iterator[People]:
    require_chromium()
    sync_api = pytest.importorskip("playwright.sync_api")
    # Playwright's sync API runs an event loop in this thread; the test's ORM calls stay synchronous.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        crowd = People(browser, server.url)
        try:
            yield crowd
        finally:
            report = getattr(request.node, "rep_call", None)
            if report is not None and report.failed:
                crowd.screenshots(ARTIFACTS / request.node.name)
            crowd.close()
            browser.close()
            # While Playwright's loop runs in this thread, Django keeps this thread's ORM connection apart
            # from the one the fixtures opened before; close it here, or it outlives the test database.
            connections.close_all()


def file_and_submit(page: Any, world: Any) -> GpuRequest:
    page.get_by_role("button", name="File a request").click()
    fill_request_form(
        page,
        world=world,
        title=TITLE,
        usage=("800", "760", "91"),
        narrative="A fresher ranker lifts holiday conversion.",
        alternatives=(("Distilled student ranker", "300"),),
    )
    page.get_by_role("button", name="Save").click()
    page.get_by_text("Draft saved").wait_for()
    page.get_by_role("button", name="Submit to the committee").click()
    page.get_by_text("Submitted to the committee.").wait_for()
    return GpuRequest.objects.get(title=TITLE)


def score_in_browser(page: Any, week: str, gpu_request: GpuRequest, values: tuple[int, int, int]) -> None:
    page.goto(f"/review/{week}/")
    for criterion, value in zip(("business_impact", "feasibility", "urgency"), values, strict=True):
        form = page.locator(f"#score-{gpu_request.pk}-{criterion}")
        form.get_by_role("spinbutton").fill(str(value))
        form.get_by_role("button", name="Save").click()
        page.locator(f"#score-{gpu_request.pk}-{criterion} .saved").wait_for()


def decide_in_browser(page: Any, gpu_request: GpuRequest, outcome: str, rationale: str) -> None:
    form = page.locator(f"#decision-{gpu_request.pk}")
    form.locator(f'input[name="outcome"][value="{outcome}"]').check()
    form.get_by_label("Rationale").fill(rationale)
    form.get_by_role("button", name="Save decision").click()
    page.locator(f"#decision-{gpu_request.pk} .saved").wait_for()


def get(url: str, token: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}", **headers})  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=20) as response:  # noqa: S310 (the test's own server)
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def test_a_week_from_request_to_windows_record_and_pdf(server, people, world, tmp_path):
    require(shutil.which("pdftotext") is not None, "pdftotext (apt-get install poppler-utils)")
    from playwright.sync_api import expect

    week = world.cycle.week

    # A team member files the week's request and submits it.
    ours = file_and_submit(people.page("lead_a"), world)
    assert ours.status == RequestStatus.SUBMITTED and ours.team == world.team_a
    rival = file_request(world, team=world.team_b, pool=world.a100, title="Vision model", gpu_count=48,
                         min_gpu_count=40)  # a second request, so there is a ranking to win

    # The chair closes intake.
    chair = people.page("chair")
    chair.goto(f"/review/{week}/")
    chair.locator("#close-intake").click()
    expect(chair.locator("h1")).to_contain_text("Close intake for week")
    chair.locator("#confirm-close-intake").click()
    expect(chair.locator("#cycle-status")).to_have_text("In review")

    # Three committee members score it; tech sits on team B, which does not stop them scoring team A.
    for member, values in (("reviewer", (9, 8, 9)), ("finance", (8, 9, 8)), ("tech", (9, 9, 7))):
        score_in_browser(people.page(member), week, ours, values)
    for member in (world.chair, world.reviewer, world.finance):
        score(member, rival, 5, 4, 4)

    # The chair sees the ranking, decides both, finalizes and publishes.
    chair.goto(f"/review/{week}/")
    expect(chair.locator("#ranking tbody tr").first).to_contain_text(TITLE)
    decide_in_browser(chair, ours, "grant", RATIONALE)
    decide_in_browser(chair, rival, "defer", "Next week: the pool is full.")
    chair.reload()
    chair.locator("#finalize").click()
    expect(chair.locator("#confirm-placement")).to_contain_text("Every grant is placed as decided.")
    chair.locator("#confirm-finalize").click()
    expect(chair.locator("#cycle-status")).to_have_text("Finalized")
    chair.locator("#publish-plan").click()
    expect(chair.locator("#confirm-windows")).to_contain_text(TITLE)
    chair.locator("#confirm-publish").click()
    expect(chair.locator("#cycle-status")).to_have_text("Published")
    chair.get_by_text("plan version 1").wait_for()

    # A scheduler token pulls the windows over HTTP and finds the request's window.
    token = scheduler_client_create(cluster=world.atlas, name="slurm-sync").token
    url = f"{server.url}/api/v1/windows/?cluster=atlas&week={week}"
    status, headers, body = get(url, token)
    assert status == 200, body[:500]
    windows = json.loads(body)["results"]
    mine = [w for w in windows if w["request_id"] == ours.pk]
    assert len(mine) == 1, windows
    assert (mine[0]["team"], mine[0]["pool"], mine[0]["gpu_count"], mine[0]["plan_version"]) == (
        "team-a", "a100", 16, 1)
    assert all(w["request_id"] != rival.pk for w in windows)  # deferred: no window
    assert get(url, token, **{"If-None-Match": headers["ETag"]})[0] == 304
    assert get(url.replace("atlas", "orion"), token)[0] == 404  # another cluster does not exist for it

    # Two committee members edit the week's decision record at once: one saves, the other is told.
    record = Page.objects.get(source_key=f"cycle:{week}")
    before = PageRevision.objects.filter(page=record).count()
    editors = {name: people.page(name) for name in ("reviewer", "finance")}
    for page in editors.values():
        page.goto(f"/archive/{record.slug}/edit/")
        page.get_by_label("Text (Markdown)").wait_for()
    first, second = editors["reviewer"], editors["finance"]
    first.get_by_label("Text (Markdown)").fill(first.get_by_label("Text (Markdown)").input_value()
                                              + "\n\nReviewer: the grant is reviewed again in four weeks.")
    first.get_by_label("Edit summary").fill("Review date")
    first.get_by_role("button", name="Save").click()
    first.get_by_text(f"Saved as revision {before + 1}.").wait_for()

    mine_text = second.get_by_label("Text (Markdown)").input_value() + "\n\nFinance: cost checked against budget."
    second.get_by_label("Text (Markdown)").fill(mine_text)
    second.get_by_label("Edit summary").fill("Cost note")
    second.get_by_role("button", name="Save").click()
    expect(second.locator("#edit-conflict")).to_contain_text("Edit conflict: nothing was saved.")
    assert second.get_by_label("Text (Markdown)").input_value() == mine_text  # their text is kept
    assert "reviewed again in four weeks" in second.inner_text(".conflict-diff")  # and the newer one shown
    assert PageRevision.objects.filter(page=record).count() == before + 1
    second.get_by_label("Text (Markdown)").fill(
        mine_text + "\nReviewer: the grant is reviewed again in four weeks.")  # brings the other edit in
    second.get_by_role("button", name="Save").click()
    second.get_by_text(f"Saved as revision {before + 2}.").wait_for()

    # The record's PDF downloads, with the decision in it.
    second.get_by_role("button", name="Make a PDF").click(no_wait_after=True)  # renders in the POST: can take > 15 s
    with second.expect_download(timeout=90000) as download_info:
        second.locator("#pdf-download").click(timeout=90000)
    path = tmp_path / "record.pdf"
    download_info.value.save_as(path)
    assert path.read_bytes().startswith(b"%PDF")
    text = " ".join(subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True,
                                   check=True, timeout=60).stdout.split())
    assert TITLE in text and RATIONALE in text and "Grant" in text
    assert "cost checked against budget" in text and "reviewed again in four weeks" in text

