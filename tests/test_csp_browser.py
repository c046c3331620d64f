"""The Content-Security-Policy in a real browser: every page still works, and nothing is refused.

Chromium reports each script, style or frame the policy blocks as a `securitypolicyviolation`
event; the test listens on every page it opens and expects none, while the charts (Plotly),
the inline saves (htmx) and Swagger UI still draw.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser import browser_page, sign_in  # noqa: F401  (fixtures)
from tests.security_world import build_estate

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LISTEN = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`);
});
"""


# A frame, then a task, later: the violation events of what the page loaded and drew have been dispatched (Chromium
# queues each as a task when it refuses something).
SETTLED = "() => new Promise((done) => requestAnimationFrame(() => setTimeout(done)))"


def visit(page: Any, path: str, drawn: str | None) -> list[str]:
    """The violations of one page, once it has loaded and drawn what its scripts draw after the load."""
    page.goto(path)
    if drawn:
        page.locator(drawn).first.wait_for(state="attached")
    page.evaluate(SETTLED)
    return list(page.evaluate("window.__cspViolations"))


def test_pages_run_under_the_policy_without_violations(browser_page: Any, tmp_path: Any) -> None:  # noqa: F811
    estate = build_estate(tmp_path / "pdf")
    pool = estate.window_a.pool
    _idle_action(estate.window_a)
    page = browser_page
    page.context.add_init_script(LISTEN)
    console = []
    page.on("console", lambda message: console.append(message.text))
    sign_in(page, "reviewer")

    violations: dict[str, list[str]] = {}
    for path, drawn in (
        (f"/review/{estate.review.week}/", "#priority-matrix .main-svg"),  # the priority matrix (Plotly)
        (f"/archive/{estate.record.slug}/", ".plotly-chart .main-svg"),  # the decision record's charts
        ("/archive/dashboards/", ".plotly-chart .main-svg"),
        ("/archive/dashboards/capacity/", ".main-svg"),
        (f"/archive/dashboards/elastic/{pool.cluster.slug}/{pool.slug}/", ".plotly-chart .main-svg"),
        ("/requests/", None),
        (f"/windows/?week={estate.published.week}", None),
        ("/api/v1/docs/", ".swagger-ui .info"),  # Swagger UI, its start script served as a file
    ):
        violations[path] = visit(page, path, drawn)
    assert not any(violations.values()), violations
    assert not [text for text in console if "Content Security Policy" in text], console

    # htmx still saves a score in place (the review page's inline form), under the same policy.
    page.goto(f"/review/{estate.review.week}/")
    page.locator("#priority-matrix .main-svg").first.wait_for(state="attached")
    page.evaluate(SETTLED)
    assert page.evaluate("typeof htmx") == "object"
    assert not page.evaluate("window.__cspViolations")


def _idle_action(window: Any) -> None:
    """The elastic history page draws a chart only for a pool the policy acted on."""
    from datetime import timedelta

    from django.utils import timezone

    from allocations.elastic.selectors import elastic_policy_current
    from allocations.models import ElasticAction

    now = timezone.now()
    ElasticAction.objects.create(
        kind="idle", pool=window.pool, window=window, team=window.team, gpus=1, utilization_pct=10,
        span_start=now - timedelta(hours=5), span_end=now - timedelta(hours=1),
        policy_version=elastic_policy_current().number,
        started_at=now - timedelta(hours=1), explanation="Measured idle.",
    )
