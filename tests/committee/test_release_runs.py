"""A run over several weeks gives GPUs back (docs/release.md, "A run over several weeks"): what its team gives back
to the end of a week is also given back from its later weeks, and in a later week it gives back that week's
window."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse

from allocations import selectors as allocation_selectors
from allocations.models import Commitment, CommitmentState
from committee import selectors, services
from committee.services.publishing import cycle_plan_place
from committee.services.requests import actor_name
from core.errors import StateConflict
from reports.models import Page
from tests.committee.test_multiweek_runs import next_week, publish_week, run_fields, used_well, windows_of
from tests.conftest import committed
from tests.factories import file_request


def _a100_committed(now):
    (a100,) = [calendar for calendar in selectors.forward_calendar(now=now, week_count=2)
               if calendar.pool.key == "atlas/a100"]
    return [week.committed_gpu_hours for week in a100.weeks]


def test_a_run_given_back_whole_in_its_first_week_frees_its_later_weeks_and_in_part_keeps_what_is_left(
    world, clock
):
    run = file_request(world, **run_fields(world))
    window = windows_of(publish_week(world, (run, 8)))[run.pk]
    clock.move_to(window.start + timedelta(hours=5, minutes=20), tick=False)
    hours = [int((c.end - c.start).total_seconds() // 3600) for c in Commitment.objects.order_by("week")]
    assert _a100_committed(window.start) == [16 * hours[0], 16 * hours[1]]

    services.window_release(actor=world.lead_a, gpu_request=run, gpu_count=6, reason="Smaller model.")
    assert [(c.gpu_count, c.state) for c in Commitment.objects.order_by("week")] == [
        (10, CommitmentState.COMMITTED), (10, CommitmentState.COMMITTED)]  # what it keeps to the week's end

    committed(services.window_release, actor=world.lead_a, gpu_request=run, gpu_count=10, reason="Converged early.")
    later = list(Commitment.objects.order_by("week"))
    assert [(c.state, c.settled_by_name) for c in later] == [(CommitmentState.RELEASED, actor_name(world.lead_a))] * 2
    assert _a100_committed(window.start) == [0, 0]  # the forward calendar has them free again
    record = Page.objects.select_related("latest_revision").get(source_key=f"cycle:{world.cycle.week}").latest_revision
    assert record is not None  # the week's record lists them released
    assert [r["state"] for r in record.data["runs_committed"]] == ["released", "released"]
    with pytest.raises(StateConflict, match="gave its GPUs back before the end of week"):  # nothing to extend
        services.run_extension_file(actor=world.lead_a, gpu_request=run, weeks=1, reason="More data.",
                                    now=window.start + timedelta(hours=5, minutes=30))
        # A correction of the week (its next plan version) does not commit them again.
    committed(cycle_plan_place, actor=world.chair, cycle=world.cycle, reason="Checked.",
              now=window.start + timedelta(hours=7))
    assert {c.state for c in Commitment.objects.all()} == {CommitmentState.RELEASED}


def test_in_its_second_week_a_run_gives_back_that_weeks_window_and_its_third_week_follows(world, client, clock):
    run = file_request(world, **run_fields(world, weekly_gpu_counts=[16, 8, 8]))
    first = publish_week(world, (run, 8))
    used_well(world, windows_of(first)[run.pk], "run-week-1")
    second = next_week(world)
    publish_week(world)
    held = windows_of(allocation_selectors.plan_for_week(week=second.week))[run.pk]
    clock.move_to(second.starts_at + timedelta(hours=30, minutes=5), tick=False)

    client.force_login(world.lead_a)
    page = client.get(reverse("committee:request-detail", args=[run.pk])).content.decode()
    assert 'id="release"' in page and "The window holds 8 GPUs until" in page
    # Held to its second week's commitment (8 GPUs), not to the first week's 16: placed as decided.
    assert selectors.request_outcome_get(gpu_request=run).status_label == "placed as decided"
    assert "giving all of them back ends the run here" in page
    hour = second.starts_at + timedelta(hours=48)
    response = client.post(reverse("committee:request-release", args=[run.pk]), {
        "gpu_count": "8", "effective_from": hour.strftime("%Y-%m-%dT%H:%M"), "reason": "Converged early."})
    assert response.status_code == 302

    plan = allocation_selectors.plan_for_week(week=second.week)
    assert plan is not None and plan.version == 2  # the second week's next version, not the first's
    mine = [(w.gpu_count, w.start, w.end) for w in allocation_selectors.plan_window_list(plan=plan)
            if w.request_ref == run.pk]
    assert mine == [(8, held.start, hour)]
    week_hours = int((second.ends_at - second.starts_at).total_seconds() // 3600)
    assert selectors.request_outcome_get(gpu_request=run).status_label == (
        f"part given back by the team ({8 * 48:,} of {8 * week_hours:,} GPU-hours kept)")
    third = Commitment.objects.get(request_ref=run.pk, week_number=3)
    assert (third.state, third.settled_by_name) == (CommitmentState.RELEASED, actor_name(world.lead_a))
    page = client.get(reverse("committee:request-detail", args=[run.pk])).content.decode()
    later = page[page.index('id="run"'):page.index("</table>", page.index('id="run"'))]
    assert "released" in later and f"by {actor_name(world.lead_a)}" in later and "threshold None" not in later
