"""Numbers that do not mislead: demand against the capacity that can serve it, a request over the pool's standard
capacity warned at filing, the priority matrix split at each pool's own median."""

from __future__ import annotations

from datetime import timedelta

from committee import selectors
from committee.selectors import PoolLoad
from tests.committee.reviewing import close, score
from tests.factories import file_request
from tests.readable import assert_readable


def test_non_preemptible_demand_is_set_against_standard_capacity_alone():
    # 125% of standard, though standard + burst covers all of it: over-subscribed, and said so.
    load = PoolLoad(pool=None, requested_gpu_hours=4830, granted_gpu_hours=0,  # type: ignore[arg-type]
                    standard_gpu_hours=3864, burst_gpu_hours=1008, standard_only_gpu_hours=4830)
    assert (load.standard_demand_pct, load.demand_pct, load.oversubscribed) == (125, 100, True)
    # The same hours from preemptible-ok requests fit: the burst reserve serves them.
    load = PoolLoad(pool=None, requested_gpu_hours=4830, granted_gpu_hours=0,  # type: ignore[arg-type]
                    standard_gpu_hours=3864, burst_gpu_hours=1008, standard_only_gpu_hours=0)
    assert (load.standard_demand_pct, load.demand_pct, load.oversubscribed) == (0, 100, False)


def test_the_review_shows_non_preemptible_demand_against_standard(client, world):
    start = world.cycle.starts_at
    window = {"earliest_start": start, "latest_end": start + timedelta(hours=168)}
    file_request(world, pool=world.h100, gpu_count=24, min_gpu_count=16, duration_hours=168, **window)
    file_request(world, team=world.team_b, pool=world.h100, gpu_count=6, min_gpu_count=2, duration_hours=168,
                 preemptible_ok=True, **window)
    close(world)
    client.force_login(world.reviewer)
    body = client.get(f"/review/{world.cycle.week}/").content.decode()
    assert_readable(body)
    capacity = body[body.index('id="capacity"'):body.index('id="matrix-section"')]
    row = capacity[capacity.index("orion/h100"):]
    row = row[:row.index("</tr>")]
    # h100: 23 standard GPUs × 168 = 3,864; burst 6 × 168 = 1,008. Not preemptible: 24 × 168 = 4,032 (105%);
    # all: 30 × 168 = 5,040 of 4,872 (104%).
    assert "105% — over-subscribed" in row and "4,032 GPU-hours" in row and "104% — over-subscribed" in row


def test_a_request_over_the_pools_standard_capacity_is_warned_at_filing(client, world):
    over = file_request(world, pool=world.h100, gpu_count=24, min_gpu_count=16)  # h100 has 23 standard GPUs
    client.force_login(world.lead_a)
    html = client.get(f"/requests/{over.pk}/").content.decode()
    assert 'id="capacity-warning"' in html
    assert "asks for 24 GPUs that may not run preemptible, but orion/h100 has 23 GPUs of standard capacity" in html
    form = client.get("/requests/new/").content.decode()
    assert "orion/h100 23 GPUs" in form[form.index('id="standard-capacity"'):]
    fits = file_request(world, team=world.team_b, pool=world.h100, gpu_count=24, min_gpu_count=16,
                        preemptible_ok=True)
    client.force_login(world.member_b)
    assert 'id="capacity-warning"' not in client.get(f"/requests/{fits.pk}/").content.decode()


def test_the_priority_matrix_splits_each_pool_at_its_own_median(world):
    # a100 asks for thousands of GPU-hours, h100 for tens: one shared median would put every h100 request low.
    big = [file_request(world, title=f"A100 {n}", gpu_count=32, min_gpu_count=16, duration_hours=hours, team=team)
           for n, (team, hours) in enumerate(((world.team_a, 96), (world.team_b, 48)))]
    small = [file_request(world, title=f"H100 {n}", pool=world.h100, gpu_count=2, min_gpu_count=1,
                          duration_hours=hours, team=team)
             for n, (team, hours) in enumerate(((world.team_a, 24), (world.team_b, 8)))]
    close(world)
    for gpu_request in big + small:
        for member in (world.chair, world.finance):
            score(member, gpu_request, 8, 5, 5)
    review = selectors.cycle_review(cycle=world.cycle, viewer=world.chair)
    assert review.intensity_thresholds == {"atlas/a100": 2304, "orion/h100": 32}
    quadrants = {row.request.title: row.quadrant for row in review.rows}
    assert quadrants["A100 0"] == quadrants["H100 0"] == "cost_benefit"  # the larger of its pool
    assert quadrants["A100 1"] == quadrants["H100 1"] == "do_first"
