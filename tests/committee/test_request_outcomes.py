"""committee.selectors.request_outcome_map: decided, placed and the difference, from one place, in bulk."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from committee import selectors, services
from committee.models import CycleStatus, GpuRequest, ReviewCycle
from committee.selectors import PlacementStatus
from tests.committee.contended import contended_week
from tests.committee.reviewing import close, decide, score
from tests.factories import file_request


def test_a_contended_week_reads_placed_as_decided_shortened_not_placed_and_nothing_to_place(world):
    week = contended_week(world)
    outcomes = selectors.request_outcome_map(requests=[week.placed, week.shortened, week.unplaced, week.deferred])

    placed = outcomes[week.placed.pk]
    assert placed.status == PlacementStatus.AS_DECIDED and not placed.differs
    assert placed.decided is not None and (placed.decided.gpu_count, placed.decided.gpu_hours) == (40, 40 * 48)
    assert placed.placed is not None and (placed.placed.gpu_count, placed.placed.gpu_hours) == (40, 40 * 48)
    assert placed.summary == "Grant 40 → placed 40"
    assert placed.placed.text == "40 A100, Tue 00:00–Thu 00:00, priority"

    shortened = outcomes[week.shortened.pk]
    assert shortened.status == PlacementStatus.SHORTENED and shortened.differs and shortened.shortened
    assert shortened.placed is not None and (shortened.placed.gpu_count, shortened.placed.gpu_hours) == (6, 6 * 48)
    assert shortened.summary == "Grant 16 → placed 6 (shortened)"
    assert shortened.status_label == "shortened (6 of 16 GPUs)"
    assert shortened.decided_text == "Grant, 16 GPUs (768 GPU-hours)"
    assert shortened.placed_text == "6 A100, Tue 00:00–Thu 00:00, standard (288 GPU-hours)"
    assert shortened.reason.startswith("shortened to 6 GPUs: only 6 free for 48 h")

    unplaced = outcomes[week.unplaced.pk]
    assert unplaced.status == PlacementStatus.NOT_PLACED and unplaced.differs
    assert unplaced.placed is not None and unplaced.placed.windows == [] and unplaced.placed.gpu_hours == 0
    assert unplaced.summary == "Grant 24 → not placed"
    assert unplaced.reason.startswith("not placed: needs at least 24 GPUs, the orion/h100 pool has 23")

    deferred = outcomes[week.deferred.pk]
    assert deferred.status == PlacementStatus.NOT_GRANTED and deferred.placed is None
    assert deferred.summary == "Defer" and deferred.placed_text == ""


def test_before_publish_a_grant_is_not_yet_published(world):
    week = contended_week(world, publish=False)
    outcome = selectors.request_outcome_get(gpu_request=week.shortened)
    assert outcome.status == PlacementStatus.NOT_PUBLISHED and not outcome.differs
    assert outcome.summary == "Grant 16 → not yet published" and outcome.reason == ""


def test_a_grant_placed_in_the_burst_reserve_reads_demoted(world):
    start = world.cycle.starts_at + timedelta(hours=24)
    rigid = {"earliest_start": start, "latest_end": start + timedelta(hours=48), "duration_hours": 48}
    full = file_request(world, title="Fills the standard GPUs", gpu_count=46, min_gpu_count=46, **rigid)
    burst = file_request(world, team=world.team_b, title="Checkpointing sweep", gpu_count=8, min_gpu_count=8,
                         preemptible_ok=True, **rigid)
    close(world)
    for member in (world.chair, world.reviewer, world.finance):
        score(member, full, 9, 9, 9)
        score(member, burst, 5, 5, 5)
    decide(world, full)
    decide(world, burst)
    services.cycle_finalize(cycle=world.cycle, actor=world.chair)
    services.cycle_publish(actor=world.chair, cycle=world.cycle)

    outcome = selectors.request_outcome_get(gpu_request=GpuRequest.objects.get(pk=burst.pk))
    assert outcome.status == PlacementStatus.PREEMPTIBLE and outcome.preemptible and outcome.differs
    assert outcome.status_label == "placed preemptible (demoted to the burst reserve)"
    assert outcome.summary == "Grant 8 → placed 8 (preemptible)"
    assert outcome.placed is not None and outcome.placed.text == "8 A100, Tue 00:00–Thu 00:00, preemptible"


def test_a_team_sees_its_outcome_once_the_week_is_finalized_and_the_committee_as_it_is_entered(world):
    gpu_request = file_request(world)
    close(world)
    for member in (world.chair, world.reviewer):
        score(member, gpu_request, 7, 7, 7)
    decide(world, gpu_request)
    assert selectors.request_outcome_get(gpu_request=gpu_request, viewer=world.lead_a).decided is None
    assert selectors.request_outcome_get(gpu_request=gpu_request, viewer=world.reviewer).decided is not None
    assert selectors.request_outcome_get(gpu_request=gpu_request, viewer=world.member_b).decided is None
    services.cycle_finalize(cycle=world.cycle, actor=world.chair)
    finalized = GpuRequest.objects.get(pk=gpu_request.pk)
    seen = selectors.request_outcome_get(gpu_request=finalized, viewer=world.lead_a)
    assert seen.decided is not None and seen.status == PlacementStatus.NOT_PUBLISHED


@pytest.mark.parametrize("published", [False, True])
def test_the_number_of_queries_does_not_grow_with_the_requests(world, published):
    week = contended_week(world, publish=published)
    one = [week.shortened]
    many = list(GpuRequest.objects.all())
    with CaptureQueriesContext(connection) as for_one:
        selectors.request_outcome_map(requests=one, viewer=world.reviewer)
    with CaptureQueriesContext(connection) as for_many:
        outcomes = selectors.request_outcome_map(requests=many, viewer=world.reviewer)
        [o.placed_text for o in outcomes.values()]  # placement_text reads the windows' pools: already joined
    assert len(for_many) == len(for_one) <= 7


def test_a_published_week_whose_plan_holds_no_record_of_the_grant_says_so(world):
    week = contended_week(world, publish=False)
    ReviewCycle.objects.filter(pk=world.cycle.pk).update(status=CycleStatus.PUBLISHED)  # as the demo's history
    outcome = selectors.request_outcome_get(gpu_request=week.shortened)
    assert outcome.status == PlacementStatus.NOT_RECORDED and not outcome.differs
    assert outcome.summary == "Grant 16 → placement not recorded"


def test_a_request_placed_before_its_decision_shows_its_windows(world, client):
    from tests.allocations.plans import W, publish

    gpu_request = file_request(world)  # an out-of-cycle plan places it before any decision
    publish([W(pool=world.a100, team=world.team_a, gpus=8, start_h=24, end_h=48, ref=gpu_request.pk)],
            week=world.cycle.week)
    outcome = selectors.request_outcome_get(gpu_request=gpu_request, viewer=world.lead_a)
    assert outcome.decided is None and outcome.status == PlacementStatus.UNDECIDED
    assert outcome.placed_text == "8 A100, Tue 00:00–Wed 00:00, standard (192 GPU-hours)"
    client.force_login(world.lead_a)
    page = client.get(f"/requests/{gpu_request.pk}/").content.decode()
    assert "no decision yet" in page and "8 A100, Tue 00:00–Wed 00:00, standard (192 GPU-hours)" in page
