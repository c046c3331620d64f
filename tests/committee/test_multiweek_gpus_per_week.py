"""A run over several weeks with its GPUs per week (docs/multi-week-runs.md): filed on the form and the API, each
later week committed and placed with its own count, the windows meeting at Monday 00:00."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from allocations.models import Commitment
from committee.models import GpuRequest
from tests.committee.filing import form_data, local
from tests.committee.review_api import API, as_user, request_body
from tests.committee.test_multiweek_runs import publish_week, run_fields, windows_of
from tests.factories import file_request


def test_each_later_week_is_committed_with_its_own_count_meeting_the_week_before(world):
    run = file_request(world, **run_fields(world, weekly_gpu_counts=[16, 8, 24]))
    first = publish_week(world, (run, 8))

    week_1 = windows_of(first)[run.pk]
    commitments = list(Commitment.objects.order_by("week"))
    assert [(c.week_number, c.gpu_count) for c in commitments] == [(2, 8), (3, 24)]
    # Two windows a boundary, meeting at Monday 00:00: no gap, no overlap, whatever the count.
    assert (week_1.gpu_count, week_1.end) == (16, commitments[0].start)
    assert commitments[0].end == commitments[1].start
    # Week 2 placed with its 8 GPUs from Monday 00:00: tests/policy/test_replay_runs.py (the live plans).


def test_a_run_placed_with_fewer_gpus_than_it_asked_keeps_at_most_those_in_later_weeks(world):
    world.a100.gpu_count = 12  # the reserves leave fewer standard GPUs than the run asks
    world.a100.save()
    run = file_request(world, **run_fields(world, gpu_count=12, min_gpu_count=8, weekly_gpu_counts=[12, 4, 12]))
    plan = publish_week(world, (run, 8))

    placed = windows_of(plan)[run.pk].gpu_count
    assert 8 <= placed < 12
    assert [c.gpu_count for c in Commitment.objects.order_by("week")] == [4, placed]


@pytest.mark.parametrize(("counts", "message"), [
    ([16, 8], "Give one count for each week of the run: it spans 3 weeks, this gives 2."),
    ([12, 8, 8], "The first week's count is this week's GPUs: 16, not 12."),
    ([16, 8, 65], "The pool a100 has only 64 GPUs: week 3 of the run asks 65."),
    ([16, 0, 8], "Each week's GPUs is a whole number from 1."),
])
def test_gpus_per_week_that_do_not_fit_the_run_are_refused_and_nothing_is_written(world, counts, message):
    with pytest.raises(ValidationError) as excinfo:
        file_request(world, **run_fields(world, weekly_gpu_counts=counts))
    assert excinfo.value.message_dict["weekly_gpu_counts"] == [message]
    assert not GpuRequest.objects.exists()


def test_the_api_files_and_shows_gpus_per_week_and_refuses_them_typed_wrong(api, world):
    as_user(api, world.member_a)
    run = {"run_weeks": 3, "latest_end": world.cycle.ends_at.isoformat()}
    bad = api.post(f"{API}/teams/team-a/requests/", request_body(world, **run, weekly_gpu_counts=[16, "8", 8]),
                   format="json")
    assert bad.status_code == 400 and bad.json()["weekly_gpu_counts"] == {"1": ["Incorrect type: expected an integer."]}
    short = api.post(f"{API}/teams/team-a/requests/", request_body(world, **run, weekly_gpu_counts=[16, 8]),
                     format="json")
    assert short.status_code == 400 and "spans 3 weeks, this gives 2" in short.json()["weekly_gpu_counts"][0]
    assert not GpuRequest.objects.exists()

    created = api.post(f"{API}/teams/team-a/requests/", request_body(world, **run, weekly_gpu_counts=[16, 8, 4]),
                       format="json")
    assert created.status_code == 201, created.json()
    detail = api.get(f"{API}/requests/{created.json()['id']}/").json()
    assert (detail["run_weeks"], detail["weekly_gpu_counts"]) == (3, [16, 8, 4])
    schema = api.get("/api/v1/schema/", HTTP_ACCEPT="application/json").json()
    field = schema["components"]["schemas"]["RequestInputRequest"]["properties"]["weekly_gpu_counts"]
    assert (field["type"], field["items"]["type"]) == ("array", "integer")


def test_the_form_takes_gpus_per_week_as_typed_and_the_request_page_shows_them(world, client):
    client.force_login(world.member_a)
    url = reverse("committee:request-create")
    end = local(world.cycle.ends_at)
    page = client.post(url, form_data(world, run_weeks="3", latest_end=end, weekly_gpu_counts="16, eight, 4"))
    page = page.content.decode()
    assert "Give each week&#x27;s GPUs as a whole number from 1, separated by commas" in page
    assert not GpuRequest.objects.exists()

    answer = client.post(url, form_data(world, run_weeks="3", latest_end=end, weekly_gpu_counts=" 16, 8 ,4 "))
    assert answer.status_code == 302, answer.content.decode()[:2000]
    gpu_request = GpuRequest.objects.get()
    assert gpu_request.weekly_gpu_counts == [16, 8, 4]
    page = client.get(reverse("committee:request-detail", args=[gpu_request.pk])).content.decode()
    assert "week 1: 16 · week 2: 8 · week 3: 4" in page
    edit = client.get(reverse("committee:request-edit", args=[gpu_request.pk])).content.decode()
    assert 'value="16, 8, 4"' in edit
