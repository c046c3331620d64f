"""The week's decision record and the grants that outlive its publish (docs/multi-week-runs.md, docs/release.md): the
later weeks its own runs committed, and its grants given back and extended, each listed as they happened."""

from __future__ import annotations

from datetime import timedelta

from allocations import selectors as allocation_selectors
from committee import services
from committee.services.emergency import emergency_request_decide
from reports.models import Page
from tests.committee.appealing import record_revisions
from tests.committee.contended import contended_week
from tests.committee.test_multiweek_runs import publish_week, run_fields
from tests.conftest import committed
from tests.factories import file_request


def section_rows(body: str, heading: str) -> list[str]:
    section = body.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| [[request:")]


def test_the_record_lists_the_later_weeks_its_own_runs_committed(world):
    run = file_request(world, **run_fields(world))  # 16 GPUs on atlas/a100, three weeks
    publish_week(world, (run, 6))

    page = Page.objects.select_related("latest_revision").get(source_key=f"cycle:{world.cycle.week}")
    revision = page.latest_revision
    assert revision is not None
    assert "## Later weeks committed by this week's grants" in revision.body
    # (The record's Markdown escapes its data's punctuation: 2026\-W51 reads 2026-W51.)
    link = f"[[request:{run.pk}\\|Pre-training]]"
    assert f"| {link} | Team A | atlas/a100 | 16 | 2026\\-W51 | week 2 of 3 | committed |" in revision.body
    assert "| 2026\\-W52 | week 3 of 3 | committed |" in revision.body
    assert [(r["week"], r["state"]) for r in revision.data["runs_committed"]] == [
        ("2026-W51", "committed"), ("2026-W52", "committed")]
    assert "grant_changes" not in revision.data  # nothing given back or extended yet


def test_the_record_lists_a_release_and_an_extension_each_in_a_new_revision(world, clock):
    week = contended_week(world)
    before = len(record_revisions(world))

    committed(services.window_release, actor=world.lead_a, gpu_request=week.placed, gpu_count=20,
              reason="The sweep converged early.")

    released = record_revisions(world)[-1]
    assert len(record_revisions(world)) == before + 1
    [row] = section_rows(released.body, "Grants given back and extended")
    assert "| Team A | atlas/a100 | gave back 20 GPUs from " in row
    assert row.endswith(", keeping 20 | v2 | The sweep converged early\\. |")

    plan = allocation_selectors.plan_for_week(week=world.cycle.week)
    assert plan is not None
    [window] = [w for w in allocation_selectors.plan_window_list(plan=plan) if w.request_ref == week.placed.pk]
    clock.move_to(window.start + timedelta(hours=30, minutes=10), tick=False)
    emergency = services.grant_extension_file(actor=world.member_a, gpu_request=week.placed, hours=10,
                                              justification="The eval needs ten more hours.")
    emergency_request_decide(actor=world.reviewer, emergency=emergency, approve=True)
    committed(emergency_request_decide, actor=world.chair, emergency=emergency, approve=True)

    extended = record_revisions(world)[-1]
    assert len(record_revisions(world)) == before + 2
    assert extended.summary == f"Updated — extension of R-{week.placed.pk} placed (plan version 3)"
    assert [c["kind"] for c in extended.data["grant_changes"]] == ["window.released", "grant.extended"]
    rows = section_rows(extended.body, "Grants given back and extended")
    assert len(rows) == 2 and all(row.startswith(f"| [[request:{week.placed.pk}\\|Ranker retrain]]") for row in rows)
    assert "| extended: 20 GPUs from " in rows[1] and rows[1].endswith("| v3 | — |")
